"""The exporter's model check: the checker's full check on a skeleton whose large weights are graph inputs, plus
the checker's own payload rule on those weights. It must reject what onnx.checker rejects on the whole model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from exporter import validate
from exporter.errors import CheckerError


def _model(weight: TensorProto, output: str = "y", weight_as_input: bool = False) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])
    y = helper.make_tensor_value_info(output, TensorProto.FLOAT, [16, 32])
    inputs = [x] + ([helper.make_tensor_value_info("w", TensorProto.FLOAT, [16, 32])] if weight_as_input else [])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", inputs, [y], initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _weight() -> TensorProto:
    return numpy_helper.from_array(np.ones((16, 32), np.float32), "w")  # 2 KiB: left out of the skeleton


def _rejected_by_onnx(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model.SerializeToString(), full_check=True)
    except Exception:
        return True
    return False


@pytest.mark.parametrize("as_input", [False, True])
def test_a_valid_model_passes_and_its_weight_stays_out_of_the_skeleton(as_input):
    model = _model(_weight(), weight_as_input=as_input)
    validate.check_model(model)
    skeleton, detached = validate._skeleton(model)
    assert [t.name for t in detached] == ["w"] and not skeleton.graph.initializer
    assert [i.name for i in skeleton.graph.input] == ["x", "w"]
    assert len(model.graph.initializer) == 1  # the model itself is unchanged


def test_a_graph_error_is_still_the_checkers():
    model = _model(_weight(), output="not_produced")
    assert _rejected_by_onnx(model)
    with pytest.raises(CheckerError, match="not_produced"):
        validate.check_model(model)


def test_a_weight_whose_payload_is_short_is_rejected_as_the_checker_rejects_it():
    weight = _weight()
    weight.raw_data = weight.raw_data[:-4]
    model = _model(weight)
    assert _rejected_by_onnx(model)
    with pytest.raises(CheckerError, match="raw data"):
        validate.check_model(model)


def test_a_weight_with_two_data_fields_is_rejected_as_the_checker_rejects_it():
    weight = _weight()
    weight.float_data.extend([1.0] * 512)
    model = _model(weight)
    assert _rejected_by_onnx(model)
    with pytest.raises(CheckerError, match="data fields"):
        validate.check_model(model)


def test_a_shape_error_involving_a_detached_weight_is_found_by_shape_inference():
    weight = numpy_helper.from_array(np.ones((16, 33), np.float32), "w")  # Add cannot broadcast 32 with 33
    model = _model(weight)
    assert _rejected_by_onnx(model)
    with pytest.raises(CheckerError):
        validate.check_model(model)
