"""Rendering the report data as one self-contained HTML page (inline CSS, JS, SVG and data; no network)."""

from __future__ import annotations

import json
import os
from html import escape
from typing import Any

from reports import bench, svg
from reports.results import (
    BUCKETS,
    NO_DATA,
    OPSETS,
    OUTCOME_BY_KEY,
    OUTCOMES,
    SUITE_LABELS,
)

ASSETS = os.path.join(os.path.dirname(__file__), "assets")
FACT_PACKAGES = ("torch", "torchvision", "onnx", "onnxruntime", "python")


def render(data: dict[str, Any]) -> str:
    """The whole page for the report data built by reports.build."""
    sections = [
        _run_facts(data["header"]),
        _summary(data["summary"]),
        _baseline(data.get("baseline")),
        _matrix(data["op_matrix"], data["cases"]),
        _models(data["models"], data["cases"]),
        _coverage(data["coverage"]),
        _workarounds(data.get("workarounds") or []),
        _charts(data),
    ]
    if data.get("bench"):
        sections.append(bench.section(data["bench"], _card))
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in (
        ("run", "Run"), ("summary", "Summary"), ("baseline", "Baseline"), ("matrix", "Op matrix"),
        ("models", "Models"), ("coverage", "ATen coverage"), ("workarounds", "Workarounds"), ("charts", "Charts"),
        ("bench", "Benchmarks"))
        if anchor not in ("baseline", "bench") or data.get(anchor))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(_title(data))}</title>
