"""Every Python code block of the README and of ``docs/`` runs as written: each in a fresh interpreter, in an empty
directory (the files it writes land there), with the repository importable.

A block that cannot run on its own says so in an HTML comment on the line before its fence, and is still checked:
``<!-- example: excerpt of PATH -->`` quotes the project's own code, so its lines must stand, in order and together,
in a Python file under PATH (a quotation that drifted from the code fails; a line ``...  # what is left out`` skips
lines there); ``<!-- example: compile only: WHY -->``
is compiled, and the test's id carries the reason. Each block that runs must run in seconds (CI runs them all)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md"))]
# A fence, at the margin or indented under a list item: its block ends at a fence of the same indent.
_FENCE = re.compile(r"^(?P<indent>[ ]*)```python\n", re.MULTILINE)


def python_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line of the fence, code dedented, marker or "") of each fenced Python block, indented ones included."""
    blocks = []
    for fence in _FENCE.finditer(text):
        indent = fence.group("indent")
        end = text.index(f"\n{indent}```", fence.end() - 1)
        code = textwrap.dedent(text[fence.end():end + 1])
        before = text[:fence.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = re.fullmatch(r"<!-- example: (.+?) -->", before)
        blocks.append((text.count("\n", 0, fence.start()) + 1, code, marker.group(1) if marker else ""))
    return blocks


BLOCKS = [(document, line, code, mark) for document in DOCUMENTS
          for line, code, mark in python_blocks((ROOT / document).read_text(encoding="utf-8"))]
RUN = [(f"{d}:{line}", code) for d, line, code, mark in BLOCKS if not mark]
EXCERPTS = [(f"{d}:{line}", code, mark.removeprefix("excerpt of ").strip()) for d, line, code, mark in BLOCKS
            if mark.startswith("excerpt of ")]
COMPILED = [(f"{d}:{line} ({mark.removeprefix('compile only: ')})", code) for d, line, code, mark in BLOCKS
            if mark.startswith("compile only: ")]


def test_every_block_is_run_quoted_or_compiled_with_a_reason():
    assert len(RUN) >= 4 and any(where.startswith("README.md:") for where, _ in RUN)
    unknown = [f"{d}:{line}: {mark}" for d, line, _, mark in BLOCKS
               if mark and not mark.startswith(("excerpt of ", "compile only: "))]
    assert not unknown, f"unknown example markers: {unknown}"
    assert len(RUN) + len(EXCERPTS) + len(COMPILED) == len(BLOCKS)


def test_blocks_are_found_under_list_items_and_after_markers():
    text = "1. Step:\n\n   <!-- example: compile only: a part -->\n   ```python\n   x = 1\n   ```\n\n```python\ny = 2\n```\n"
    assert python_blocks(text) == [(4, "x = 1\n", "compile only: a part"), (8, "y = 2\n", "")]


@pytest.mark.parametrize(("where", "code"), RUN, ids=[where for where, _ in RUN])
def test_a_documented_example_runs_as_written(where, code, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _pieces(code: str) -> list[list[str]]:
    """The code's lines in the runs that a ``...`` line (an elision) separates."""
    pieces: list[list[str]] = [[]]
    for line in _lines(code):
        if line.startswith("..."):
            pieces.append([])
        else:
            pieces[-1].append(line)
    return [piece for piece in pieces if piece]


def _holds(have: list[str], pieces: list[list[str]]) -> bool:
    """Whether ``have`` holds each piece as consecutive lines, the pieces in order."""
    start = 0
    for piece in pieces:
        at = next((i for i in range(start, len(have) - len(piece) + 1) if have[i:i + len(piece)] == piece), None)
        if at is None:
            return False
        start = at + len(piece)
    return True


def quoted_in(code: str, folder: pathlib.Path) -> list[pathlib.Path]:
    """The Python files under ``folder`` holding the code's lines together and in order (blank lines and indentation
    aside; an elision line skips any number of lines)."""
    pieces = _pieces(code)
    return [path for path in sorted(folder.rglob("*.py")) if _holds(_lines(path.read_text(encoding="utf-8")), pieces)]


@pytest.mark.parametrize(("where", "code", "folder"), EXCERPTS, ids=[where for where, _, _ in EXCERPTS])
def test_a_quoted_excerpt_is_the_projects_code(where, code, folder):
    compile(code, where, "exec")
    assert quoted_in(code, ROOT / folder), f"{where}: the quoted code is no longer in any file under {folder}"


def test_an_excerpt_that_drifted_is_found(tmp_path):
    (tmp_path / "m.py").write_text("def f(x):\n\n    return x + 1\n")
    assert quoted_in("def f(x):\n    return x + 1\n", tmp_path) == [tmp_path / "m.py"]
    assert quoted_in("def f(x):\n    return x + 2\n", tmp_path) == []
    (tmp_path / "n.py").write_text("def g(x):\n    y = x\n    z = y\n    return z\n")
    assert quoted_in("def g(x):\n    ...  # left out\n    return z\n", tmp_path) == [tmp_path / "n.py"]
    assert quoted_in("def g(x):\n    ...\n    return y\n", tmp_path) == []


@pytest.mark.parametrize(("where", "code"), COMPILED, ids=[where for where, _ in COMPILED])
def test_a_fragment_compiles(where, code):
    compile(code, where, "exec")
