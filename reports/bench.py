"""The benchmark card: ``python -m benchmarks`` results (bench.json), ours versus the torch.onnx peer."""

from __future__ import annotations

import json
from html import escape
from typing import Any

# (key in each side's numbers, column label, format); ratios ours/peer are shown next to each pair.
COLUMNS = (
    ("export_s", "Export s", "{:.2f}"),
    ("node_count", "Nodes", "{:d}"),
    ("ort_ms", "ORT CPU ms", "{:.2f}"),
    ("file_size", "File MB", "{:.1f}"),
    ("peak_rss_growth_mb", "Peak MB", "{:.0f}"),
)


def load_bench(path: str) -> dict[str, Any]:
    """The benchmark rows and the conformance quick-tier timing (if the run measured it) from bench.json."""
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)
    if not isinstance(entries, list):
        raise ValueError(f"{path} is not a benchmark file (expected a JSON list of rows)")
    rows = [e for e in entries if isinstance(e, dict) and "model" in e and "opset" in e]
    quick = next((e["conformance_quick"] for e in entries if isinstance(e, dict) and "conformance_quick" in e), None)
    return {"source": path, "rows": rows, "conformance_quick": quick}


def section(bench: dict[str, Any], card) -> str:
    """The card's HTML; ``card(anchor, title, lead, body)`` is the page's card builder."""
    head = "".join(f'<th class="num">{escape(label)} ours / peer</th><th class="num">ratio</th>'
                   for _, label, _ in COLUMNS)
    body = "".join(_row(row) for row in bench["rows"])
    table = (f'<table class="counts" id="bench-table"><thead><tr><th>Model</th><th class="num">Opset</th>{head}'
             f"</tr></thead><tbody>{body}</tbody></table>")
    lead = (f"From {escape(bench['source'])}: ours and torch.onnx (dynamo=False) measured alternately in one run; "
            "ratios are ours/peer (below 1 means ours is smaller or faster). File MB is the ONNX file size.")
    return card("bench", "Benchmarks", lead, table + _failures(bench["rows"]) + _quick(bench["conformance_quick"]))


def _row(row: dict[str, Any]) -> str:
    ours, peer = row.get("ours", {}), row.get("peer", {})
    cells = "".join(f'<td class="num">{_value(ours, key, fmt)} / {_value(peer, key, fmt)}</td>'
                    f'<td class="num">{_ratio(ours.get(key), peer.get(key))}</td>' for key, _, fmt in COLUMNS)
    return f'<tr><td>{escape(str(row["model"]))}</td><td class="num">{int(row["opset"])}</td>{cells}</tr>'


def _value(side: dict[str, Any], key: str, fmt: str) -> str:
    value = side.get(key)
    if value is None:
        return "fail" if not side else "–"
    if key == "file_size":
        value = value / 2**20
    return escape(fmt.format(value))


def _ratio(ours: float | None, peer: float | None) -> str:
    if not ours or not peer:
        return "–"
    ratio = ours / peer
    verdict = "better" if ratio <= 1 else "worse"
    return f'<span class="ratio {verdict}">{ratio:.2f}</span>'


def _failures(rows: list[dict[str, Any]]) -> str:
    items = [f"<li>{escape(str(row['model']))} opset {int(row['opset'])}, {side}: {escape(str(row[side + '_error']))}</li>"
             for row in rows for side in ("ours", "peer") if row.get(side + "_error")]
    return f"<h3>Export failures</h3><ul>{''.join(items)}</ul>" if items else ""


def _quick(quick: dict[str, Any] | None) -> str:
    if not quick:
        return ""
    parts = [f"{side} {quick[side + '_s']:.0f} s" if side + "_s" in quick else f"{side} failed"
             for side in ("ours", "peer")]
    ratio = f", ratio {quick['ratio']:.2f}" if "ratio" in quick else ""
    return f"<p>Conformance quick tier wall time: {escape(', '.join(parts))}{ratio}.</p>"