<style>{_asset("report.css")}{_outcome_css()}</style>
</head><body>
<header class="topbar"><h1>ONNX export conformance{_verdict(data)}</h1>
<div class="sub">{escape(_subtitle(data["header"]))}</div></header>
<nav class="sections">{nav}</nav>
<main>{"".join(sections)}</main>
<aside id="drilldown" hidden aria-live="polite"><button class="close" aria-label="Close">✕</button><h2></h2><div class="body"></div></aside>
<footer>Built by <code>python -m reports build</code> from {escape(", ".join(data["header"]["sources"]) or "no files")};
registry: {escape(data["coverage"]["registry_source"] or "none")}. The JSON sidecar holds every number shown here.</footer>
<script type="application/json" id="report-data">{_page_data(data)}</script>
<script>{_asset("report.js")}</script>
</body></html>
"""


def _asset(name: str) -> str:
    with open(os.path.join(ASSETS, name), encoding="utf-8") as handle:
        return handle.read()


def _outcome_css() -> str:
    rules = []
    for outcome in [*OUTCOMES, NO_DATA]:
        rules.append(f".o-{outcome.key}{{background:{outcome.colour};color:{_ink_on(outcome.colour)}}}")
    return "\n".join(rules)


def _ink_on(colour: str) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#1f2a36" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#ffffff"


def _page_data(data: dict[str, Any]) -> str:
    """The drill-down data the script needs, safe to sit inside a <script> element."""
    page = {
        "outcomes": [{"key": o.key, "label": o.label} for o in [*OUTCOMES, NO_DATA]],
        "cases": data["cases"],
        "matrix": [{"op": row["op"], "cells": row["cells"]} for row in data["op_matrix"]],
        "models": [{"name": m["name"], "capture": m["capture"], "cells": m["cells"]} for m in data["models"]],
    }
    return json.dumps(page, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "<\\!--")


def _title(data: dict[str, Any]) -> str:
    revision = ", ".join(data["header"]["git_rev"]) or "unknown revision"
    return f"Conformance report · {revision}"


def _subtitle(header: dict[str, Any]) -> str:
    parts = [f"{header['row_count']} results"]
    if header["started_at"]:
        parts.append(f"run {header['started_at']} → {header['finished_at']}")
    return " · ".join(parts)


def _verdict(data: dict[str, Any]) -> str:
    """The header badge: the release gate's verdict on these rows (against the baseline when the report has one;
    otherwise any failing case fails), the same verdict ``python -m conformance gate`` exits with."""
    gate = data["gate"]
    if gate["no_evidence"]:
        detail = f'no evidence: {escape(gate["no_evidence"])}'
    elif gate["has_baseline"]:
        detail = f'{len(gate["regressions"])} regressions'
    else:
        detail = f'{data["summary"]["overall"]["failed"]} failing'
    state, colour = ("PASS", "good") if gate["passed"] else ("FAIL", "bad")
    against = _judged_against(data["baseline"])
    return (f'<span class="verdict {colour}" id="gate-badge">Release gate: {state} · {detail} '
            f'({against})</span>{_cuda_badge(data["header"])}')


def _judged_against(diff: dict[str, Any] | None) -> str:
    if not diff:
        return "no baseline: any failure fails"
    if diff["partial"]:
        return f'against the baseline, partial run: {diff["compared"]} of its {diff["baseline_cases"]} cases compared'
    return "against the baseline"


def _cuda_badge(header: dict[str, Any]) -> str:
    """How many CUDA cases ran, in red when some did not (no GPU, or an environment that cannot use it)."""
    total, ran = header["cuda_cases"], header["cuda_cases_run"]
    if not total:
        return ""
    colour = "good" if ran == total else "bad"
    return f'<span class="verdict {colour}" id="cuda-badge">CUDA cases run: {ran} of {total}</span>'


# ---------------------------------------------------------------------------------------------------------------


def _card(anchor: str, title: str, lead: str, body: str) -> str:
    return f'<section class="card" id="{anchor}"><h2>{escape(title)}</h2><p class="lead">{lead}</p>{body}</section>'


def _fact(label: str, value: str | None) -> str:
    if value:
        return f"<div><dt>{escape(label)}</dt><dd>{escape(value)}</dd></div>"
    return f'<div><dt>{escape(label)}</dt><dd class="missing">not recorded</dd></div>'


def _run_facts(header: dict[str, Any]) -> str:
    versions = header["versions"]
    facts = [_fact("Git revision", ", ".join(header["git_rev"]))]
    facts += [_fact(package, ", ".join(versions.get(package, []))) for package in FACT_PACKAGES]
    facts.append(_fact("Providers", ", ".join(header["providers"])))
    facts.append(_fact("GPU", ", ".join(header["gpu"]) or ("none" if header["providers"] == ["cpu"] else "")))
    facts.append(_fact("ONNX Runtime optimization level", ", ".join(header.get("ort_levels", []))))
    duration = header["duration_s"]
    kind = "wall clock" if header["started_at"] else "sum of cases"
    facts.append(_fact("Duration", f"{_seconds(duration)} ({kind})" if duration is not None else None))
    facts.append(_fact("Results", str(header["row_count"])))
    lead = "Versions and revision as recorded in the result rows; several values mean the inputs mix runs."
    if header.get("peer_rows_excluded"):
        lead += (f" {header['peer_rows_excluded']} rows from the torch.onnx peer (which validates the model zoo) "
                 "are left out of every count.")
    if header.get("superseded_rows"):
        lead += f" {header['superseded_rows']} older rows of re-run cases are superseded by their newest result."
    return _card("run", "Run", lead, f'<dl class="facts">{"".join(facts)}</dl>')


def _seconds(value: float) -> str:
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"


def _summary(summary: dict[str, Any]) -> str:
    overall = summary["overall"]
    tiles = "".join(
        f'<div class="tile {b}" data-bucket="{b}"><div class="n">{overall[b]}</div><div class="l">{b}</div></div>' for b in BUCKETS
    )
    suites = {SUITE_LABELS[s]: c for s, c in summary["by_suite"].items()}
    opsets = {f"opset {o}": c for o, c in summary["by_opset"].items()}
    providers = summary["by_provider"]
    body = (f'<div class="tiles" id="overall-tiles">{tiles}</div><div class="split">'
            f'<div>{_count_table("Per suite", suites, "suite")}{_count_table("Per provider", providers, "provider")}</div>'
            f'{_count_table("Per opset", opsets, "opset")}</div>')
    lead = ("Failed counts mismatches, export/checker/ONNX Runtime errors, timeouts, crashes, and ops unsupported at an "
            "opset where their test requires them. Unsupported means ONNX cannot express the case at that opset.")
    return _card("summary", "Summary", lead, body)


def _count_table(title: str, groups: dict[str, dict[str, int]], kind: str) -> str:
    head = "".join(f'<th class="num">{b}</th>' for b in BUCKETS)
    body = []
    for name, counts in groups.items():
        cells = "".join(f'<td class="num {b}{" zero" if not counts[b] else ""}">{counts[b]}</td>' for b in BUCKETS)
        body.append(f'<tr data-{kind}="{escape(name)}"><td>{escape(name)}{_stack_bar(counts)}</td>{cells}'
                    f'<td class="num">{counts["total"]}</td></tr>')
    return (f'<div><h3>{escape(title)}</h3><table class="counts" id="counts-{kind}"><thead><tr><th></th>{head}'
            f'<th class="num">total</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _stack_bar(counts: dict[str, int]) -> str:
    total = counts["total"] or 1
    spans = "".join(f'<span class="{b}" style="width:{100 * counts[b] / total:.2f}%"></span>' for b in BUCKETS if counts[b])
    return f'<div class="bar">{spans}</div>'


def _baseline(diff: dict[str, Any] | None) -> str:
    if not diff:
        return ""
    def listing(title: str, entries: list[dict], limit: int = 200, fold: bool = True) -> str:
        if not entries:
            return f'<h3>{escape(title)} (0)</h3>'
        items = "".join(
            f'<li><code>{escape(e["id"])}</code>: {escape(e["before"] or "absent")} → <strong>{escape(e["after"])}</strong>'
            f'{" — " + escape(e["after_error"]) if e["after_error"] else ""}'
            f'{"<br><small>was: " + escape(e["before_error"]) + "</small>" if e["before_error"] and e["before_error"] != e["after_error"] else ""}</li>'
            for e in entries[:limit])
        more = f"<li>… and {len(entries) - limit} more (see the JSON sidecar)</li>" if len(entries) > limit else ""
        listing_html = f'<ul class="diff">{items}{more}</ul>'
        if fold and len(entries) > 8:  # long lists fold so the new failures above them stay in view
            listing_html = f"<details><summary>show all {len(entries)}</summary>{listing_html}</details>"
        return f'<h3>{escape(title)} ({len(entries)})</h3>{listing_html}'

    body = (_gate(diff.get("gate")) + listing("New failures", diff["new_failures"], fold=False) + listing("New cases that fail", diff["new_cases_failing"])
            + listing("Changed errors", diff["changed_errors"]) + listing("New passes", diff["new_passes"]))
    source = f"<code>{escape(diff['source'])}</code> ({diff['baseline_cases']} cases)"
    if diff["partial"]:
        body += _case_list("Not in this run", diff["not_in_run"])
        lead = (f"Partial run (<code>--partial</code>): compared with {source} on the {diff['compared']} baseline cases "
                f"it ran; {diff['new_cases']} cases are new in this run. The other {len(diff['not_in_run'])} baseline "
                "cases are outside this run's scope: listed as not in this run, neither missing nor failing.")
        return _card("baseline", "Compared with the baseline (partial run)", lead, body)
    body += _case_list("Cases in the baseline but not in this run", diff["missing_cases"])
    lead = (f"Against {source}; {diff['new_cases']} cases are new in this run. A case missing from this run is listed, "
            "and fails the gate, because a dropped case can hide a regression.")
    return _card("baseline", "Compared with the baseline", lead, body)


def _case_list(title: str, case_ids: list[str]) -> str:
    """A heading with the count, and the case ids folded under it (the first 500; the JSON sidecar has them all)."""
    items = "".join(f"<li><code>{escape(k)}</code></li>" for k in case_ids[:500])
    folded = f'<details><summary>show</summary><ul class="diff">{items}</ul></details>' if case_ids else ""
    return f"<h3>{escape(title)} ({len(case_ids)})</h3>{folded}"


def _gate(verdict: dict[str, Any] | None) -> str:
    """The release gate's verdict (regressions block a release; allow-listed flakes are shown, not counted)."""
    if not verdict:
        return ""
    def rows(findings: list[dict]) -> str:
        return "".join(
            f'<tr><td>{escape(f["kind"])}</td><td><code>{escape(f["case_id"])}</code></td><td>{escape(f["before"])}</td>'
            f'<td>{escape(f["after"])}</td><td>{escape(f["allowed_because"])}</td></tr>' for f in findings[:200])
    state = "pass" if verdict["passed"] else "fail"
    evidence = f'no evidence: {escape(verdict["no_evidence"])}; ' if verdict["no_evidence"] else ""
    head = (f'<p class="gate gate-{state}" id="gate-verdict"><strong>Release gate: {state.upper()}</strong> — {evidence}'
            f'{len(verdict["regressions"])} regressions, {len(verdict["allowed"])} allow-listed, '
            f'{verdict["improvements"]} improvements, {verdict["newly_covered"]} newly covered cases, '
            f'{verdict["new_cases_skipped"]} new cases skipped (not covered)</p>')
    findings = verdict["regressions"] + verdict["allowed"]
    if not findings:
        return head
    return (head + '<table class="gate-table"><thead><tr><th>regression</th><th>case</th><th>baseline</th><th>this run</th>'
            f'<th>allow-listed because</th></tr></thead><tbody>{rows(findings)}</tbody></table>')


