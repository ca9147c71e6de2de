"""How results are judged: which rows are failures, and when two measurements of one case really differ.

The release gate (``conformance.gate``), ``python -m conformance flaky``, the exit code of ``python -m conformance
run`` and the report's badge all use these rules, so they cannot disagree. Per-run numbers (achieved errors, a
tolerance scaled by an output's magnitude) carry float noise, so they are never compared for equality: two values
differ only when they leave a relative band around each other.

Bands (stated in docs/release-gating.md):

- a tolerance (rtol or atol) is *loosened* when it grows by more than ``TOLERANCE_BAND`` (5 %); magnitude-scaled
  tolerances round their scale up to 3 significant digits (``model_zoo.entry.stable_scale``), so float noise moves
  them by at most 1 %, well inside the band;
- an achieved error *drifts* when it grows to more than ``ERROR_GROWTH`` (2x) its earlier value *and* by more than
  ``ERROR_FLOOR`` (half) of the case's absolute tolerance: errors far below their tolerance move by whole factors
  between runs (a last-bit change in the reference), and that means nothing.
"""

from __future__ import annotations

TOLERANCE_BAND = 0.05
ERROR_GROWTH = 2.0
ERROR_FLOOR = 0.5

# Statuses that never count as failures: a pass; a case that could not say anything (inconclusive: the export ran
# but the reference cannot discriminate); a skip with a reason (no GPU); an OpInfo sample that cannot become an ONNX
# model at all (not_capturable); a disagreement the ONNX reference evaluator pins on ONNX Runtime, the export being
# right (runtime_divergence). ``unsupported`` and ``no_symbolic`` are judged by their opset.
NOT_FAILURES = ("pass", "inconclusive", "skipped", "not_capturable", "runtime_divergence")
UNSUPPORTED = ("unsupported", "no_symbolic")
KNOWN_FAILURE = "known failure"  # reason prefix of a failure an op case declares at an opset (an ONNX/ORT limit)


def _opset(row: dict, key: str) -> int | None:
    try:
        return int(row.get(key))
    except (TypeError, ValueError):
        return None


def is_engine_gap(row: dict) -> bool:
    """Unsupported at an opset the case claims (its ``expected_min_opset`` or above): the exporter falls short.
    Below the claim, or with no claim recorded, unsupported is a fact about ONNX, not a failure."""
    opset, expected = _opset(row, "opset"), _opset(row, "expected_min_opset")
    return row.get("status") in UNSUPPORTED and opset is not None and expected is not None and opset >= expected


def is_known_failure(row: dict) -> bool:
    """A failure the case itself declares at this opset, with the ONNX or ONNX Runtime limitation as the reason."""
    return str(row.get("reason") or "").startswith(KNOWN_FAILURE)


def is_failure(row: dict) -> bool:
    """Whether the row fails the run: any failure status (environment errors included), an unknown status, or an
    unsupported case at an opset it claims (an engine gap). Other unsupported cases and known failures do not."""
    status = row.get("status")
    if status in NOT_FAILURES or is_known_failure(row):
        return False
    if status in UNSUPPORTED:
        return is_engine_gap(row)
    return True


def loosened(before: dict, after: dict) -> str:
    """'rtol' or 'atol' when ``after`` uses a tolerance more than TOLERANCE_BAND above ``before``'s, else ''."""
    for key in ("rtol", "atol"):
        old, new = before.get(key), after.get(key)
        if old is not None and new is not None and new > old * (1 + TOLERANCE_BAND):
            return key
    return ""


def error_drifted(before: dict, after: dict) -> bool:
    """Whether ``after``'s max abs error grew past both bands over ``before``'s (see the module docstring)."""
    old, new = before.get("max_abs_error"), after.get("max_abs_error")
    if old is None or new is None:
        return False
    floor = ERROR_FLOOR * (after.get("atol") or 0.0)
    return new > ERROR_GROWTH * old and new - old > floor


def band_difference(first: dict, second: dict) -> str:
    """Why two rows of one case disagree beyond noise (status, tolerance or error band), or '' when they agree."""
    if first.get("status") != second.get("status"):
        return f"status {first.get('status')} vs {second.get('status')}"
    tolerance = loosened(first, second) or loosened(second, first)
    if tolerance:
        return f"{tolerance} {first.get(tolerance)!r} vs {second.get(tolerance)!r}"
    if error_drifted(first, second) or error_drifted(second, first):
        return f"max abs error {first.get('max_abs_error')!r} vs {second.get('max_abs_error')!r}"
    return ""
