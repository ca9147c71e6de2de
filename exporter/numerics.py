"""The one rule for comparing float results that hold NaN or infinities, shared by every comparison we make.

A non-finite value is never "unmeasured": where the reference (PyTorch) and the candidate (ONNX Runtime, the
reference evaluator, a float64 run) differ in whether a value is NaN or infinite, or in an infinity's sign, the
two disagree, whatever the tolerance. Two NaNs agree, as do two infinities of the same sign; every other position
is finite on both sides and is measured by the tolerance (``finite_errors``).
"""

from __future__ import annotations

import numpy as np

# The words every non-finite disagreement is reported in (verify picks such a local check out by them).
NONFINITE_WORDS = "differ in NaN/Inf"


def nonfinite_disagreement(expected: np.ndarray, actual: np.ndarray) -> str:
    """Where ``actual`` departs from ``expected`` in its non-finite values, in words ("" where it does not).

    A mismatch is NaN against a number, a number against NaN, an infinity against a finite value or against the
    other infinity. The arrays have the same shape; non-float arrays have no non-finite values.
    """
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype.kind not in "fc" and actual.dtype.kind not in "fc":
        return ""
    expected_nan, actual_nan = np.isnan(expected), np.isnan(actual)
    special = expected_nan | actual_nan | np.isinf(expected) | np.isinf(actual)
    agree = (expected_nan & actual_nan) | (~expected_nan & ~actual_nan & (expected == actual))
    wrong = special & ~agree
    count = int(wrong.sum())
    if not count:
        return ""
    first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(wrong)[0]), wrong.shape))
    where = f"[{', '.join(map(str, first))}]" if first else "the scalar"
    return (f"{count} value(s) {NONFINITE_WORDS} (never within tolerance): at {where} torch "
            f"{expected[first].item():.6g}, onnx {actual[first].item():.6g}")


def finite_errors(expected: np.ndarray, actual: np.ndarray) -> tuple[float, float]:
    """Largest absolute and relative error over the positions finite on both sides ((0, 0) when there are none);
    the other positions are ``nonfinite_disagreement``'s to judge."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    finite = np.isfinite(expected) & np.isfinite(actual)
    if not finite.any():
        return 0.0, 0.0
    e = expected[finite].astype(np.float64)
    diff = np.abs(e - actual[finite].astype(np.float64))
    return float(diff.max()), float((diff / np.maximum(np.abs(e), 1e-12)).max())