def _legend() -> str:
    items = "".join(f'<span><i class="swatch o-{o.key}">{o.glyph}</i>{escape(o.label)}</span>' for o in [*OUTCOMES, NO_DATA])
    return f'<div class="legend">{items}</div>'


def _select(table: str, name: str, label: str, options: list[tuple[str, str]]) -> str:
    choices = "".join(f'<option value="{escape(v)}">{escape(text)}</option>' for v, text in options)
    return f'<label>{escape(label)} <select data-table="{table}" data-filter="{name}"><option value="">all</option>{choices}</select></label>'


def _search(table: str, placeholder: str) -> str:
    return f'<input type="search" data-table="{table}" data-filter="q" placeholder="{escape(placeholder)}" aria-label="{escape(placeholder)}">'


def _checkbox(table: str, name: str, label: str) -> str:
    return f'<label><input type="checkbox" data-table="{table}" data-filter="{name}" value="1"> {escape(label)}</label>'


def _cell_button(attribute: str, index: int, opset: int, cell: dict[str, Any], tip: str) -> str:
    outcome = OUTCOME_BY_KEY.get(cell["outcome"], NO_DATA)
    rows = len(cell["rows"])
    return (f'<button class="cell o-{outcome.key}" data-{attribute}="{index}" data-opset="{opset}" data-rows="{rows}" '
            f'data-outcome="{outcome.key}" title="{escape(tip)}">{outcome.glyph}</button>')


