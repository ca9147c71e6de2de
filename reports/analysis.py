"""Turning result rows into the report's data: header, summary, op x opset matrix, models, ATen coverage.

Everything the HTML shows is computed here into plain JSON-able dicts, which are also written as the
report's JSON sidecar, so a reader (or a script) can check any number on the page against its source.
"""

from __future__ import annotations

import collections
import datetime as dt
import statistics
from typing import Any

from conformance.schema import default_capture
from reports.registry_snapshot import SymbolicIndex
from reports.results import (
    BUCKETS,
    OPSETS,
    SUITES,
    bucket,
    kind_of,
    number,
    op_of,
    opset_of,
    outcome_key,
    qualified_op,
    text,
    worst,
)

ERROR_CHARS = 2000  # error texts are cut here in the page; tracebacks beyond that do not help a triage


def compact_rows(rows: list[dict], index: SymbolicIndex) -> list[dict[str, Any]]:
    """The fields the page shows per case, with the outcome and bucket resolved."""
    registered = index.registered()
    compact = []
    for row in rows:
        dtypes = row.get("dtypes") if isinstance(row.get("dtypes"), list) else []
        error = text(row, "error")
        compact.append({
            "id": row["case_id"],
            "kind": kind_of(row),
            "name": text(row, "name"),
            "op": op_of(row) if kind_of(row) == "op" else "",
            "family": text(row, "family"),
            "opset": opset_of(row),
            "mode": text(row, "mode") or "static",
            "provider": text(row, "provider") or "cpu",
            "capture": text(row, "capture") or default_capture(row),
            "dtypes": [str(d) for d in dtypes],
            "status": text(row, "status") or "unknown",
            "outcome": outcome_key(row, registered),
            "bucket": bucket(row),
            "stage": text(row, "stage"),
            "error": error if len(error) <= ERROR_CHARS else error[:ERROR_CHARS] + " …",
            "reason": text(row, "reason"),
            "comparison": text(row, "comparison"),
            "max_abs_error": number(row, "max_abs_error"),
            "max_rel_error": number(row, "max_rel_error"),
            "rtol": number(row, "rtol"),
            "atol": number(row, "atol"),
            "export_seconds": number(row, "export_seconds"),
            "ort_ms": number(row, "ort_ms"),
            "node_count": number(row, "node_count"),
            "file_size": number(row, "file_size"),
            "expected_min_opset": row.get("expected_min_opset") if isinstance(row.get("expected_min_opset"), int) else None,
            "rerun": text(row, "rerun"),
            "repro": text(row, "repro"),
            "localization": row.get("localization") if isinstance(row.get("localization"), dict) else None,
            "workarounds": [str(w) for w in row.get("workarounds") or []],
        })
    return compact


def workaround_use(cases: list[dict]) -> list[dict[str, Any]]:
    """Per runtime workaround: the cases whose exported model depends on it, and how many of them pass."""
    users: dict[str, list[dict]] = collections.defaultdict(list)
    for case in cases:
        for name in case["workarounds"]:
            users[name].append(case)
    return [{"name": name, "cases": len(found), "passed": sum(c["bucket"] == "passed" for c in found),
             "ops": sorted({c["op"] or c["name"] for c in found}), "examples": [c["id"] for c in found[:5]]}
            for name, found in sorted(users.items())]


# ---------------------------------------------------------------------------------------------------------------
# Header


