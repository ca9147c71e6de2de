"""Every Python code block of docs/generation.md runs as written: each in a fresh interpreter, in an empty directory
(the graphs it writes land there), with the repository importable; each asserts its own tokens against
``generate`` or prints what it fed back."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.test_readme_examples import ROOT, python_blocks

DOC = ROOT / "docs" / "generation.md"
BLOCKS = python_blocks(DOC.read_text())


def test_the_generation_guide_has_python_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"generation.md:{line}" for line, _ in BLOCKS])
def test_a_generation_guide_example_runs_as_written(line, code, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"docs/generation.md:{line} failed:\n{done.stderr[-3000:]}"
