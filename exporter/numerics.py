"""Comparing results with PyTorch's, the one way every comparison of this project makes it: :func:`exporter.verify`
inside a model, the conformance harness on a model's or an op's outputs.

:func:`compare_arrays` judges outputs within a tolerance, :func:`judge_by_float64` weighs a float32 disagreement
against a float64 run. Both follow the one rule for float results that hold NaN or infinities: a non-finite value is never
"unmeasured". Where the reference (PyTorch) and the candidate (ONNX Runtime, the reference evaluator, a float64 run)
differ in whether a value is NaN or infinite, or in an infinity's sign, the two disagree, whatever the tolerance. Two
NaNs agree, as do two infinities of the same sign; every other position is finite on both sides and is measured by
the tolerance (``finite_errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass
class Verdict:
    """A comparison's outcome: whether it passes, the first failure in words, the largest errors, the tolerance it
    used and what it compared (``comparison``)."""

    ok: bool
    message: str = ""
    max_abs: float = 0.0
    max_rel: float = 0.0
    rtol: float = 0.0
    atol: float = 0.0
    comparison: str = ""
    compared_nothing: bool = False  # nothing was left to compare (say, every detection on a near-tie)

    def merge(self, other: Verdict) -> Verdict:
        """Worst of both: the first failure's message, the largest errors and tolerances."""
        return Verdict(
            ok=self.ok and other.ok,
            message=self.message if not self.ok else other.message,
            max_abs=max(self.max_abs, other.max_abs),
            max_rel=max(self.max_rel, other.max_rel),
            rtol=max(self.rtol, other.rtol),
            atol=max(self.atol, other.atol),
            comparison=self.comparison or other.comparison,
            compared_nothing=self.compared_nothing or other.compared_nothing,
        )


def scale_of(arrays: list[np.ndarray]) -> float:
    """Largest finite magnitude over the float arrays (the output's scale)."""
    values = [np.abs(a[np.isfinite(a)]).max() for a in arrays if a.dtype.kind == "f" and np.isfinite(a).any()]
    return float(max(values)) if values else 0.0


Tolerance = Callable[[float], "tuple[float, float]"]  # an output's scale (max |x|) -> (rtol, atol)


def compare_arrays(expected: list[np.ndarray], actual: list[np.ndarray], tolerance: Tolerance) -> Verdict:
    """Every output: same count, shape and dtype; integers and bools equal; floats agree in their NaN and infinities
    (``nonfinite_disagreement``: never within tolerance) and are allclose(rtol, atol) elsewhere, with the tolerance of
    each output computed from that output's own scale."""
    rtol, atol = tolerance(0.0)
    verdict = Verdict(ok=True, rtol=rtol, atol=atol)
    verdict.comparison = f"allclose(rtol={rtol:g}, atol={atol:.3g}{describe_scaling(tolerance)}) on {len(expected)} output(s)"
    if len(expected) != len(actual):
        verdict.ok, verdict.message = False, f"output count differs: torch {len(expected)}, onnx {len(actual)}"
        return verdict
    for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
        a = np.asarray(a)
        if e.shape != a.shape:
            verdict.ok, verdict.message = False, f"output {index}: shape {a.shape} != torch {e.shape}"
            return verdict
        if e.dtype != a.dtype:
            verdict.ok, verdict.message = False, f"output {index}: dtype {a.dtype} != torch {e.dtype}"
            return verdict
        if e.size == 0:
            continue
        max_abs, max_rel = finite_errors(e, a)
        verdict.max_abs, verdict.max_rel = max(verdict.max_abs, max_abs), max(verdict.max_rel, max_rel)
        if e.dtype.kind != "f":
            if not np.array_equal(e, a):
                verdict.ok, verdict.message = False, f"output {index}: {e.dtype} values differ (max abs {max_abs:g})"
                return verdict
            continue
        rtol, atol = tolerance(scale_of([e]))
        verdict.atol = max(verdict.atol, atol)
        nonfinite = nonfinite_disagreement(e, a)
        if nonfinite:
            verdict.ok, verdict.message = False, f"output {index}: {nonfinite}"
            return verdict
        if not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
            verdict.ok = False
            verdict.message = (f"output {index}: max abs error {max_abs:.3g}, max rel error {max_rel:.3g} "
                               f"(rtol {rtol:g}, atol {atol:.3g})")
            return verdict
    return verdict


