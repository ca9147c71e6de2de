"""Groupwise quantization (``quantized_decomposed`` per-channel-group ops) through both captures: from opset 21 a
blocked DequantizeLinear whose constant weight is stored in 4 bits (INT4, or UINT4 for 0..15 values), below it the
arithmetic written out; every form equals PyTorch's dequantized weight bit for bit on ONNX Runtime."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)
from onnx import TensorProto

import exporter
from exporter.errors import UnsupportedOperatorError


class _Weight(torch.nn.Module):
    def __init__(self, low, high, integer, zero_points):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.register_buffer("weight", torch.randint(low, high + 1, (8, 64), generator=generator).to(integer))
        self.register_buffer("scales", torch.rand(8, 4, generator=generator) / 8 + 0.01)
        points = torch.randint(max(low, -2), min(high, 2) + 1, (8, 4), generator=generator, dtype=torch.int32)
        self.register_buffer("zero_points", points if zero_points else None)
        self.low, self.high, self.integer = low, high, integer

    def forward(self, x):
        return x * torch.ops.quantized_decomposed.dequantize_per_channel_group(
            self.weight, self.scales, self.zero_points, self.low, self.high, self.integer, 16, torch.float32)


def _exported(module, opset, dynamo):
    buffer = io.BytesIO()
    x = torch.tensor(1.0)
    exporter.export(module, (x,), buffer, opset_version=opset, dynamo=dynamo, input_names=["x"])
    model = onnx.load_from_string(buffer.getvalue())
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": x.numpy()})[0]
    with torch.no_grad():
        np.testing.assert_array_equal(got, module(x).numpy())
    return model


def _tensor_types(model):
    tensors = list(model.graph.initializer)
    tensors += [a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    return {t.data_type for t in tensors}


@pytest.mark.parametrize("dynamo", [False, True])
@pytest.mark.parametrize("low, high, integer, zero_points, stored", [
    (-8, 7, torch.int8, True, TensorProto.INT4),
    (0, 15, torch.uint8, False, TensorProto.UINT4),
    (-100, 100, torch.int8, True, TensorProto.INT8),  # values wider than 4 bits stay 8 bits
])
def test_blocked_dequantize_at_21(low, high, integer, zero_points, stored, dynamo):
    model = _exported(_Weight(low, high, integer, zero_points), 21, dynamo)
    [node] = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    attributes = {a.name: a.i for a in node.attribute}
    assert attributes == {"axis": 1, "block_size": 16}
    assert stored in _tensor_types(model)
    assert model.ir_version >= 10


@pytest.mark.parametrize("dynamo", [False, True])
def test_written_out_below_21(dynamo):
    model = _exported(_Weight(-8, 7, torch.int8, True), 20, dynamo)
    assert "DequantizeLinear" not in {n.op_type for n in model.graph.node}
    assert not _tensor_types(model) & {TensorProto.INT4, TensorProto.UINT4}


def test_quantize_needs_round():
    fn = torch.ops.quantized_decomposed.quantize_per_channel_group

    class Quantize(torch.nn.Module):
        def forward(self, x):
            return fn(x, torch.full((2, 2), 0.1), torch.zeros(2, 2, dtype=torch.int32), -8, 7, torch.int8, 32)

    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 11"):
        exporter.export(Quantize(), (torch.randn(2, 64),), io.BytesIO(), opset_version=10, dynamo=False)
