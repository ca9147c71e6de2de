"""Reading back a repro written as an ONNX backend test (``model.onnx``, ``test_data_set_0/input_k.pb``,
``output_0.pb``), as ONNX's own test runner would."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator


def run_backend_test(directory) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """(the checked model, what onnx.reference computes from the stored inputs, the stored expected output)."""
    model = onnx.load(os.path.join(directory, "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    data = os.path.join(directory, "test_data_set_0")
    feeds = {}
    for k in range(len(model.graph.input)):
        tensor = onnx.load_tensor(os.path.join(data, f"input_{k}.pb"))
        feeds[tensor.name] = numpy_helper.to_array(tensor)
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
    return model, ReferenceEvaluator(model).run(None, feeds)[0], expected
