"""Op-test session plumbing: CUDA detection and the per-op, per-opset results summary."""

from __future__ import annotations

import collections
import glob
import json
import os

import pytest

from conformance.results import read_rows


@pytest.fixture(scope="session")
def cuda_available() -> bool:
    """Whether CUDA op tests run here: False without a GPU (they skip); with a GPU that ONNX Runtime cannot use
    (no CUDA provider, or one that falls back to CPU), every CUDA test errors instead of passing on the CPU."""
    from conformance.session import cuda_environment

    status, reason = cuda_environment()
    if status == "env_error":
        pytest.fail(reason)
    return status != "skipped"


def pytest_configure(config):
    if not os.environ.get("OP_TESTS_RESULTS") and not hasattr(config, "workerinput"):
        os.environ["OP_TESTS_RESULTS"] = os.path.join(str(config.rootpath), "results", "op_tests.jsonl")
    path = os.environ["OP_TESTS_RESULTS"] if "OP_TESTS_RESULTS" in os.environ else None
    if path and not hasattr(config, "workerinput"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for part in glob.glob(f"{path}.*.part"):
            os.remove(part)


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):
        return
    path = os.environ.get("OP_TESTS_RESULTS")
    parts = sorted(glob.glob(f"{path}.*.part")) if path else []
    if not parts:
        return
    rows = []
    for part in parts:
        rows.extend(read_rows(part))
        os.remove(part)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    counts = collections.defaultdict(lambda: collections.Counter())
    for row in rows:
        counts[(row["op"], row["opset"])][row["status"]] += 1
    summary_path = os.path.splitext(path)[0] + "_summary.json"
    with open(summary_path, "w", encoding="utf-8") as handle:
        json.dump({f"{op}@{opset}": dict(c) for (op, opset), c in sorted(counts.items())}, handle, indent=1)
    session.config._op_summary = (path, summary_path, len(rows))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    info = getattr(config, "_op_summary", None)
    if info:
        terminalreporter.write_line(f"op results: {info[2]} cases -> {info[0]} (per-op, per-opset counts: {info[1]})")
