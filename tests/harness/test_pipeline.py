"""The one pipeline of an exported case (``conformance.pipeline``) and the one arbitration policy
(``conformance.arbitration``): each failure lands in the row as the same status at the same stage whichever caller
meets it, and a disagreement stands unless an independent reference clears the export."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from conformance.arbitration import Disagreement, Float64Run, arbitrate
from conformance.pipeline import compare_stage, export_stage, run_stage, session_stage
from conformance.schema import ERROR_LIMIT, empty_row
from exporter.errors import CaptureError, CheckerError, UnsupportedOperatorError
from exporter.numerics import compare_arrays


def _tolerance(scale: float) -> tuple[float, float]:
    return 1e-3, 1e-5


def _raising(error: Exception):
    def raise_it(*_):
        raise error

    return raise_it


@pytest.mark.parametrize("error, status, stage", [
    (CaptureError("trace failed"), "export_error", "capture"),
    (UnsupportedOperatorError("aten::roi_align", 9, min_opset=10), "unsupported", "convert"),
    (CheckerError("the exported model fails the ONNX checker"), "checker_error", "checker"),
    (ValueError("a symbolic's own bug"), "export_error", "convert"),
])
def test_every_export_failure_has_one_status_and_stage(error, status, stage):
    row = empty_row()
    assert export_stage(row, _raising(error)) is None
    assert (row["status"], row["stage"]) == (status, stage)
    assert str(error) in row["error"] and row["export_seconds"] is not None


def test_an_unexpected_error_while_capturing_apart_is_at_the_capture_stage_with_its_traceback():
    row = empty_row()
    assert export_stage(row, lambda captured: captured, capture=_raising(KeyError("input_0"))) is None
    assert (row["status"], row["stage"]) == ("export_error", "capture")
    assert row["error"].startswith("KeyError: 'input_0'\nTraceback")


def test_the_caller_explains_a_failure_after_the_stage_recorded_it():
    row, seen = empty_row(), []

    def explain(failed_row, error):
        seen.append((failed_row["status"], type(error).__name__))
        failed_row["reason"] = "expected below opset 10"

    export_stage(row, _raising(UnsupportedOperatorError("aten::roi_align", 9, min_opset=10)), explain=explain)
    assert seen == [("unsupported", "UnsupportedOperatorError")] and row["reason"] == "expected below opset 10"


def test_a_long_error_is_truncated_as_rows_hold_it():
    row = empty_row()
    export_stage(row, _raising(CheckerError("x" * (3 * ERROR_LIMIT))))
    assert len(row["error"]) < 2 * ERROR_LIMIT and "\n...\n" in row["error"]


def test_the_capture_is_handed_to_the_export_and_the_model_is_recorded():
    class Exported:
        model_proto = _add_model()
        workarounds = ("cast_around_topk",)

    row = empty_row()
    handed = []
    result = export_stage(row, lambda captured: handed.append(captured) or Exported(), capture=lambda: "the capture")
    assert result is not None and handed == ["the capture"]
    assert (row["node_count"], row["op_types"], row["workarounds"]) == (1, ["Add"], ["cast_around_topk"])


def _add_model(opset: int = 13):
    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add",
                              [value("x", TensorProto.FLOAT, [2]), value("y", TensorProto.FLOAT, [2])],
                              [value("z", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


def test_a_session_that_cannot_load_is_an_ort_error_at_ort_load():
    row = empty_row()
    assert session_stage(row, b"not a model", "cpu") is None
    assert (row["status"], row["stage"]) == ("ort_error", "ort_load") and row["error"]


def test_a_failed_run_is_an_ort_error_at_ort_run_led_by_its_check_label():
    row = empty_row()
    session = session_stage(row, _add_model().SerializeToString(), "cpu")
    assert session is not None and row["session_providers"] == ["CPUExecutionProvider"] and row["ort_level"]
    x = np.ones(2, np.float32)
    assert run_stage(row, session, {"x": x, "y": x}, "input 0") is not None and row["ort_ms"] is not None
    assert run_stage(row, session, {"x": x, "y": np.ones(3, np.float32)}, "dynamic input 1") is None
    assert (row["status"], row["stage"]) == ("ort_error", "ort_run")
    assert row["error"].startswith("dynamic input 1: ")


def _sub_model(names=("x", "y")):
    """x - 2 y: an order of its inputs fed the other way round gives other numbers."""
    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Constant", [], ["two"], value_float=2.0),
                               helper.make_node("Mul", [names[1], "two"], ["twice"]),
                               helper.make_node("Sub", [names[0], "twice"], ["z"])], "sub",
                              [value(name, TensorProto.FLOAT, [2]) for name in names],
                              [value("z", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()


def test_a_run_is_fed_by_name_whatever_the_order_of_the_callers_values():
    row = empty_row()
    session = session_stage(row, _sub_model(), "cpu")
    x, y = np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)
    # the caller's values in another order than the graph's, and one the export dropped (no graph input of its name)
    (z,) = run_stage(row, session, {"unused": np.zeros(5, np.float32), "y": y, "x": x})
    assert z.tolist() == (x - 2 * y).tolist()


def test_a_graph_input_that_names_none_of_the_callers_values_is_a_mismatch_naming_it():
    row = empty_row()
    session = session_stage(row, _sub_model(("x", "mask")), "cpu")
    x = np.ones(2, np.float32)
    assert run_stage(row, session, {"x": x, "y": x}, "input 0") is None
    assert (row["status"], row["stage"]) == ("mismatch", "ort_run")
    assert row["error"].startswith("input 0: the model's graph inputs are not the caller's arguments")
    assert "['mask']" in row["error"] and "not in the model: ['y']" in row["error"]


def test_the_comparison_merges_the_checks_into_one_verdict_led_by_the_first_failing_label():
    expected = [np.array([1.0, 2.0], np.float32)]
    good = compare_arrays(expected, [np.array([1.0, 2.0], np.float32)], _tolerance)
    bad = compare_arrays(expected, [np.array([1.0, 2.5], np.float32)], _tolerance)
    row = empty_row()
    merged = compare_stage(row, [("input 0", good), ("dynamic input 1", bad)])
    assert not merged.ok and (row["status"], row["stage"]) == ("mismatch", "accuracy")
    assert row["error"].startswith("dynamic input 1: output 0: max abs error 0.5")
    assert row["max_abs_error"] == pytest.approx(0.5)
    passing = empty_row()
    assert compare_stage(passing, [("", good)]).ok and (passing["status"], passing["error"]) == ("pass", "")


def _rounding_disagreement():
    exact = [np.linspace(-2, 2, 1000)]
    torch_fp32 = [(exact[0] + 3e-4 * np.sin(np.arange(1000))).astype(np.float32)]
    onnx_fp32 = [(exact[0] - 4e-4 * np.cos(np.arange(1000))).astype(np.float32)]
    return exact, Disagreement([torch_fp32], [onnx_fp32], _tolerance, 1e-5)


def test_a_float64_run_as_far_from_pytorch_as_from_onnx_runtime_clears_the_export():
    exact, disagreement = _rounding_disagreement()
    ruling = arbitrate(disagreement, Float64Run(lambda: [exact]))
    assert ruling.status == "pass" and "float64 arbitration:" in ruling.text


def test_a_disagreement_stands_where_the_float64_run_sides_with_pytorch_or_cannot_run():
    exact, disagreement = _rounding_disagreement()
    wrong = Disagreement(disagreement.expected, [[(exact[0] * 1.01).astype(np.float32)]], _tolerance, 1e-5)
    assert arbitrate(wrong, Float64Run(lambda: [exact])).status == "mismatch"
    impossible = arbitrate(disagreement, Float64Run(_raising(RuntimeError("no double kernel"))))
    assert impossible.status == "mismatch" and "float64 arbitration impossible: RuntimeError" in impossible.text


def test_a_lost_output_is_a_mismatch_in_words_whatever_the_float64_run_says():
    exact = [np.linspace(-2, 2, 10), np.linspace(0, 1, 4)]
    kept = exact[0].astype(np.float32)
    disagreement = Disagreement([[kept, exact[1].astype(np.float32)]], [[kept]], _tolerance, 1e-5)
    ruling = arbitrate(disagreement, Float64Run(lambda: [exact]))
    assert ruling.status == "mismatch" and "output counts differ" in ruling.text

