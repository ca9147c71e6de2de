"""HTML coverage reports from conformance results.

``python -m reports build RESULTS... --out DIR`` reads results JSONL files (the conformance runner's and
op_tests') and writes ``DIR/report.html`` (one self-contained page, no network) and ``DIR/report.json``
(the same data, for scripts). See ``python -m reports --help``.
"""

from reports.build import build_report

__all__ = ["build_report"]
