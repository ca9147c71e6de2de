"""Inline SVG charts (no scripts, no network): pass rate per opset, export time per model, error growth."""

from __future__ import annotations

import math
from html import escape

from reports.results import OPSETS, SUITE_LABELS

SUITE_COLOURS = {"op": "#2f6fb0", "model": "#2f9e5f", "example": "#d08a2c"}
AXIS = "#8a96a3"
GRID = "#e6eaef"
LABEL = "#3b4652"


def pass_rate_chart(by_suite_opset: dict[str, dict[str, dict[str, int]]]) -> str:
    """Grouped bars: for each opset, the share of passed cases per suite (skipped cases left out)."""
    suites = [s for s in SUITE_LABELS if any(by_suite_opset.get(s, {}).get(str(o), {}).get("total") for o in OPSETS)]
    if not suites:
        return _empty("No results to chart")
    width, height, left, bottom, top = 760, 280, 44, 34, 34
    plot_w, plot_h = width - left - 12, height - bottom - top
    group_w = plot_w / len(OPSETS)
    bar_w = min(18.0, (group_w - 10) / len(suites))
    parts = [_svg_open(width, height, "Pass rate per opset")]
    for percent in (0, 25, 50, 75, 100):
        y = top + plot_h * (1 - percent / 100)
        parts.append(f'<line x1="{left}" x2="{width - 12}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{percent}%</text>')
    for i, opset in enumerate(OPSETS):
        x0 = left + i * group_w + (group_w - bar_w * len(suites)) / 2
        for j, suite in enumerate(suites):
            counts = by_suite_opset.get(suite, {}).get(str(opset), {})
            considered = counts.get("total", 0) - counts.get("skipped", 0)
            if not considered:
                continue
            rate = counts.get("passed", 0) / considered
            bar_h = plot_h * rate
            x = x0 + j * bar_w
            tip = f"{SUITE_LABELS[suite]} at opset {opset}: {counts.get('passed', 0)}/{considered} passed ({rate:.0%})"
            parts.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w - 2:.1f}" height="{max(bar_h, 0.5):.1f}" '
                f'rx="2" fill="{SUITE_COLOURS[suite]}"><title>{escape(tip)}</title></rect>'
            )
        parts.append(f'<text x="{left + (i + 0.5) * group_w:.1f}" y="{height - 14}" text-anchor="middle" class="tick">{opset}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 1}" text-anchor="middle" class="axis-title">opset</text>')
    parts.append(_legend([(SUITE_LABELS[s], SUITE_COLOURS[s]) for s in suites], left + 8, 14))
    parts.append("</svg>")
    return "".join(parts)


def export_time_chart(models: list[dict], limit: int = 30) -> str:
    """Horizontal bars: median export seconds per model or example (across opsets and modes), slowest first."""
    timed = sorted((m for m in models if m["median_export_seconds"] is not None),
                   key=lambda m: m["median_export_seconds"], reverse=True)[:limit]
    if not timed:
        return _empty("No export times recorded")
    row_h, left, right, top = 18, 190, 70, 8
    width, height = 760, top + row_h * len(timed) + 28
    longest = max(m["median_export_seconds"] for m in timed) or 1.0
    scale = (width - left - right) / longest
    parts = [_svg_open(width, height, "Median export time per model")]
    for i, model in enumerate(timed):
        y = top + i * row_h
        seconds = model["median_export_seconds"]
        colour = SUITE_COLOURS.get(model["kind"], SUITE_COLOURS["model"])
        parts.append(f'<text x="{left - 8}" y="{y + 12}" text-anchor="end" class="tick">{escape(_shorten(model["name"], 28))}</text>')
        parts.append(
            f'<rect x="{left}" y="{y + 2}" width="{max(seconds * scale, 1):.1f}" height="{row_h - 5}" rx="2" fill="{colour}">'
            f'<title>{escape(model["name"])}: median export {seconds:.3f} s</title></rect>'
        )
        parts.append(f'<text x="{left + seconds * scale + 6:.1f}" y="{y + 12}" class="value">{seconds:.2f} s</text>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - 24}" stroke="{AXIS}"/>')
    parts.append(f'<text x="{left + (width - left - right) / 2:.1f}" y="{height - 6}" text-anchor="middle" class="axis-title">'
                 f'median export seconds{" (slowest " + str(limit) + ")" if len(models) > limit else ""}</text>')
    parts.append("</svg>")
    return "".join(parts)


def error_growth_chart(growth: list[list], width: int = 240, height: int = 48) -> str:
    """A sparkline of a localization's error (relative to each value's scale, log axis) from the diverging node
    (left) along a path to a model output (right); each point's tooltip names its value."""
    points = [(str(name), float(error)) for name, error in growth if error and error > 0]
    if not points:
        return ""
    logs = [math.log10(error) for _, error in points]
    low, high = min(logs), max(logs)
    span = (high - low) or 1.0
    step = (width - 8) / max(len(points) - 1, 1)
    xy = [(4 + i * step, 4 + (height - 8) * (1 - (v - low) / span)) for i, v in enumerate(logs)]
    parts = [_svg_open(width, height, "Error growth from the diverging node to an output"),
             f'<polyline fill="none" stroke="#c0392b" stroke-width="1.5" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}"/>']
    for (x, y), (name, error) in zip(xy, points, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="#c0392b"><title>{escape(name)}: {error:.2e} of scale</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_open(width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>')


def _legend(items: list[tuple[str, str]], x: float, y: float) -> str:
    parts = []
    for label, colour in items:
        parts.append(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="10" height="10" rx="2" fill="{colour}"/>'
                     f'<text x="{x + 14:.1f}" y="{y + 1:.1f}" class="tick" text-anchor="start">{escape(label)}</text>')
        x += 24 + 7 * len(label)
    return "".join(parts)


def _empty(message: str) -> str:
    return f'<p class="empty">{escape(message)}</p>'


def _shorten(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
