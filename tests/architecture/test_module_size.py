"""Modules a reader can hold: no module of the engine or of the harness that runs and reports it is over 600 lines. A
module that grows past it splits along what it does (one module per stage, per op family)."""

from __future__ import annotations

import pathlib

import pytest

from tests.architecture.import_graph import project_modules

MAX_LINES = 600
PACKAGES = ("exporter", "conformance", "op_tests", "reports")


def oversized(paths: dict[str, pathlib.Path], limit: int = MAX_LINES) -> dict[str, int]:
    """Module name -> line count, for each module of ``paths`` over ``limit`` lines."""
    counts = {name: len(path.read_text().splitlines()) for name, path in paths.items()}
    return {name: count for name, count in sorted(counts.items()) if count > limit}


def test_no_module_is_over_600_lines():
    modules = {name: path for name, path in project_modules().items() if name.split(".")[0] in PACKAGES}
    assert set(PACKAGES) <= modules.keys()  # the scan sees every package it guards
    assert oversized(modules) == {}, f"modules over {MAX_LINES} lines: split them along what they do"


@pytest.mark.parametrize("lines, found", [(600, {}), (601, {"big": 601})])
def test_the_scan_names_a_module_over_the_limit(tmp_path, lines, found):
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * lines)
    assert oversized({"big": path}) == found