def _matrix(matrix: list[dict[str, Any]], cases: list[dict]) -> str:
    if not matrix:
        return _card("matrix", "Op × opset matrix", "No op results in the inputs.", "")
    families = sorted({row["family"] for row in matrix if row["family"]})
    present = sorted({cell["outcome"] for row in matrix for cell in row["cells"].values()},
                     key=lambda k: -OUTCOME_BY_KEY.get(k, NO_DATA).severity)
    toolbar = (f'<div class="toolbar">{_search("matrix", "Filter operators")}'
               f'{_select("matrix", "outcome", "Outcome", [(k, OUTCOME_BY_KEY.get(k, NO_DATA).label) for k in present])}'
               + (_select("matrix", "family", "Family", [(f, f) for f in families]) if families else "")
               + f'{_checkbox("matrix", "failing", "Only ops with failures")}<span class="shown" data-shown="matrix"></span></div>')
    head = "".join(f'<th class="opset">{opset}</th>' for opset in OPSETS)
    body = []
    for index, row in enumerate(matrix):
        cells = []
        for opset in OPSETS:
            cell = row["cells"][str(opset)]
            label = OUTCOME_BY_KEY.get(cell["outcome"], NO_DATA).label
            tip = f"{row['op']} @ opset {opset}: {label}; {cell['passed']}/{cell['total']} passed"
            if cell["error"]:
                tip += f"\n[{cell['stage']}] {cell['error']}"
            cells.append(f'<td class="cell-td">{_cell_button("op", index, opset, cell, tip)}</td>')
        outcomes = " ".join(sorted({c["outcome"] for c in row["cells"].values()}))
        body.append(f'<tr data-op="{escape(row["op"])}" data-family="{escape(row["family"])}" data-failing="{int(row["failing"])}" '
                    f'data-outcomes="{outcomes}"><td class="opname">{escape(row["op"])}</td><td>{escape(row["family"] or "–")}</td>'
                    f'<td class="num">{row["samples"]}</td><td class="num">{row.get("declared_lowest") or "–"}</td>'
                    f'{"".join(cells)}</tr>')
    table = (f'<div class="scroll"><table class="matrix" id="matrix-table"><thead><tr><th>Operator</th><th>Family</th>'
             f'<th class="num">Samples</th><th class="num" title="lowest opset the registry declares">Declared</th>{head}'
             f'</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    lead = ("One row per ATen operator tested by op_tests; each cell is the worst outcome over its samples, modes, "
            "dtypes and providers. Click a cell for dtype × provider, errors and tolerances. Declared: the lowest "
            "opset the exporter's registry declares for the op (from the registry snapshot, not from the results).")
    return _card("matrix", "Op × opset matrix", lead, _legend() + toolbar + table)


