"""Probes for the workarounds of shape, tensor factories, sequence, control flow, prim, resize and attention."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.engine.workaround_probes import Probe


def _rand(*shape: int, dtype=torch.float32) -> torch.Tensor:
    """The same values on every call (the test calls ``inputs`` once for PyTorch, once for the runtimes)."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


@torch.jit.script
def _scaled_by_smaller_total(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # min of two Python floats: prim::min on doubles computed at run time
    return x * min(float(x.sum()), float(y.sum()))


PROBES = [
    Probe("depth_to_space_integers", fn=lambda x: F.pixel_shuffle(x, 2),
          inputs=lambda: (torch.arange(32, dtype=torch.int64).reshape(1, 8, 2, 2),), opset=11),
    Probe("min_max_6_doubles", fn=_scaled_by_smaller_total,
          inputs=lambda: (_rand(3, 4), _rand(2, 5)), opset=7),
    Probe("resize_doubles", fn=lambda x: F.interpolate(x, scale_factor=2.0, mode="bilinear"),
          inputs=lambda: (_rand(1, 2, 3, 4, dtype=torch.float64),), opset=11),
    Probe("circular_pad_bfloat16_by_slices", fn=lambda x: F.pad(x.bfloat16(), (1, 2), mode="circular").float(),
          inputs=lambda: (_rand(1, 2, 4),), opset=19),
]
