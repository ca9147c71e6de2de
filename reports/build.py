"""Assembling the report: rows in, ``report.html`` and ``report.json`` out."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from conformance.results import engine_cases, expand_paths, read_files
from reports import analysis, baseline, html
from reports.bench import load_bench
from reports.registry_snapshot import (
    SymbolicIndex,
    infer_snapshot,
    load_snapshot,
    take_snapshot,
)
from reports.results import OPSETS, OUTCOMES

HTML_NAME = "report.html"
JSON_NAME = "report.json"


def build_report(results: list[str], out_dir: str, *, baseline_path: str | None = None, registry: str | None = None,
                 mark_baseline: str | None = None, bench_path: str | None = None, partial: bool = False) -> str:
    """Write the report for ``results`` into ``out_dir`` and return the HTML file's path.

    ``registry`` is a snapshot file from ``python -m reports registry``, or ``"live"`` to snapshot the
    importable exporter now; without it, registry facts are inferred from the results. ``mark_baseline``
    copies the rows read to that path, for later runs to be compared with. ``bench_path`` (a bench.json from
    ``python -m benchmarks``) adds the benchmark table. ``partial``: the results cover part of the baseline's tier.
    """
    files = [f for f in expand_paths(results) if not _same_file(f, baseline_path) and not _same_file(f, mark_baseline)]
    rows, peer_rows, superseded = select_engine_rows(read_files(files))
    data = report_data(rows, files, out_dir, baseline_path=baseline_path, registry=registry, partial=partial)
    data["header"]["peer_rows_excluded"] = len(peer_rows)
    data["header"]["superseded_rows"] = superseded
    data["bench"] = load_bench(bench_path) if bench_path else None
    os.makedirs(out_dir, exist_ok=True)
    _write_atomic(os.path.join(out_dir, JSON_NAME), json.dumps(data, separators=(",", ":")))
    html_path = os.path.join(out_dir, HTML_NAME)
    _write_atomic(html_path, html.render(data))
    if mark_baseline:
        baseline.mark_baseline(rows, mark_baseline)
    return html_path


def select_engine_rows(rows: list[dict]) -> tuple[list[dict], list[dict], int]:
    """(this exporter's rows, one per case, the latest winning; torch.onnx peer rows; how many rows were superseded).

    Peer rows validate the model zoo with torch.onnx and say nothing about this exporter, so they never count.
    A case re-run appends a newer row for the same case id; the newest is the case's result.
    """
    peer = [row for row in rows if row.get("exporter") == "peer"]
    latest = engine_cases(rows)
    return list(latest.values()), peer, len(rows) - len(peer) - len(latest)


def report_data(rows: list[dict], files: list[str], out_dir: str, *, baseline_path: str | None = None,
                registry: str | None = None, partial: bool = False) -> dict[str, Any]:
    """Everything the page shows, as JSON-able data (also written as the sidecar). ``gate`` is the release gate's
    verdict on these rows (against the baseline when there is one), which the page's header badge shows."""
    snapshot = take_snapshot() if registry == "live" else load_snapshot(registry) if registry else infer_snapshot(rows)
    index = SymbolicIndex(snapshot)
    cases = analysis.compact_rows(rows, index)
    for case in cases:
        case["repro_href"] = _href(case["repro"], out_dir)
        if case["localization"]:
            case["localization"]["repro_href"] = _href(str(case["localization"].get("repro") or ""), out_dir)
    models = analysis.models(cases)
    diff = _baseline_diff(rows, baseline_path, partial) if baseline_path else None
    return {
        "schema": 1,
        "opsets": list(OPSETS),
        "outcomes": [{"key": o.key, "label": o.label, "colour": o.colour} for o in OUTCOMES],
        "header": analysis.header(rows, [os.path.relpath(f) for f in files]),
        "summary": analysis.summary(cases),
        "op_matrix": analysis.op_matrix(cases, index),
        "models": models,
        "coverage": analysis.aten_coverage(rows, index, cases),
        "workarounds": analysis.workaround_use(cases),
        "baseline": diff,
        "gate": diff["gate"] if diff else baseline.gate_verdict(rows, None),
        "registry": snapshot,
        "cases": cases,
    }


def _baseline_diff(rows: list[dict], baseline_path: str, partial: bool) -> dict[str, Any]:
    before = read_files([baseline_path])
    return {**baseline.compare(rows, before, baseline_path, partial),
            "gate": baseline.gate_verdict(rows, before, partial)}


def _same_file(path: str, other: str | None) -> bool:
    return bool(other) and os.path.exists(other) and os.path.samefile(path, other)


def _href(repro: str, out_dir: str) -> str:
    """A link to a repro bundle that works from the report's folder (recorded paths are relative to the run's cwd)."""
    if not repro:
        return ""
    if "://" in repro:
        return repro
    return os.path.relpath(os.path.abspath(repro), os.path.abspath(out_dir)).replace(os.sep, "/")


def _write_atomic(path: str, content: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(content)
    os.chmod(temporary, 0o644)  # mkstemp makes it private; a report is meant to be read by others (CI artifacts)
    os.replace(temporary, path)
