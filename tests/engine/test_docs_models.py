"""The docs' AlexNet example and ResNet-18 with dynamic batch, end to end in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
import torchvision

from tests.conftest import export_bytes, run_onnx

ALEXNET_INPUT_NAMES = ["actual_input_1"] + [f"learned_{i}" for i in range(16)]


@pytest.fixture(scope="module")
def alexnet():
    torch.manual_seed(0)
    return torchvision.models.alexnet(weights=None).eval()


@pytest.fixture(scope="module")
def resnet18():
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


@pytest.mark.parametrize("opset", [7, 9, 11, 14, 16])
def test_alexnet_docs_example(alexnet, opset):
    x = torch.randn(2, 3, 224, 224)
    data, _ = export_bytes(alexnet, x, input_names=ALEXNET_INPUT_NAMES, output_names=["output1"], opset_version=opset)
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].name == "actual_input_1"
    assert [o.name for o in proto.graph.output] == ["output1"]
    assert {t.name for t in proto.graph.initializer if t.name.startswith("learned_")} == set(ALEXNET_INPUT_NAMES[1:])
    (out,) = run_onnx(data, {"actual_input_1": x.numpy()})
    with torch.no_grad():
        expected = alexnet(x).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("opset", [9, 11, 14, 16])
def test_resnet18_dynamic_batch(resnet18, opset):
    data, _ = export_bytes(resnet18, torch.randn(1, 3, 224, 224), input_names=["x"], output_names=["y"],
                           dynamic_axes={"x": {0: "batch"}, "y": [0]}, opset_version=opset)
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"
    x4 = torch.randn(4, 3, 224, 224)
    (out,) = run_onnx(data, {"x": x4.numpy()})
    with torch.no_grad():
        expected = resnet18(x4).numpy()
    assert out.shape == (4, 1000)
    np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-5)
