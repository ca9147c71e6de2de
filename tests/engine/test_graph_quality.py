"""Exported patterns that ONNX Runtime fuses: layer norm and exact gelu run as single fused kernels."""

from __future__ import annotations

import collections
import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import exporter


class _NormGelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(self.norm(x)))


@pytest.mark.parametrize("opset", [11, 16])
def test_onnx_runtime_fuses_exported_layer_norm_and_gelu(opset, tmp_path):
    model, x = _NormGelu().eval(), torch.randn(2, 5, 16)
    buffer = io.BytesIO()
    exporter.export(model, (x,), buffer, opset_version=opset, dynamo=False)
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    session = ort.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    optimized = collections.Counter(node.op_type for node in onnx.load(options.optimized_model_filepath).graph.node)
    assert optimized["LayerNormalization"] == 1 and optimized["Gelu"] + optimized["BiasGelu"] == 1, optimized
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
