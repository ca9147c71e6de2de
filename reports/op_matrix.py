"""The op x opset matrix of both op sources (hand-written cases and OpInfo samples) as one self-contained page.

The full OpInfo matrix has hundreds of thousands of rows, too many to embed row by row, so this page aggregates:
per opset and status, counts for each source; per op and opset, the worst outcome with counts per source; the
expectations that excuse non-passes, with their reasons; and every mismatch and runtime divergence, with the
reference evaluator's ruling and the one-node repro.
"""

from __future__ import annotations

import collections
import html
import os

from reports.results import OPSETS, OUTCOME_BY_KEY, outcome_key, worst

STATUSES = ("pass", "runtime_divergence", "mismatch", "unsupported", "no_symbolic", "not_capturable", "inconclusive",
            "export_error", "checker_error", "ort_error", "timeout", "crash")


def source_of(row: dict) -> str:
    return row.get("source") or "cases"


def op_key(row: dict) -> str:
    return f"{row['op']}.{row['variant']}" if row.get("variant") else (row.get("op") or row.get("name") or "?")


def aggregate(rows: list[dict]) -> dict:
    """Counts per (opset, source, status), per (op, opset) cell, expectations and arbitrated rows."""
    per_opset: dict = collections.defaultdict(collections.Counter)
    cells: dict = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    outcomes: dict = collections.defaultdict(set)
    expectations: collections.Counter = collections.Counter()
    arbitrated = []
    for row in rows:
        opset, source, status = row.get("opset"), source_of(row), row.get("status")
        per_opset[(opset, source)][status] += 1
        cells[op_key(row)][opset][f"{source}:{status}"] += 1
        outcomes[(op_key(row), opset)].add(outcome_key(row))
        if row.get("expectation"):
            expectations[(op_key(row), status, row["expectation"])] += 1
        if status in ("mismatch", "runtime_divergence"):
            arbitrated.append(row)
    return {"per_opset": per_opset, "cells": cells, "outcomes": outcomes, "expectations": expectations,
            "arbitrated": arbitrated}


def render(rows: list[dict], title: str = "Op conformance: hand-written cases and OpInfo samples") -> str:
    data = aggregate(rows)
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>", _STYLE,
             f"<h1>{html.escape(title)}</h1>", _legend(), _opset_table(data), _matrix(data), _arbitrated(data),
             _expectations(data)]
    return "\n".join(parts)


def write(rows: list[dict], out_dir: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "op_matrix.html")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render(rows))
    return path


def _legend() -> str:
    items = "".join(f"<span class='chip' style='background:{o.colour}'>{html.escape(o.glyph)}</span>"
                    f"{html.escape(o.label)} " for o in OUTCOME_BY_KEY.values())
    return f"<p class='legend'>{items}</p>"


def _opset_table(data: dict) -> str:
    sources = sorted({source for _, source in data["per_opset"]})
    head = "".join(f"<th>{s}</th>" for s in STATUSES)
    body = []
    for opset in OPSETS:
        for source in sources:
            counts = data["per_opset"].get((opset, source), collections.Counter())
            total = sum(counts.values())
            rate = f"{counts['pass'] / total:.1%}" if total else "–"
            body.append(f"<tr><td>{opset}</td><td>{source}</td>" + "".join(f"<td>{counts[s] or ''}</td>" for s in STATUSES)
                        + f"<td>{total}</td><td>{rate}</td></tr>")
    return (f"<h2>Per opset</h2><table><tr><th>opset</th><th>source</th>{head}<th>total</th><th>pass rate</th></tr>"
            + "".join(body) + "</table>")


def _matrix(data: dict) -> str:
    head = "".join(f"<th>{o}</th>" for o in OPSETS)
    body = []
    for op in sorted(data["cells"]):
        cells = []
        for opset in OPSETS:
            counts = data["cells"][op].get(opset)
            if not counts:
                cells.append("<td></td>")
                continue
            outcome = OUTCOME_BY_KEY.get(worst(data["outcomes"][(op, opset)]))
            tip = "; ".join(f"{key} {n}" for key, n in sorted(counts.items()))
            colour, glyph = (outcome.colour, outcome.glyph) if outcome else ("#fff", "")
            cells.append(f"<td style='background:{colour}' title='{html.escape(tip)}'>{html.escape(glyph)}</td>")
        sources = sorted({key.split(":")[0] for c in data["cells"][op].values() for key in c})
        body.append(f"<tr><td class='op'>{html.escape(op)}</td><td>{'+'.join(sources)}</td>{''.join(cells)}</tr>")
    return (f"<h2>Op x opset (worst outcome; hover for counts per source and status)</h2>"
            f"<table class='matrix'><tr><th>op</th><th>sources</th>{head}</tr>{''.join(body)}</table>")


def _arbitrated(data: dict) -> str:
    rows = [f"<tr><td>{html.escape(r['case_id'])}</td><td>{r['status']}</td><td>{html.escape(str(r.get('error'))[:200])}"
            f"</td><td>{html.escape(str(r.get('arbiter') or ''))}</td><td>{html.escape(str(r.get('repro') or ''))}</td></tr>"
            for r in data["arbitrated"]]
    return ("<h2>Numeric disagreements and the reference evaluator's ruling</h2><table><tr><th>case</th><th>status</th>"
            "<th>error</th><th>arbiter</th><th>one-node repro</th></tr>" + "".join(rows) + "</table>")


def _expectations(data: dict) -> str:
    rows = [f"<tr><td>{html.escape(op)}</td><td>{status}</td><td>{count}</td><td>{html.escape(reason)}</td></tr>"
            for (op, status, reason), count in sorted(data["expectations"].items())]
    return ("<h2>Expected non-passes (op_tests/opinfo/expectations.toml)</h2><table><tr><th>op</th><th>status</th>"
            "<th>rows</th><th>reason</th></tr>" + "".join(rows) + "</table>")


_STYLE = """<style>body{font:13px sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1.5em}
td,th{border:1px solid #ccc;padding:2px 5px;text-align:center}td.op{text-align:left;font-family:monospace}
.matrix td{min-width:1.6em}.chip{display:inline-block;width:1.4em;text-align:center;margin:0 3px 0 10px}</style>"""
