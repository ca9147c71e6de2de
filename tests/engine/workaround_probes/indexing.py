"""Probes for the workarounds of indexing, in-place, sorting and torchvision ops."""

from __future__ import annotations

import torch

from tests.engine.workaround_probes import Probe

PROBES = [
    Probe("nonzero_as_comparison", fn=lambda x: torch.nonzero(x),
          inputs=lambda: (torch.tensor([[0, 3, -2], [5, 0, 0]], dtype=torch.int8),), opset=13, gap="rejects"),
    Probe("unique_as_int64", fn=lambda x: torch.unique(x, return_inverse=True, return_counts=True),
          inputs=lambda: (torch.tensor([4, -1, 4, 7, -1, 4], dtype=torch.int32),), opset=11, gap="rejects"),
    Probe("scatter_extremes_of_bools_as_uint8", fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amax"),
          inputs=lambda: (torch.tensor([[False, True, False]]), torch.tensor([[0, 2]]), torch.tensor([[True, True]])),
          opset=18, gap="rejects"),
]
