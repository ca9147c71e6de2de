"""Cases of ``exporter/symbolics/rounding.py``: rounding, element-wise minimum and maximum, and clamping, moved here
from ``elementwise`` with their family."""

from __future__ import annotations

import torch

from opcases import OpCase
from opcases.elementwise import ints, pair, randn, with_specials


def halves(*shape):
    """Multiples of 0.5 (ties for round) plus a few non-ties."""
    def make(k):
        x = torch.randint(-10, 10, (shape[0] + k, *shape[1:])).float() / 2
        return (x + torch.tensor([0.0, 0.25, 0.0, -0.3]).repeat(x.numel() // 4 + 1)[: x.numel()].view(x.shape),)
    return make


CASES = [
    # rounding
    OpCase("floor", randn(2, 3), fn=torch.floor),
    OpCase("floor", ints(2, 3), sample="int", fn=torch.floor),
    OpCase("ceil", randn(2, 3), fn=torch.ceil),
    OpCase("round", halves(3, 4), sample="half_to_even", fn=torch.round),
    OpCase("round", lambda k: (torch.tensor([0.49999997, -0.49999997, 2.5, -2.5, 8388609.0, float("inf")] + [1.5] * k),),
           sample="edges", fn=torch.round),
    OpCase("round", lambda k: (torch.randn(3 + k, 4) * 100,), sample="decimals", fn=lambda x: torch.round(x, decimals=2)),
    OpCase("round", lambda k: (torch.randn(3 + k, 4) * 1000,), sample="negative_decimals",
           fn=lambda x: torch.round(x, decimals=-2)),
    OpCase("round", halves(3, 4, ), sample="float64_ties", fn=lambda x: torch.round(x.double())),
    OpCase("round", ints(2, 3), sample="int", fn=torch.round),
    OpCase("trunc", lambda k: (torch.randn(3 + k, 4) * 4,), fn=torch.trunc),
    OpCase("trunc", with_specials(3, 4), sample="nan_inf", fn=torch.trunc),
    OpCase("frac", lambda k: (torch.randn(3 + k, 4) * 4,), fn=torch.frac),
    # clamp, min, max
    OpCase("clamp", randn(3, 4), fn=lambda x: torch.clamp(x, -0.5, 0.5)),
    OpCase("clamp", randn(3, 4), sample="min_only", fn=lambda x: torch.clamp(x, min=0.1)),
    OpCase("clamp", randn(3, 4), sample="max_only", fn=lambda x: torch.clamp(x, max=0.1)),
    OpCase("clamp", lambda k: (torch.randn(3 + k, 4), torch.randn(4) - 1, torch.randn(4) + 1), sample="tensor_bounds",
           fn=lambda x, lo, hi: torch.clamp(x, lo, hi)),
    OpCase("clamp", ints(3, 4), sample="int", fn=lambda x: torch.clamp(x, -5, 5)),
    OpCase("clamp", ints(3, 4, dtype=torch.int32), sample="int32_min_only", fn=lambda x: torch.clamp(x, min=0)),
    OpCase("clamp", randn(3, 4, dtype=torch.float64), sample="float64", fn=lambda x: torch.clamp(x, -0.5, 0.5),
           known_failures={7: "ONNX Runtime has no double Clip/Max/Min kernel at opset 7"}),
    OpCase("clamp", ints(3, 4), sample="int_float_bound", fn=lambda x: torch.clamp(x, min=0.5)),
    OpCase("clip", randn(3, 4), fn=lambda x: torch.clip(x, -1.0, 1.0)),
    OpCase("clamp_min", randn(3, 4), fn=lambda x: torch.clamp_min(x, 0.2)),
    OpCase("clamp_max", ints(3, 4), fn=lambda x: torch.clamp_max(x, 2)),
    OpCase("minimum", pair((3, 4), (4,)), fn=torch.minimum),
    OpCase("minimum", pair((3, 4), (4,), dtype=torch.int64, low=-9, high=9), sample="int", fn=torch.minimum),
    OpCase("maximum", pair((3, 4), (4,)), fn=torch.maximum),
    OpCase("maximum", pair((3, 4), (4,), dtype=torch.int32, low=-9, high=9), sample="int32", fn=torch.maximum),
    OpCase("maximum", lambda k: (torch.rand(2 + k, 3) > 0.5, torch.rand(2 + k, 3) > 0.5), sample="bool",
           fn=torch.maximum),
    OpCase("fmin", lambda k: (with_specials(3, 4)(k)[0], torch.randn(3 + k, 4)), fn=torch.fmin, min_opset=9),
    OpCase("fmax", lambda k: (torch.randn(3 + k, 4), with_specials(3, 4)(k)[0]), fn=torch.fmax, min_opset=9),
]
