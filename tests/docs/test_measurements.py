"""The measurements are dated campaign files under ``docs/measurements/``, each entry carrying the date and the commit
that recorded it, and ``current.md`` is the table ``python -m reports current-numbers`` generates from
``current.toml`` and those files: every number it shows names a campaign file that holds its date and commit."""

from __future__ import annotations

import re

import pytest

from reports.current_numbers import CAMPAIGN, FOLDER, campaigns, numbers, render

# An entry's stamp: "*2026-11-28, commit 017c0b5.*" after a paragraph or table, or "| 2026-11-28, commit 017c0b5 |"
# as a table's last column.
STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}), commit ([0-9a-f]{7,40})")


def test_current_md_is_what_the_data_and_the_campaigns_say():
    assert (FOLDER / "current.md").read_text(encoding="utf-8") == render(), \
        "docs/measurements/current.md is out of date: run python -m reports current-numbers"


def test_every_markdown_file_of_the_folder_is_a_dated_campaign_or_the_current_numbers():
    names = {path.name for path in FOLDER.glob("*.md")} - {"current.md"}
    assert names, "no campaign files"
    assert not [name for name in names if not CAMPAIGN.fullmatch(name)], "campaign files are YYYY-MM-DD-<topic>.md"


@pytest.mark.parametrize("path", campaigns(), ids=lambda path: path.name)
def test_a_campaign_stamps_its_entries_and_is_named_by_its_latest_date(path):
    text = path.read_text(encoding="utf-8")
    dates = [date for date, _ in STAMP.findall(text)]
    assert dates, f"{path.name}: no entry carries its date and commit"
    assert path.name.startswith(max(dates)), f"{path.name}: its latest entry is from {max(dates)}"


@pytest.mark.parametrize("number", numbers(), ids=lambda number: number["what"][:40])
def test_a_current_number_names_a_campaign_that_records_its_date_and_commit(number):
    source = FOLDER / number["source"]
    assert source.exists(), f"no campaign file {number['source']}"
    stamps = set(STAMP.findall(source.read_text(encoding="utf-8")))
    assert (number["date"], number["commit"]) in stamps, f"{number['source']} records no entry of {number}"


def test_a_stale_current_md_is_found(tmp_path):
    (tmp_path / "current.toml").write_text('[[number]]\nwhat = "w"\nvalue = "1"\ndate = "2026-01-02"\n'
                                           'commit = "abcdef0"\nsource = "2026-01-02-x.md"\n')
    (tmp_path / "2026-01-02-x.md").write_text("# X\n\n1\n\n*2026-01-02, commit abcdef0.*\n")
    text = render(tmp_path)
    assert "| w | 1 | 2026-01-02 | `abcdef0` | [2026-01-02-x](2026-01-02-x.md) |" in text
    assert "- [2026-01-02: X](2026-01-02-x.md)" in text
    (tmp_path / "2026-01-03-y.md").write_text("# Y\n")
    assert render(tmp_path) != text, "a new campaign file changes current.md"
