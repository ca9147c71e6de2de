"""Cases of ``exporter/symbolics/prim.py``: TorchScript's lists, tuples and numbers and the conversions between them
(``aten::tensor``, ``prim::ListConstruct``, ``__getitem__`` of a list, ``.item()``)."""

from __future__ import annotations

import torch

from opcases import OpCase, random_tensor


class _TensorOfLoopBuiltList(torch.nn.Module):
    """``torch.tensor`` of a list of numbers a loop builds: the sequence's items stacked (ConcatFromSequence)."""

    def forward(self, x):
        counts = [i * 2 for i in range(x.size(0))]
        return x * torch.tensor(counts, dtype=torch.float).unsqueeze(1)


class _SizesItems(torch.nn.Module):
    """Items of ``x.shape`` by index (aten::__getitem__.t) and by unpacking (prim::ListUnpack) in scripted code."""

    def forward(self, x):
        a, b, c = x.shape
        return x.new_ones((c, x.shape[-3], b)) * x.sum() + a


class _ListIndexedInLoop(torch.nn.Module):
    def forward(self, x):
        parts = x.split(2, 0)
        acc = torch.zeros_like(parts[0])
        for i in range(len(parts)):
            acc = acc + parts[-1 - i] * i
        return acc


class _SizesAsTensor(torch.nn.Module):
    """Scripted, because tracing records torch.tensor of Python numbers as a constant."""

    def forward(self, x):
        return torch.tensor([x.size(0), x.size(1)])


CASES = [
    OpCase("__getitem__", lambda k: (random_tensor(2 + k, 3, 4 + k),), sample="scripted_sizes_list",
           module=lambda: torch.jit.script(_SizesItems())),
    OpCase("contiguous", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.t().contiguous()),
    # Dynamic: the loop runs at run time; a list read other than by stack is a split scan output from 11.
    OpCase("tensor", lambda k: (torch.randn(3 + k, 2),), sample="loop_built_list", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_TensorOfLoopBuiltList())),
    OpCase("scalar_tensor", lambda k: (random_tensor(3 + k, 2),), fn=lambda x: x * torch.scalar_tensor(x.size(0))),
    OpCase("tensor", lambda k: (random_tensor(3 + k, 2),), module=lambda: torch.jit.script(_SizesAsTensor())),
    OpCase("tensor", lambda k: (random_tensor(3 + k, 2),), sample="constant", fn=lambda x: x + torch.tensor([1.0, 2.0])),
    # A list of known length indexed at a run-time position needs no sequence: it is stacked and gathered.
    OpCase("__getitem__", lambda k: (torch.randn(8, 3),), sample="run_time_index",
           module=lambda: torch.jit.script(_ListIndexedInLoop()), dynamic=False),
]
