"""Classifying each results row into the outcome a report colours it by.

Rows come from the conformance runner and from op_tests, read by ``conformance.results.read_rows`` (which refuses
a line without a case id and a status); any other field may be missing, so every accessor here tolerates absent or
ill-typed values rather than failing the whole report on one odd row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from conformance.arguments import ALL_OPSETS
from conformance.verdict import is_failure

OPSETS = ALL_OPSETS
SUITES = ("op", "model", "example")
SUITE_LABELS = {"op": "Ops", "model": "Models", "example": "Examples"}


@dataclass(frozen=True)
class Outcome:
    key: str
    label: str
    colour: str
    glyph: str
    severity: int  # higher is worse; a cell shows its worst row (skipped aside, see below)


# Ordered from worst to best. The colours keep related failures in one hue family (ORT: purples,
# exporter: reds) so the matrix reads at a glance, and each also carries a glyph for colour-blind readers.
# Skipped comes last, below pass: a row that did not run says nothing about the export, so it never hides the rows
# that did (a model whose CUDA cases were skipped on a machine without a GPU shows its CPU verdict); a cell whose
# rows were all skipped shows skipped.
OUTCOMES = [
    Outcome("crash", "Crash", "#3d1f1f", "!", 130),
    Outcome("timeout", "Timeout", "#7a4a24", "T", 120),
    Outcome("env_error", "Environment error", "#5b2333", "V", 115),
    Outcome("export_error", "Export error", "#c0392b", "E", 110),
    Outcome("checker_error", "Checker error", "#e0663d", "C", 100),
    Outcome("ort_load_error", "ORT load error", "#9b3f96", "L", 90),
    Outcome("ort_kernel_missing", "ORT kernel missing", "#6c4fc4", "K", 85),
    Outcome("ort_run_error", "ORT run error", "#c25a9a", "R", 80),
    Outcome("mismatch", "Numerics mismatch", "#e9a23b", "≠", 70),
    Outcome("runtime_divergence", "ONNX Runtime diverges from the ONNX reference", "#b08fd8", "D", 65),
    Outcome("not_registered", "Not registered", "#4d5966", "∅", 60),
    Outcome("unsupported", "Unsupported at this opset (ONNX)", "#a9bccf", "–", 50),
    Outcome("inconclusive", "Inconclusive", "#7fb7ae", "?", 40),
    Outcome("not_capturable", "Sample not capturable (not an ONNX model)", "#e6e9ed", "n", 35),
    Outcome("pass", "Pass", "#2f9e5f", "✓", 10),
    Outcome("skipped", "Skipped", "#d5dae0", "s", 5),
]
OUTCOME_BY_KEY = {o.key: o for o in OUTCOMES}
NO_DATA = Outcome("no_data", "No result", "#ffffff", "", 0)

KERNEL_MISSING_MARKERS = ("NOT_IMPLEMENTED", "Could not find an implementation")
NOT_REGISTERED_MARKER = "no symbolic is registered"


def text(row: dict, key: str) -> str:
    value = row.get(key)
    return value if isinstance(value, str) else ("" if value is None else str(value))


def number(row: dict, key: str) -> float | None:
    value = row.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def opset_of(row: dict) -> int | None:
    value = row.get("opset")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def kind_of(row: dict) -> str:
    kind = text(row, "kind")
    return kind if kind in SUITES else "op" if row.get("op") else kind or "model"


def qualified_op(name: str) -> str:
    """ATen ops are named ``conv2d`` in op rows and ``aten::conv2d`` in the registry and traced graphs."""
    return name if "::" in name else f"aten::{name}"


def op_of(row: dict) -> str:
    return text(row, "op") or text(row, "name")


def outcome_key(row: dict, registered: set[str] | None = None) -> str:
    """The coloured outcome of one row (see OUTCOMES)."""
    status = text(row, "status")
    error = text(row, "error")
    if status == "ort_error":
        if any(marker in error for marker in KERNEL_MISSING_MARKERS):
            return "ort_kernel_missing"
        return "ort_load_error" if text(row, "stage") == "ort_load" else "ort_run_error"
    if status == "no_symbolic":
        return "not_registered"
    if status == "unsupported":
        if NOT_REGISTERED_MARKER in error:
            return "not_registered"
        if registered is not None and kind_of(row) == "op" and qualified_op(op_of(row)) not in registered:
            return "not_registered"
        return "unsupported"
    return status if status in OUTCOME_BY_KEY else "crash" if status else "skipped"


def bucket(row: dict) -> str:
    """The summary bucket: passed, failed, unsupported, skipped or inconclusive.

    Failed is exactly what fails a run and the release gate (``conformance.verdict.is_failure``: failure statuses,
    unknown statuses, and unsupported at an opset the case claims). A failure an op case declares at an opset (a
    known ONNX or ONNX Runtime limitation, with its reason) counts with the unsupported.
    """
    status = text(row, "status")
    if status == "pass":
        return "passed"
    if is_failure(row):
        return "failed"
    if status in ("inconclusive", "runtime_divergence"):  # the export is right; the comparison cannot pass it
        return "inconclusive"
    if status in ("skipped", "not_capturable"):
        return "skipped"
    return "unsupported"


BUCKETS = ("passed", "failed", "unsupported", "skipped", "inconclusive")


def worst(keys: Iterable[str]) -> str:
    """The most severe outcome key among ``keys`` (``no_data`` when empty)."""
    best_key, best_severity = "no_data", -1
    for key in keys:
        severity = OUTCOME_BY_KEY[key].severity if key in OUTCOME_BY_KEY else 0
        if severity > best_severity:
            best_key, best_severity = key, severity
    return best_key
