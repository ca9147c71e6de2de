"""Probes for the workarounds of nn layers, pooling, normalization, rnn, linear algebra, reductions and quantized
ops."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.workaround_probes import Probe


PROBES = [
    Probe("integer_gemm_as_matmul", fn=lambda c, a, b: torch.addmm(c, a, b),
          inputs=lambda: (torch.ones(2, 4, dtype=torch.int64), torch.arange(6).reshape(2, 3),
                          torch.arange(12).reshape(3, 4)), opset=13, gap="rejects"),
    Probe("instance_norm_double_decomposed", fn=lambda x: F.instance_norm(x),
          inputs=lambda: (torch.arange(18, dtype=torch.float64).reshape(1, 2, 3, 3) ** 2,), opset=13, gap="rejects"),
    Probe("bfloat16_extremes_in_float", fn=lambda x: x.to(torch.bfloat16).amax(1).float(),
          inputs=lambda: (torch.tensor([[1.5, -2.0, 0.25], [3.0, 8.0, -0.5]]),), opset=13, gap="rejects"),
]