# A float32 mismatch is arbitrated by a float64 run of the same model: the export passes when its deviation from
# float64 is at most this many times PyTorch's own float32 deviation (plus atol).
ARBITRATION_FACTOR = 2.0
# The float64 run arbitrates only if PyTorch's float32 run stays within this fraction of the output's scale of it:
# float32 rounding does not move an output further, so a larger gap means the float64 run computes something else
# (a random draw, a precision-dependent branch) and proves nothing.
ARBITER_AGREEMENT = 1e-3
# The words every arbitration verdict is given in (verify picks a local check that arbitration passed out by them).
ARBITRATION_WORDS = "float64 arbitration:"


def judge_by_float64(expected: list[np.ndarray], actual: list[np.ndarray], exact: list[np.ndarray],
                     atol: float) -> Verdict:
    """Judge a float32 disagreement between ONNX Runtime and PyTorch against a float64 PyTorch run.

    Deep networks amplify float32 rounding: after 100+ layers two correct float32 implementations (PyTorch's and
    ONNX Runtime's kernels, which sum in different orders) can differ by more than any fixed tolerance, while
    both stay equally close to the float64 result. The export passes when every float output's largest deviation
    from float64 is at most ``ARBITRATION_FACTOR`` times PyTorch's own (plus ``atol``); non-float outputs must
    be equal. A wrong export lands far from float64 and fails. Arbitration settles rounding, never a NaN or an
    infinity: outputs that differ from PyTorch's in their non-finite values fail whatever float64 says.
    """
    if not len(expected) == len(actual) == len(exact):
        # Comparing the outputs the runs share would pass an export that lost an output.
        return Verdict(False, f"{ARBITRATION_WORDS} output counts differ: torch {len(expected)}, onnx {len(actual)}, "
                              f"float64 {len(exact)}")
    torch_off = onnx_off = scale = 0.0
    for e, a, x in zip(expected, actual, exact, strict=True):
        a = np.asarray(a)
        if e.shape != a.shape or e.shape != x.shape:
            return Verdict(False, f"{ARBITRATION_WORDS} shapes differ")
        if e.dtype.kind != "f":
            if not np.array_equal(e, a):
                return Verdict(False, f"{ARBITRATION_WORDS} {e.dtype} outputs differ")
            continue
        nonfinite = nonfinite_disagreement(e, a)
        if nonfinite:
            text = f"no {ARBITRATION_WORDS} {nonfinite}"
            return Verdict(False, text, comparison=text)
        x = x.astype(np.float64)
        torch_off = max(torch_off, finite_errors(x, e)[0])
        onnx_off = max(onnx_off, finite_errors(x, a)[0])
        scale = max(scale, scale_of([x]))
    if torch_off > ARBITER_AGREEMENT * scale:
        text = (f"no {ARBITRATION_WORDS} PyTorch's float32 and float64 runs differ by {torch_off:.3g}, more than "
                f"{ARBITER_AGREEMENT:g} of the output's scale {scale:.3g}, so the float64 run computes something else")
        return Verdict(False, text, comparison=text)
    limit = ARBITRATION_FACTOR * torch_off + atol
    ok = onnx_off <= limit
    text = (f"{ARBITRATION_WORDS} onnx deviates {onnx_off:.3g} from float64, torch float32 {torch_off:.3g} "
            f"(limit {ARBITRATION_FACTOR:g} x torch + atol = {limit:.3g})")
    return Verdict(ok, "" if ok else text, comparison=text)


def describe_scaling(tolerance: Tolerance) -> str:
    """How ``tolerance``'s atol grows with the output's scale, in words ("" where it does not)."""
    base = tolerance(0.0)[1]
    grows = tolerance(1.0)[1] - base
    return f" + {grows:g} x the output's max |x|" if grows > 0 else ""
