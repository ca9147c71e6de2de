"""Cases for lists whose length or indexing is only known at run time (ONNX sequences, opset 11+)."""

import torch

from op_tests.harness import OpCase


class _ListInLoop(torch.nn.Module):
    def forward(self, x):
        pieces = []
        for i in range(x.size(0)):
            pieces.append(x[i] * i)
        return torch.stack(pieces, 1), torch.cat(pieces, 0)


class _ListIndexedInLoop(torch.nn.Module):
    def forward(self, x):
        parts = x.split(2, 0)
        acc = torch.zeros_like(parts[0])
        for i in range(len(parts)):
            acc = acc + parts[-1 - i] * i
        return acc


class _LenOfGrowingList(torch.nn.Module):
    def forward(self, x):
        items = [x]
        for _ in range(x.size(0)):
            items.append(x + len(items))
        return torch.cat(items, 0)


class _TwoAppendsPerIteration(torch.nn.Module):
    """Two mutations of one list per iteration: the loop carries the list after both."""

    def forward(self, x):
        res = []
        for i in range(x.size(0)):
            res.append(x[i])
            res.append(x[i] * 2)
        return torch.stack(res, 0)


CASES = [
    OpCase("append", lambda k: (torch.randn(3 + k, 2),), sample="twice_per_iteration", min_opset=13,
           module=lambda: torch.jit.script(_TwoAppendsPerIteration())),
    # Loop-carried sequences: Loop's carried type V admits seq(tensor) from Loop-13 (ONNX Runtime enforces it).
    OpCase("append", lambda k: (torch.randn(3 + k, 4),), sample="list_in_loop", min_opset=13,
           module=lambda: torch.jit.script(_ListInLoop())),
    OpCase("append", lambda k: (torch.randn(2 + k, 3),), sample="len_of_growing_list", min_opset=13,
           module=lambda: torch.jit.script(_LenOfGrowingList())),
    # A list of known length indexed at a run-time position needs no sequence: it is stacked and gathered.
    OpCase("__getitem__", lambda k: (torch.randn(8, 3),), sample="run_time_index",
           module=lambda: torch.jit.script(_ListIndexedInLoop()), dynamic=False),
]
