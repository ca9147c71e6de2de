"""Cases for lists whose length or indexing is only known at run time (ONNX sequences, opset 11+)."""

import torch

from opcases import OpCase


class _ListInLoop(torch.nn.Module):
    def forward(self, x):
        pieces = []
        for i in range(x.size(0)):
            pieces.append(x[i] * i)
        return torch.stack(pieces, 1), torch.cat(pieces, 0)


class _LenOfGrowingList(torch.nn.Module):
    def forward(self, x):
        items = [x]
        for _ in range(x.size(0)):
            items.append(x + len(items))
        return torch.cat(items, 0)


class _KnownListMethods(torch.nn.Module):
    """pop, del, insert, extend, += and + on a list of known length at known positions: resolved at export time."""

    def forward(self, x):
        res = [x[0], x[1], x[2]]
        popped = res.pop(1)
        last = res.pop()
        res.insert(0, x[3])
        res.insert(-1, popped * 2)
        res.insert(10, last)  # Python clamps the position: appends
        del res[-2]
        res.extend([x[4] + 1])
        res += [x[0] * 3]
        res = res + [popped]
        res[1] = res[1] - 5
        return torch.stack(res, 0), torch.ones(len(res))


class _RunTimeIndexListMethods(torch.nn.Module):
    """pop and del of a list of known length at positions computed from a size (run-time under dynamic axes)."""

    def forward(self, x):
        res = [x[:, 0], x[:, 1] * 2, x[:, 2] * 3, x[:, 3] * 4]
        i = x.size(0) - 3
        popped = res.pop(i)
        del res[i - 2]
        res.insert(i, popped + 1)
        return torch.stack(res, 0)


class _GrownListMethods(torch.nn.Module):
    """pop, del, insert, extend, += and item assignment on lists a loop grows (ONNX sequences)."""

    def forward(self, x):
        res = []
        for i in range(x.size(0)):
            res += [x[i] * (i + 1)]
        first = res.pop(0)
        last = res.pop()
        del res[1]
        res.insert(1, first + last)
        res.insert(-1, last)
        res.insert(-100, first * 5)  # Python clamps the position: prepends
        res.insert(100, first * 7)  # and here appends
        res.extend([last - 1, first - 2])
        res[-1] = res[-1] * 3
        return torch.cat(res, 0), torch.ones(len(res))


class _PopInLoop(torch.nn.Module):
    """Suite's test_list_pop_in_block/test_list_del_in_block: pops and deletes inside loops."""

    def forward(self, x):
        res = []
        elem = x[0] * 0
        for i in range(x.size(0)):
            res.append(x[i] + i)
        for _ in range(x.size(0) - 2):
            elem = elem + res.pop()
        for i in range(x.size(0)):
            res.append(x[i] * i)
            del res[0]
        res.append(elem)
        return torch.stack(res, 0)


class _TwoAppendsPerIteration(torch.nn.Module):
    """Two mutations of one list per iteration: the loop carries the list after both."""

    def forward(self, x):
        res = []
        for i in range(x.size(0)):
            res.append(x[i])
            res.append(x[i] * 2)
        return torch.stack(res, 0)


class _BoolsInNestedLoops(torch.nn.Module):
    """An empty list that nested loops fill with bools: its element type is learnt from the appends (it was float,
    each bool cast on the way in)."""

    def forward(self, x, y):
        res = []
        for i in range(x.size(0)):
            for j in range(x.size(1)):
                if i == j:
                    res.append(x[i, j] > y)
                else:
                    res.append(x[i, j] != y)
        return torch.stack(res, 0)


CASES = [
    OpCase("append", lambda k: (torch.randn(2 + k, 3, 4), torch.randn(4)), sample="bools_in_nested_loops",
           dynamic_min_opset=13, module=lambda: torch.jit.script(_BoolsInNestedLoops())),
    OpCase("pop", lambda k: (torch.randn(5, 3 + k),), sample="known_list",
           module=lambda: torch.jit.script(_KnownListMethods())),
    # Static exports fold x.size(0) into the positions; the dynamic one needs SequenceErase/SequenceInsert.
    OpCase("pop", lambda k: (torch.randn(5 + k, 4),), sample="run_time_position", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_RunTimeIndexListMethods())),
    # A list a loop grows by one append per iteration is the Loop's scan output split into a sequence from opset 11.
    OpCase("pop", lambda k: (torch.randn(5 + k, 3),), sample="grown_list", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_GrownListMethods())),
    OpCase("Delete", lambda k: (torch.randn(5 + k, 3),), sample="in_loops", dynamic_min_opset=13,
           module=lambda: torch.jit.script(_PopInLoop())),
    OpCase("append", lambda k: (torch.randn(3 + k, 2),), sample="twice_per_iteration", dynamic_min_opset=13,
           module=lambda: torch.jit.script(_TwoAppendsPerIteration())),

    # Loop-carried sequences: Loop's carried type V admits seq(tensor) from Loop-13 (ONNX Runtime enforces it); a
    # static export below 13 unrolls a loop whose trip count it knows, so only the dynamic one needs 13 (11 for a
    # list grown by one append per iteration: a scan output, split into a sequence where more than stack reads it).
    OpCase("append", lambda k: (torch.randn(3 + k, 4),), sample="list_in_loop", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_ListInLoop())),
    OpCase("append", lambda k: (torch.randn(2 + k, 3),), sample="len_of_growing_list", dynamic_min_opset=13,
           module=lambda: torch.jit.script(_LenOfGrowingList())),
]
