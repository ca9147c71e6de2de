"""Comparing a run with a baseline run, and marking a run as the new baseline."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict
from typing import Any

from conformance.gate import capture_of
from conformance.results import engine_cases
from reports.results import bucket, text

# Addresses, temp paths and timings differ between runs of the same failure; they are not a changed error.
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|/tmp/[^\s'\"]+|\d+\.\d+ ?(?:s|ms)\b")


def normalized_error(error: str) -> str:
    first_line = error.strip().splitlines()[0] if error.strip() else ""
    return _VOLATILE.sub("…", first_line)


def compare(current: list[dict], baseline: list[dict], source: str, partial: bool = False) -> dict[str, Any]:
    """New failures, new passes, changed errors, and cases that appeared or disappeared since the baseline.

    ``partial``: the run covers part of the baseline's tier, so only the baseline cases it ran are compared; the
    others are ``not_in_run`` (outside the run's scope), not ``missing_cases`` (dropped from a whole run).
    """
    after = engine_cases(current)
    whole = engine_cases(baseline)
    before = {key: row for key, row in whole.items() if not partial or key in after}
    new_failures, new_passes, changed, added_failing = [], [], [], []
    for key, row in after.items():
        old = before.get(key)
        if old is not None and capture_of(old) != capture_of(row):  # like with like, as the gate (conformance.gate)
            old = None
        now = bucket(row)
        if old is None:
            if now == "failed":
                added_failing.append(_entry(key, None, row))
            continue
        then = bucket(old)
        if now == "failed" and then != "failed":
            new_failures.append(_entry(key, old, row))
        elif now == "passed" and then != "passed":
            new_passes.append(_entry(key, old, row))
        elif now == "failed" and then == "failed" and (
            text(row, "status") != text(old, "status")
            or normalized_error(text(row, "error")) != normalized_error(text(old, "error"))
        ):
            changed.append(_entry(key, old, row))
    absent = sorted(key for key in whole if key not in after)
    return {
        "source": source,
        "partial": partial,
        "baseline_cases": len(whole),
        "compared": sum(1 for key in whole if key in after),
        "new_failures": new_failures,
        "new_passes": new_passes,
        "changed_errors": changed,
        "new_cases_failing": added_failing,
        "new_cases": sum(1 for key in after if key not in before),
        "missing_cases": [] if partial else absent,
        "not_in_run": absent if partial else [],
    }


def gate_verdict(current: list[dict], baseline: list[dict] | None, partial: bool = False) -> dict[str, Any]:
    """The release gate's verdict on the same rows (``conformance.gate``), so the page and the gate agree; without a
    baseline (None) every case is new and any failing case fails, as ``python -m conformance gate --no-baseline``."""
    from conformance import gate

    result = gate.judge(current, baseline, gate.load_allowlist(gate.DEFAULT_ALLOWLIST), partial=partial)
    regressions = [f for f in result.findings if f.is_regression]
    return {
        "passed": result.passed,
        "no_evidence": result.no_evidence,
        "has_baseline": baseline is not None,
        "partial": partial,
        "notes": result.notes,
        "regressions": [asdict(f) for f in regressions if not f.allowed_because],
        "allowed": [asdict(f) for f in regressions if f.allowed_because],
        "improvements": len(result.of_kind("improvement")),
        "newly_covered": len(result.of_kind("newly_covered")),
        "new_cases_skipped": len(result.of_kind("new_case_skipped")),
    }


def _entry(key: str, old: dict | None, new: dict) -> dict[str, Any]:
    return {
        "id": key,
        "before": text(old, "status") if old else "",
        "before_error": normalized_error(text(old, "error")) if old else "",
        "after": text(new, "status"),
        "after_error": normalized_error(text(new, "error")),
    }


def mark_baseline(rows: list[dict], path: str) -> None:
    """Write ``rows`` (the results as read) to ``path`` atomically, as the baseline of later comparisons."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, suffix=".jsonl.tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({k: v for k, v in row.items() if not k.startswith("_")}) + "\n")
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