def header(rows: list[dict], sources: list[str]) -> dict[str, Any]:
    """Revision, versions, providers, GPU and run duration, as recorded in the rows themselves."""
    versions: dict[str, set[str]] = collections.defaultdict(set)
    for row in rows:
        for package, version in (row.get("versions") or {}).items() if isinstance(row.get("versions"), dict) else ():
            if version:
                versions[package].add(str(version))
    revisions = sorted({text(row, "git_rev") for row in rows if text(row, "git_rev")})
    gpus = sorted({_gpu_of(row) for row in rows if _gpu_of(row)})
    started, finished, duration_kind = _run_span(rows)
    return {
        "git_rev": revisions,
        "versions": {package: sorted(values) for package, values in sorted(versions.items())},
        "providers": sorted({text(row, "provider") or "cpu" for row in rows}),
        "cuda_cases": sum(1 for row in rows if text(row, "provider") == "cuda"),
        "cuda_cases_run": sum(1 for row in rows if text(row, "provider") == "cuda"
                              and text(row, "status") not in ("skipped", "env_error")),
        "gpu": gpus,
        # Rows that reached ONNX Runtime record the level; older rows (before the field) ran at the default, basic.
        "ort_levels": sorted({text(row, "ort_level") for row in rows if text(row, "ort_level")}),
        "started_at": started,
        "finished_at": finished,
        "duration_s": _duration(rows, started, finished),
        "duration_kind": duration_kind,
        "row_count": len(rows),
        "sources": sources,
    }


def _gpu_of(row: dict) -> str:
    versions = row.get("versions") if isinstance(row.get("versions"), dict) else {}
    return text(row, "gpu") or str(versions.get("gpu") or "")


