"""The pytest tier's results file: each op row, as ``conformance.op_runner.run_case`` made it, appended to
``$OP_TESTS_RESULTS`` (one part file per xdist worker; ``op_tests/conftest.py`` joins the parts at the session's end),
where the report and ``python -m op_tests.opinfo report`` read it."""

from __future__ import annotations

import functools
import os

from conformance.results import ResultsWriter


def results_path() -> str | None:
    return os.environ.get("OP_TESTS_RESULTS")


def record(row: dict) -> None:
    """Append an op case's row (the conformance results schema) to $OP_TESTS_RESULTS's per-worker part file."""
    path = results_path()
    if path:
        write_row(path, row)


def write_row(path: str, row: dict) -> None:
    """Append ``row`` to this pytest worker's part of ``path`` (the session's end joins the parts)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _writer(f"{path}.{worker}.part").append(row)


@functools.lru_cache(maxsize=4)
def _writer(path: str) -> ResultsWriter:
    return ResultsWriter(path)
