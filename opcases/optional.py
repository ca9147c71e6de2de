"""Cases of ``exporter/symbolics/optional.py``: ``x is None`` on an ``Optional[Tensor]`` that a branch sets, refined
back to a tensor (``prim::unchecked_cast``). Only scripted code holds optionals (TorchScript's capture; torch.export
takes no ScriptModule); ``tests/engine/test_optional.py`` covers optional inputs, outputs and loops."""

from __future__ import annotations

import torch
from torch import Tensor

from opcases import OpCase


class _SetOnLongInputs(torch.nn.Module):
    """None unless the input has more than two rows: decided at run time where the rows are a dynamic axis."""

    def forward(self, x):
        y: Tensor | None = None
        if x.size(0) > 2:
            y = x * 2
        if y is None:
            return x - 1
        return y + 1


CASES = [
    OpCase("__is__", lambda k: (torch.randn(3 - 2 * k, 4),), sample="optional_set_by_branch",
           module=lambda: torch.jit.script(_SetOnLongInputs()), dynamic_min_opset=16),
]
