"""Probes for the elementwise, comparison, activations, casting, random, distance and losses workarounds."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.engine.workaround_probes import Probe


def _doubles():
    return (torch.linspace(-0.9, 0.9, 12, dtype=torch.float64).reshape(3, 4),)


PROBES = [
    Probe("double_math_in_float32", fn=torch.asin, inputs=_doubles, opset=13),
    Probe("double_math_in_float32", fn=torch.erf, inputs=_doubles, opset=9),
    Probe("double_math_by_identity", fn=torch.tan, inputs=_doubles, opset=13),
    Probe("double_math_by_identity", fn=torch.atanh, inputs=_doubles, opset=9),
    Probe("activations_decomposed_for_double", fn=F.elu, inputs=_doubles, opset=13),
    Probe("activations_decomposed_for_double", fn=lambda x: F.leaky_relu(x, 0.1), inputs=_doubles, opset=15),
    Probe("activations_decomposed_for_double", fn=lambda x: F.leaky_relu(x, 0.1), inputs=_doubles, opset=19),
    Probe("activations_decomposed_for_double", fn=F.gelu, inputs=_doubles, opset=20),
    Probe("activations_decomposed_for_double", fn=F.mish, inputs=_doubles, opset=20),
    Probe("activations_decomposed_for_double", fn=lambda x: F.softshrink(x, 1000.0), gap="diverges",
          inputs=lambda: (torch.tensor([1000.0001, -1000.0003, 5.0, 1000.5], dtype=torch.float64),), opset=13),
    Probe("clip_double_as_max_min", fn=lambda x: torch.clamp(x, -0.5, 0.5), inputs=_doubles, opset=11),
    Probe("isnan_bfloat16_in_float", fn=lambda x: torch.isnan(x.bfloat16()),
          inputs=lambda: (torch.tensor([1.0, float("nan"), float("inf"), -2.0]),), opset=13),
    # Falcon's ALiBi slopes: a bfloat16 constant times int64 positions.
    *(Probe("bfloat16_arithmetic_in_float", fn=lambda x: (x.bfloat16() * torch.arange(4)).float(),
            inputs=lambda: (torch.tensor([1.3, -2.7, 0.1, 3.3]),), opset=opset)
      # 22 widened most ONNX ops to bfloat16, 26 is the newest: ONNX Runtime 1.31 has no kernel at either
      # (python -m tests.engine.workaround_probes.bfloat16_kernels prints the whole table)
      for opset in (13, 22, 26)),
]
