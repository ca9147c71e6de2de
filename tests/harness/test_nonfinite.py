"""The one non-finite rule (``exporter.numerics``), planted in every comparison path: a NaN or an infinity that
PyTorch's result does not have at that position is a mismatch, never "unmeasured"; two NaNs, or two infinities
of one sign, agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import exporter
from conformance.compare import compare_detections, reference_problem
from exporter.numerics import compare_arrays, finite_errors, judge_by_float64, nonfinite_disagreement

NAN, INF = float("nan"), float("inf")
TOLERANCE = lambda scale: (1e-3, 1e-5)  # noqa: E731

# (torch's value, ONNX's value) at position 0 of [x, 1.0, 2.0]
DISAGREEING = {
    "nan_where_finite": (0.0, NAN),
    "finite_where_nan": (NAN, 0.0),
    "inf_where_finite": (5.0, INF),
    "finite_where_inf": (-INF, -3.0e38),
    "inf_of_the_other_sign": (INF, -INF),
    "nan_where_inf": (INF, NAN),
}
AGREEING = {"both_nan": (NAN, NAN), "both_inf": (INF, INF), "both_minus_inf": (-INF, -INF)}


def _pair(values):
    expected, actual = values
    return (np.array([expected, 1.0, 2.0], np.float32), np.array([actual, 1.0, 2.0], np.float32))


@pytest.mark.parametrize("planted", DISAGREEING, ids=list(DISAGREEING))
def test_every_comparison_path_fails_on_a_planted_nonfinite_disagreement(planted):
    expected, actual = _pair(DISAGREEING[planted])
    assert "NaN/Inf" in nonfinite_disagreement(expected, actual)
    verdict = compare_arrays([expected], [actual], TOLERANCE)
    assert not verdict.ok and "NaN/Inf" in verdict.message
    # float64 arbitration settles rounding, never a NaN or an infinity (before: it measured finite positions only)
    decision = judge_by_float64([expected], [actual], [expected.astype(np.float64)], atol=1e-5)
    assert not decision.ok and "NaN/Inf" in decision.message
    assert not _detections_agree(expected[0], actual[0])


@pytest.mark.parametrize("planted", AGREEING, ids=list(AGREEING))
def test_the_same_nan_or_infinity_on_both_sides_agrees(planted):
    expected, actual = _pair(AGREEING[planted])
    assert nonfinite_disagreement(expected, actual) == ""
    assert compare_arrays([expected], [actual], TOLERANCE).ok
    assert judge_by_float64([expected], [actual], [expected.astype(np.float64)], atol=1e-5).ok
    assert _detections_agree(expected[0], actual[0])  # before: allclose without equal_nan failed two NaN scores


def _detections_agree(expected_score: float, actual_score: float) -> bool:
    """One clear detection whose mask holds the planted value on each side."""
    names = ["boxes", "labels", "scores", "masks"]
    boxes = np.array([[0, 0, 10, 10], [20, 20, 40, 40]], np.float32)
    labels, scores = np.array([1, 2]), np.array([0.9, 0.5], np.float32)
    mask = np.full((2, 1, 2, 2), 0.5, np.float32)
    expected_mask, actual_mask = mask.copy(), mask.copy()
    expected_mask[0, 0, 0, 0], actual_mask[0, 0, 0, 0] = expected_score, actual_score
    return compare_detections(names, [boxes, labels, scores, expected_mask],
                              [boxes, labels, scores, actual_mask], TOLERANCE).ok


def test_errors_measure_finite_positions_and_the_rule_the_rest():
    expected, actual = np.array([NAN, 1.0, INF]), np.array([0.0, 1.5, INF])
    assert finite_errors(expected, actual) == (0.5, 0.5)
    assert "1 value(s)" in nonfinite_disagreement(expected, actual)
    assert nonfinite_disagreement(np.array([1, 2]), np.array([1, 3])) == ""  # integers have no NaN


def test_a_reference_with_some_nan_is_compared_not_set_aside():
    partly = np.array([NAN, 1.0, -INF], np.float32)
    assert reference_problem([partly], [np.array([NAN, 2.0, -INF], np.float32)]) == ""
    assert "no finite value" in reference_problem([np.full(3, NAN, np.float32)], [np.zeros(3, np.float32)])


def test_a_nan_mismatch_is_never_taken_for_rounding_grown_along_the_graph():
    """The harness re-judges small float mismatches node by node; a NaN is not small, whatever its finite part."""
    import model_zoo
    from conformance.localization import rounding_only

    expected, actual = _pair(DISAGREEING["nan_where_finite"])
    verdict = compare_arrays([expected], [actual], TOLERANCE)
    assert verdict.max_abs == 0.0  # the finite positions agree exactly ...
    assert not rounding_only(model_zoo.get("resnet18"), [("input 0", verdict, [expected])])  # ... it is still no rounding


class _Rectifier(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


@pytest.fixture
def planted_nan_relu():
    """aten::relu exported as relu(x) + 0 * log(x): right where x > 0, NaN where PyTorch gives 0."""
    def nan_below_zero(g, x):
        return g.op("Add", g.op("Relu", x), g.op("Mul", g.op("Log", x), g.const(torch.tensor(0.0))))

    exporter.register_custom_op_symbolic("aten::relu", nan_below_zero, 13)
    yield
    exporter.unregister_custom_op_symbolic("aten::relu", 13)


def test_verify_localizes_a_planted_nan(planted_nan_relu):
    """Before: the local check's float64 arbitration measured finite positions only, passed the NaN node, and
    verify reported no diverging node."""
    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    result = exporter.verify(_Rectifier(), (x,), opset_version=13)
    assert not result.ok and not result.outputs.ok and "NaN/Inf" in result.outputs.message
    assert result.divergence is not None and result.divergence.origin.kind == "aten::relu"
    assert "NaN/Inf" in result.summary()