def _timestamp(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed.timestamp()
    return None


def _run_span(rows: list[dict]) -> tuple[str | None, str | None, str]:
    spans = []
    for row in rows:
        start = _timestamp(row.get("started_at"))
        if start is not None:
            spans.append((start, start + (number(row, "duration_s") or 0.0)))
    if not spans:
        return None, None, "sum of case durations"
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    iso = lambda t: dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")  # noqa: E731
    return iso(first), iso(last), "wall clock, first case start to last case end"


def _duration(rows: list[dict], started: str | None, finished: str | None) -> float | None:
    if started and finished:
        spans = [(_timestamp(r.get("started_at")), number(r, "duration_s") or 0.0) for r in rows]
        spans = [(s, s + d) for s, d in spans if s is not None]
        return max(e for _, e in spans) - min(s for s, _ in spans)
    durations = [number(row, "duration_s") for row in rows]
    known = [d for d in durations if d is not None]
    return sum(known) if known else None


# ---------------------------------------------------------------------------------------------------------------
# Summary tiles


def summary(cases: list[dict]) -> dict[str, Any]:
    """Bucket counts overall, per suite, per opset and per provider."""
    def count(selected):
        counter = collections.Counter(c["bucket"] for c in selected)
        return {b: counter.get(b, 0) for b in BUCKETS} | {"total": len(selected)}

    return {
        "overall": count(cases),
        "by_suite": {suite: count([c for c in cases if c["kind"] == suite]) for suite in SUITES},
        "by_opset": {str(opset): count([c for c in cases if c["opset"] == opset]) for opset in OPSETS},
        "by_provider": {p: count([c for c in cases if c["provider"] == p]) for p in sorted({c["provider"] for c in cases})},
        "by_suite_opset": {
            suite: {str(opset): count([c for c in cases if c["kind"] == suite and c["opset"] == opset]) for opset in OPSETS}
            for suite in SUITES
        },
    }


# ---------------------------------------------------------------------------------------------------------------
# Op x opset matrix


def op_matrix(cases: list[dict], index: SymbolicIndex) -> list[dict[str, Any]]:
    """One row per operator; per opset a cell with its worst outcome and the drill-down facts, and the lowest opset
    the registry declares for the op (None for OpInfo names that are no TorchScript op, or without a snapshot)."""
    by_op: dict[str, list[int]] = collections.defaultdict(list)
    for position, case in enumerate(cases):
        if case["kind"] == "op":
            by_op[case["op"] or case["name"]].append(position)
    matrix = []
    for op in sorted(by_op):
        positions = by_op[op]
        families = sorted({cases[p]["family"] for p in positions if cases[p]["family"]})
        cells = {}
        for opset in OPSETS:
            members = [p for p in positions if cases[p]["opset"] == opset]
            cells[str(opset)] = _cell(cases, members)
        matrix.append({
            "op": op,
            "family": ", ".join(families),
            "samples": len({cases[p]["name"] for p in positions}),
            "declared_lowest": index.lowest(op),
            "worst": worst(cell["outcome"] for cell in cells.values()),
            "failing": any(cell["failed"] for cell in cells.values()),
            "cells": cells,
        })
    return matrix


def _cell(cases: list[dict], members: list[int]) -> dict[str, Any]:
    rows = [cases[p] for p in members]
    grid: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for row in rows:
        grid[("/".join(row["dtypes"]) or "?", row["provider"])].append(row)
    failing = [r for r in rows if r["bucket"] == "failed"]
    first_failure = failing[0] if failing else None
    return {
        "outcome": worst(r["outcome"] for r in rows),
        "rows": members,
        "total": len(rows),
        "passed": sum(r["bucket"] == "passed" for r in rows),
        "failed": len(failing),
        "samples": len({r["name"] for r in rows}),
        "stage": first_failure["stage"] if first_failure else "",
        "error": first_failure["error"].splitlines()[0][:300] if first_failure and first_failure["error"] else "",
        "max_abs_error": _max(r["max_abs_error"] for r in rows),
        "max_rel_error": _max(r["max_rel_error"] for r in rows),
        "grid": [
            {"dtype": dtype, "provider": provider, "outcome": worst(r["outcome"] for r in group),
             "passed": sum(r["bucket"] == "passed" for r in group), "total": len(group)}
            for (dtype, provider), group in sorted(grid.items())
        ],
    }


def _max(values) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


# ---------------------------------------------------------------------------------------------------------------
# Models and examples


def models(cases: list[dict]) -> list[dict[str, Any]]:
    """One entry per model or example and capture (a model run with TorchScript and with torch.export is two
    entries): its rows (indices into cases) by opset, and its worst outcome."""
    by_name: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
    for position, case in enumerate(cases):
        if case["kind"] in ("model", "example"):
            by_name[(case["kind"], case["name"], case["capture"])].append(position)
    entries = []
    for (kind, name, capture), positions in sorted(by_name.items()):
        exports = [cases[p]["export_seconds"] for p in positions if cases[p]["export_seconds"] is not None]
        cells = {str(opset): {"outcome": worst(cases[p]["outcome"] for p in positions if cases[p]["opset"] == opset),
                              "rows": [p for p in positions if cases[p]["opset"] == opset]} for opset in OPSETS}
        entries.append({
            "kind": kind,
            "name": name,
            "capture": capture,
            "rows": positions,
            "cells": cells,
            "worst": worst(cases[p]["outcome"] for p in positions),
            "failing": any(cases[p]["bucket"] == "failed" for p in positions),
            "median_export_seconds": statistics.median(exports) if exports else None,
        })
    return entries


# ---------------------------------------------------------------------------------------------------------------
# ATen coverage


def aten_coverage(rows: list[dict], index: SymbolicIndex, cases: list[dict]) -> dict[str, Any]:
    """ATen ops seen in the zoo's traced graphs versus ops with symbolics, per opset."""
    seen: dict[str, set[str]] = collections.defaultdict(set)
    for row in rows:
        if kind_of(row) in ("model", "example"):
            for op in row.get("aten_ops") or []:
                # prim:: nodes (constants, lists, tuples) are TorchScript plumbing, not operators to cover.
                if not str(op).startswith("prim::"):
                    seen[qualified_op(str(op))].add(text(row, "name"))
    ops = []
    for op in sorted(seen):
        ops.append({
            "op": op,
            "models": sorted(seen[op]),
            "opsets": {str(opset): index.supported(op, opset) for opset in OPSETS},
        })
    per_opset = {
        str(opset): {
            "seen": len(ops),
            "covered": sum(entry["opsets"][str(opset)] is True for entry in ops),
            "unknown": sum(entry["opsets"][str(opset)] is None for entry in ops),
        }
        for opset in OPSETS
    }
    tested = {qualified_op(c["op"] or c["name"]) for c in cases if c["kind"] == "op"}
    registered = index.registered()
    return {
        "ops": ops,
        "per_opset": per_opset,
        # prim:: ops (lists, constants, tuples) are plumbing exercised by every test, not operators to test alone.
        "registered_untested": sorted(op for op in registered - tested if not op.startswith("prim::"))
        if registered is not None else None,
        "registry_source": index.source,
        "registry_inferred": index.inferred,
    }