def _models(models: list[dict[str, Any]], cases: list[dict]) -> str:
    if not models:
        return _card("models", "Models and examples", "No model or example results in the inputs.", "")
    grid_rows = []
    for index, model in enumerate(models):
        cells = "".join(
            f'<td class="cell-td">{_cell_button("model", index, opset, model["cells"][str(opset)], _model_tip(model, opset, cases))}</td>'
            for opset in OPSETS)
        grid_rows.append(f'<tr><td class="opname">{escape(model["name"])}</td><td>{escape(model["kind"])}</td>'
                         f'<td>{escape(model["capture"])}</td>{cells}</tr>')
    head = "".join(f'<th class="opset">{opset}</th>' for opset in OPSETS)
    grid = (f'<div class="scroll"><table class="matrix" id="models-grid"><thead><tr><th>Model</th><th>Kind</th><th>Capture</th>{head}</tr></thead>'
            f'<tbody>{"".join(grid_rows)}</tbody></table></div>')
    positions = [p for model in models for p in model["rows"]]
    rows = [_model_row(cases[p]) for p in positions]
    values = lambda key: sorted({str(cases[p][key]) for p in positions if cases[p][key] is not None})  # noqa: E731
    toolbar = (f'<div class="toolbar">{_search("models", "Filter models")}'
               f'{_select("models", "kind", "Kind", [(v, v) for v in values("kind")])}'
               f'{_select("models", "opset", "Opset", [(v, v) for v in sorted(values("opset"), key=int)])}'
               f'{_select("models", "mode", "Mode", [(v, v) for v in values("mode")])}'
               f'{_select("models", "provider", "Provider", [(v, v) for v in values("provider")])}'
               f'{_select("models", "capture", "Capture", [(v, v) for v in values("capture")])}'
               f'{_select("models", "bucket", "Result", [(b, b) for b in BUCKETS])}'
               f'<span class="shown" data-shown="models"></span></div>')
    table = (f'<div class="scroll"><table id="models-table"><thead><tr><th>Model</th><th>Kind</th><th class="num">Opset</th>'
             f'<th>Mode</th><th>Provider</th><th>Capture</th><th>Status</th><th>Comparison</th><th class="num">Max abs</th>'
             f'<th class="num">Max rel</th><th class="num">Export</th><th class="num">Nodes</th><th class="num">Size</th>'
             f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    lead = "Every model and example at every opset, static and dynamic axes, per execution provider."
    return _card("models", "Models and examples", lead, grid + "<h3>All model and example results</h3>" + toolbar + table)


def _model_tip(model: dict[str, Any], opset: int, cases: list[dict]) -> str:
    rows = [cases[p] for p in model["cells"][str(opset)]["rows"]]
    if not rows:
        return f"{model['name']} ({model['capture']}) @ opset {opset}: no result"
    return f"{model['name']} ({model['capture']}) @ opset {opset}: " + "; ".join(
        f"{r['mode']}/{r['provider']} {OUTCOME_BY_KEY.get(r['outcome'], NO_DATA).label}" for r in rows)


def _model_row(case: dict[str, Any]) -> str:
    """The case's row, followed for failures by a full-width row with the error, re-run command and repro link."""
    outcome = OUTCOME_BY_KEY.get(case["outcome"], NO_DATA)
    main = (f'<tr data-name="{escape(case["name"])}" data-kind="{case["kind"]}" data-opset="{case["opset"]}" '
            f'data-mode="{escape(case["mode"])}" data-provider="{escape(case["provider"])}" '
            f'data-capture="{escape(case["capture"])}" data-bucket="{case["bucket"]}">'
            f'<td class="opname">{escape(case["name"])}</td><td>{case["kind"]}</td><td class="num">{case["opset"]}</td>'
            f'<td>{escape(case["mode"])}</td><td>{escape(case["provider"])}</td><td>{escape(case["capture"])}</td>'
            f'<td><span class="badge o-{outcome.key}">{escape(outcome.label)}</span></td><td>{escape(case["comparison"] or "–")}</td>'
            f'<td class="num">{_sci(case["max_abs_error"])}</td><td class="num">{_sci(case["max_rel_error"])}</td>'
            f'<td class="num">{_sec(case["export_seconds"])}</td><td class="num">{_int(case["node_count"])}</td>'
            f'<td class="num">{_size(case["file_size"])}</td></tr>')
    detail = "\n".join(filter(None, [case["error"], case["reason"]]))
    links = ""
    if case["rerun"] and case["bucket"] == "failed":
        links += f'<div><code>{escape(case["rerun"])}</code> <button class="copy" data-copy="{escape(case["rerun"])}">copy</button></div>'
    if case.get("repro_href") and case["bucket"] == "failed":
        links += f'<div><a href="{escape(case["repro_href"])}">repro bundle</a></div>'
    links += _localization(case.get("localization"))
    if not detail and not links:
        return main
    style = "err" if case["bucket"] == "failed" else "note"  # a skip's or an expected limit's reason is no error
    text = f'<pre class="{style}">{escape(detail)}</pre>' if detail else ""
    return main + f'<tr class="detail"><td colspan="13">{text}{links}</td></tr>'


def _localization(found: dict[str, Any] | None) -> str:
    """exporter.verify's finding for a mismatch or inconclusive row: the diverging node, where it came from, whose
    fault it is, its error growth towards the outputs and the link to its minimal repro."""
    if not found:
        return ""
    if found.get("error"):
        return f'<div class="localization">localization failed: <code>{escape(str(found["error"]))}</code></div>'
    if not found.get("node"):
        return f'<div class="localization">localization ({escape(str(found.get("check", "")))}): {escape(str(found.get("finding", "")))}</div>'
    facts = [f'first diverging node <code>{escape(found["node"])}</code> ({escape(" ".join(found.get("op_types", [])))}'
             f' for {escape(found.get("kind", ""))})', f'scope <code>{escape(found.get("scope") or "(top level)")}</code>',
             f'source <code>{escape(found.get("source") or "unknown")}</code>',
             f'inputs agree: {"yes" if found.get("inputs_agree") else "no"}',
             f'whose fault: <b>{escape(found.get("culprit", ""))}</b> — {escape(found.get("explanation", ""))}']
    repro = found.get("repro_href")
    link = f' <a href="{escape(repro)}">minimal repro</a>' if repro else ""
    chart = svg.error_growth_chart(found.get("growth") or [])
    return (f'<div class="localization">{"<br>".join(facts)}{link}'
            f'<div>error growth to the output (relative to scale): {chart}</div></div>')


def _sci(value: float | None) -> str:
    return "–" if value is None else "0" if value == 0 else f"{value:.2e}"


def _sec(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f} s"


def _int(value: float | None) -> str:
    return "–" if value is None else f"{int(value):,}"


def _size(value: float | None) -> str:
    if value is None:
        return "–"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return "–"


def _coverage(coverage: dict[str, Any]) -> str:
    per_opset = coverage["per_opset"]
    head = "".join(f'<th class="opset">{opset}</th>' for opset in OPSETS)
    summary_cells = "".join(
        f'<td class="mark"><strong>{per_opset[str(o)]["covered"]}</strong>/{per_opset[str(o)]["seen"]}</td>' for o in OPSETS)
    rows = []
    for entry in coverage["ops"]:
        marks = []
        for opset in OPSETS:
            supported = entry["opsets"][str(opset)]
            marks.append('<td class="mark yes">✓</td>' if supported else '<td class="mark no">✗</td>' if supported is False
                         else '<td class="mark unknown">?</td>')
        missing = any(value is not True for value in entry["opsets"].values())
        users = ", ".join(entry["models"])
        rows.append(f'<tr data-op="{escape(entry["op"])}" data-missing="{int(missing)}"><td class="opname">{escape(entry["op"])}</td>'
                    f'<td class="num" title="{escape(users)}">{len(entry["models"])}</td>{"".join(marks)}</tr>')
    toolbar = (f'<div class="toolbar">{_search("coverage", "Filter ATen ops")}'
               f'{_checkbox("coverage", "missing", "Only ops missing a symbolic at some opset")}<span class="shown" data-shown="coverage"></span></div>')
    table = (f'<div class="scroll"><table class="coverage" id="coverage-table"><thead><tr><th>ATen op</th><th class="num">Models</th>{head}</tr>'
             f'<tr class="coverage-summary"><td>covered / seen</td><td></td>{summary_cells}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table></div>')
    untested = coverage["registered_untested"]
    extra = ""
    if untested:
        extra = (f'<details><summary>{len(untested)} registered ops have no op test</summary><p class="mono">'
                 f'{escape(", ".join(untested))}</p></details>')
    source = "inferred from the results (a ? means they prove nothing either way)" if coverage["registry_inferred"] else \
        f"from the registry snapshot ({escape(coverage['registry_source'])})"
    lead = f"ATen ops in the traced graphs of the model zoo versus ops with a symbolic at each opset; symbolics {source}."
    if not coverage["ops"]:
        return _card("coverage", "ATen coverage", lead, '<p class="empty">No model rows record aten_ops.</p>' + extra)
    return _card("coverage", "ATen coverage", lead, toolbar + table + extra)


def _workarounds(use: list[dict[str, Any]]) -> str:
    lead = ("Cases whose exported model depends on a runtime workaround (exporter/lowering/runtime.py): a form "
            "chosen because ONNX Runtime lacks a kernel or rejects the plain ONNX form. "
            "export(..., runtime_workarounds=False) emits the plain form instead.")
    if not use:
        return _card("workarounds", "Runtime workarounds", lead, '<p class="empty">No case depends on one.</p>')
    rows = "".join(f'<tr><td class="mono">{escape(w["name"])}</td><td class="num">{w["cases"]}</td>'
                   f'<td class="num">{w["passed"]}</td><td>{escape(", ".join(w["ops"][:12]))}'
                   f'{" …" if len(w["ops"]) > 12 else ""}</td><td class="mono">{escape(", ".join(w["examples"]))}</td></tr>'
                   for w in use)
    table = ('<div class="scroll"><table id="workarounds-table"><thead><tr><th>Workaround</th><th class="num">Cases</th>'
             f'<th class="num">Passed</th><th>Ops / models</th><th>Examples</th></tr></thead><tbody>{rows}</tbody></table></div>')
    return _card("workarounds", "Runtime workarounds", lead, table)


def _charts(data: dict[str, Any]) -> str:
    body = (f'<div class="charts"><div><h3>Pass rate per opset</h3>{svg.pass_rate_chart(data["summary"]["by_suite_opset"])}</div>'
            f'<div><h3>Export time per model</h3>{svg.export_time_chart(data["models"])}</div></div>')
    return _card("charts", "Charts", "Skipped cases are left out of pass rates.", body)
