"""Every link of the project's markdown documents leads somewhere: a relative link names a file or folder that
exists, and a ``#section`` link (in the same document or another) names a heading that document has, spelt as
GitHub spells heading anchors. The README and the pages of ``docs/`` link each other section by section, so a
renamed heading breaks a link here rather than for a reader. The README stays short and its first screen leads to
the op table, adding an operator and release gating; the product's documents say what the product does and what
was measured (with date and commit), never how the work on it was organized."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Documents of the repository, not of its tools' folders (virtual environments, nox's, results of runs).
DOCUMENTS = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.md")
                   if not any(part.startswith(".") or part == "results" for part in path.relative_to(ROOT).parts))
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"#{1,6} (.+)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (word characters, spaces and hyphens
    stay), each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(text: str) -> set[str]:
    """Every heading anchor of a markdown text; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(text):
        match = _HEADING.fullmatch(line)
        if match:
            anchor = github_anchor(match.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(text: str) -> list[str]:
    """The targets of the markdown links outside code (fenced blocks and `code spans`)."""
    return [target for line in _prose_lines(text) for target in _LINK.findall(_CODE_SPAN.sub("", line))]


def broken_links(document: str, root: pathlib.Path = ROOT) -> list[str]:
    path = root / document
    broken = []
    for target in links(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address: nothing here to check it against
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no file {file_part}")
        elif anchor and anchor not in anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{target}: {linked.relative_to(root)} has no heading with that anchor")
    return broken


def test_the_anchor_rule_is_githubs():
    assert github_anchor("Two captures: TorchScript and torch.export (`dynamo=True`)") == \
        "two-captures-torchscript-and-torchexport-dynamotrue"
    assert github_anchor("The torch.export capture (`--capture export`)") == "the-torchexport-capture---capture-export"
    assert anchors("# A\n## B\n```\n## not a heading\n```\n## B\n") == {"a", "b", "b-1"}
    assert links("[x](#a) `[y](#not-a-link)` [z](FILE.md#b)\n```\n[w](#in-code)\n```") == ["#a", "FILE.md#b"]


def test_the_readme_and_the_docs_are_among_the_documents():
    assert {"README.md", "docs/user-guide.md", "docs/operators.md", "docs/measurements/current.md"} <= set(DOCUMENTS)


def test_the_readme_is_short_and_its_first_screen_finds_the_op_table_adding_an_operator_and_release_gating():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: the rest belongs in docs/"
    first_screen = links("\n".join(lines[:40]))
    for target in ("docs/operators.md#supported-operators", "docs/adding-an-operator.md", "docs/release-gating.md"):
        assert target in first_screen, f"the README's first 40 lines do not link {target}"


# Words that tell how the work was organized rather than what the product does: a measurement carries its date and
# commit, nothing more.
_WORK_ACCOUNT = re.compile(r"\bsessions? \d+|\bwork period|\bhelper (?:session|branch)|\bbranch `[\w-]+`", re.I)


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if d == "README.md" or d.startswith("docs/")])
def test_a_product_document_gives_no_account_of_how_the_work_was_done(document):
    found = _WORK_ACCOUNT.findall((ROOT / document).read_text(encoding="utf-8"))
    assert not found, f"{document}: {found}"


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_link_of_a_document_leads_somewhere(document):
    assert not broken_links(document), f"{document}: broken links: {broken_links(document)}"


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "A.md").write_text("## Here\n[ok](#here) [gone](#there) [file](B.md) [other](A.md#here)\n")
    assert broken_links("A.md", tmp_path) == ["#there: A.md has no heading with that anchor", "B.md: no file B.md"]
