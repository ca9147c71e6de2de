"""Probes for the workarounds of nn layers, pooling, normalization, rnn, linear algebra, reductions and quantized
ops."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.engine.workaround_probes import Probe


def _quantized_linear() -> torch.nn.Module:
    """quantize -> quantized Linear with a bias -> dequantize, on grids where every step is exact."""
    linear = torch.ao.nn.quantized.Linear(3, 2)
    weight = torch.quantize_per_tensor(torch.tensor([[1.0, 0.5, 0.0], [0.0, -1.0, 0.25]]), 1 / 32, 0, torch.qint8)
    linear.set_weight_bias(weight, torch.tensor([0.5, -0.25]))
    linear.scale, linear.zero_point = 1 / 8, 128
    return _dequantized(linear)


def _per_channel_quantized_linear() -> torch.nn.Module:
    """quantize -> quantized Linear whose per-channel weight has a channel 256 times finer than the other ->
    dequantize, on grids where every step is exact. Re-quantized per tensor, the fine channel's weights round to 0."""
    linear = torch.ao.nn.quantized.Linear(3, 2)
    weight = torch.quantize_per_channel(torch.tensor([[2.0, -1.0, 4.0], [1 / 64, -1 / 32, 3 / 64]]),
                                        torch.tensor([1 / 16, 1 / 4096], dtype=torch.float64),
                                        torch.tensor([0, 0]), 0, torch.qint8)
    linear.set_weight_bias(weight, torch.tensor([0.5, -0.25]))
    linear.scale, linear.zero_point = 1 / 64, 128
    return _dequantized(linear)


def _dequantized(layer: torch.nn.Module) -> torch.nn.Module:
    class Quantized(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return self.layer(torch.quantize_per_tensor(x, 1 / 8, 128, torch.quint8)).dequantize()

    return Quantized()


PROBES = [
    Probe("integer_gemm_as_matmul", fn=lambda c, a, b: torch.addmm(c, a, b),
          inputs=lambda: (torch.ones(2, 4, dtype=torch.int64), torch.arange(6).reshape(2, 3),
                          torch.arange(12).reshape(3, 4)), opset=13, gap="rejects"),
    Probe("instance_norm_double_decomposed", fn=lambda x: F.instance_norm(x),
          inputs=lambda: (torch.arange(18, dtype=torch.float64).reshape(1, 2, 3, 3) ** 2,), opset=13, gap="rejects"),
    Probe("batch_norm_training_decomposed", fn=torch.nn.BatchNorm1d(3),  # as made: mean 0, variance 1
          inputs=lambda: (torch.tensor([[1.0, -2.0, 0.5], [3.0, 4.0, -1.5], [-0.5, 2.0, 2.5], [2.0, 0.0, 1.0]]),),
          opset=14, gap="diverges", training=True),
    Probe("bfloat16_extremes_in_float", fn=lambda x: x.to(torch.bfloat16).amax(1).float(),
          inputs=lambda: (torch.tensor([[1.5, -2.0, 0.25], [3.0, 8.0, -0.5]]),), opset=13, gap="rejects"),
    Probe("qdq_bias_after_op_at_opset_10", fn=_quantized_linear(),
          inputs=lambda: (torch.tensor([[1.0, -0.5, 2.0], [0.25, 0.75, -1.5]]),), opset=10, gap="rejects",
          reference_opset=19),
    Probe("qdq_float_weight_bias_after_op", fn=_per_channel_quantized_linear(),
          inputs=lambda: (torch.tensor([[1.0, -0.5, 2.0], [0.25, 0.75, -1.5]]),), opset=11, gap="diverges",
          reference_opset=19),
]
