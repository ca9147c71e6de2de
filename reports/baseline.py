"""Comparing a run with a baseline run, and marking a run as the new baseline."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict
from typing import Any

from reports.results import bucket, case_key, text

# Addresses, temp paths and timings differ between runs of the same failure; they are not a changed error.
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|/tmp/[^\s'\"]+|\d+\.\d+ ?(?:s|ms)\b")


def normalized_error(error: str) -> str:
    first_line = error.strip().splitlines()[0] if error.strip() else ""
    return _VOLATILE.sub("…", first_line)


def _engine_rows(rows: list[dict]) -> dict[str, dict]:
    return {case_key(row): row for row in rows if row.get("exporter", "engine") != "peer"}


def compare(current: list[dict], baseline: list[dict], source: str, partial: bool = False) -> dict[str, Any]:
    """New failures, new passes, changed errors, and cases that appeared or disappeared since the baseline
    (``partial``: the run covers part of the baseline's tier, so only the baseline cases it ran are compared)."""
    after = _engine_rows(current)
    before = {key: row for key, row in _engine_rows(baseline).items() if not partial or key in after}
    new_failures, new_passes, changed, added_failing = [], [], [], []
    for key, row in after.items():
        old = before.get(key)
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
    missing = sorted(key for key in before if key not in after)
    return {
        "source": source,
        "baseline_cases": len(before),
        "new_failures": new_failures,
        "new_passes": new_passes,
        "changed_errors": changed,
        "new_cases_failing": added_failing,
        "new_cases": sum(1 for key in after if key not in before),
        "missing_cases": missing,
    }


def gate_verdict(current: list[dict], baseline: list[dict] | None, partial: bool = False) -> dict[str, Any]:
    """The release gate's verdict on the same rows (``conformance.gate``), so the page and the gate agree; without a
    baseline (None) every case is new and any failing case fails, as ``python -m conformance gate --no-baseline``."""
    from conformance import gate

    result = gate.compare(_engine_rows(current), _engine_rows(baseline or []),
                          gate.load_allowlist(gate.DEFAULT_ALLOWLIST), partial=partial)
    regressions = [f for f in result.findings if f.is_regression]
    return {
        "passed": result.passed,
        "has_baseline": baseline is not None,
        "notes": result.notes,
        "regressions": [asdict(f) for f in regressions if not f.allowed_because],
        "allowed": [asdict(f) for f in regressions if f.allowed_because],
        "improvements": len(result.of_kind("improvement")),
        "newly_covered": len(result.of_kind("newly_covered")),
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
