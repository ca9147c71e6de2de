"""Cases for scripted control flow (ONNX If / Loop), the number arithmetic around it, and in-place assignment."""

import torch

from op_tests.harness import OpCase


class _ForLoop(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc = acc + x[i] * i
        return acc


class _WhileLoop(torch.nn.Module):
    def forward(self, x):
        steps = 0
        while bool(x.abs().sum() < 50.0) and steps < 20:
            x = x * 1.5 + 0.1
            steps += 1
        return x


class _DataDependentIf(torch.nn.Module):
    def forward(self, x):
        if bool(x.mean() > 0):
            return x.relu() + 1
        return x * -2


class _NumberArithmetic(torch.nn.Module):
    def forward(self, x):
        n = x.size(0)
        scale = max(n // 2, 1) - min(n % 3, 1)
        return x * scale + float(n) / 4


class _NestedLoopIf(torch.nn.Module):
    def forward(self, x):
        out = x
        for i in range(x.size(0)):
            if i % 2 == 0:
                out = out + x[i]
            else:
                out = out - 1
        return out


class _LoopRowAssignment(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        for i in range(x.size(0)):
            out[i] = x[i] * (i + 1)
        return out


def _assign_row(data, row):
    data[-1] = row
    return data + 0


def _assign_block(data, block):
    data[1:, :2] = block
    return data + 0


def _assign_strided(data):
    data[:, ::2] = 0.5
    return data * 3


class _TwoInPlaceOpsPerIteration(torch.nn.Module):
    """A tensor from outside the loop mutated twice per iteration: the loop carries it after both."""

    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc.add_(x[i])
            acc.mul_(0.5)
        return acc


class _LoopOfNumbers(torch.nn.Module):
    """A loop over Python numbers only (here building the permutation) runs at export time; the second loop
    reads a tensor and stays an ONNX Loop."""

    def forward(self, x):
        perm: list[int] = []
        for i in range(x.dim()):
            perm.insert(0, i)
        total = x.sum() * 0
        for i in range(len(perm)):
            total = total + x.sum() * i
        return x.permute(perm), total


def _add_into_slice(data):
    data[:2].add_(1.0)
    return data + 0


CASES = [
    OpCase("loop", lambda k: (torch.randn(3 + 2 * k, 4),), sample="scripted_for",
           module=lambda: torch.jit.script(_ForLoop())),
    OpCase("loop", lambda k: (torch.randn(2 + k, 3),), sample="while",
           module=lambda: torch.jit.script(_WhileLoop())),
    OpCase("loop", lambda k: (torch.randn(4 + k, 3),), sample="nested_if",
           module=lambda: torch.jit.script(_NestedLoopIf())),
    OpCase("if", lambda k: (torch.randn(3, 2 + k) + (1.0 if k == 0 else -1.0),), sample="data_dependent",
           module=lambda: torch.jit.script(_DataDependentIf())),
    OpCase("floordiv", lambda k: (torch.randn(5 + 2 * k, 2),), sample="numbers",
           module=lambda: torch.jit.script(_NumberArithmetic())),
    OpCase("select_scatter", lambda k: (torch.randn(3 + k, 4), torch.randn(4)), sample="negative_index",
           fn=_assign_row),
    # Static only: with a dynamic row count, writing at the loop index cuts the tensor at a run-time position,
    # which needs Slice with input bounds (opset 10); the harness has no dynamic-only minimum opset, so
    # tests/test_scripting.py checks the dynamic export (passes from 10, the right error below).
    OpCase("select_scatter", lambda k: (torch.randn(4 + k, 3),), sample="loop_index", dynamic=False,
           module=lambda: torch.jit.script(_LoopRowAssignment())),
    OpCase("slice_scatter", lambda k: (torch.randn(3, 4 + k), torch.randn(2, 2)), sample="block",
           fn=_assign_block),
    OpCase("slice_scatter", lambda k: (torch.randn(2 + k, 5),), sample="strided", fn=_assign_strided),
    OpCase("add_", lambda k: (torch.randn(3 + k, 2),), sample="into_slice", fn=_add_into_slice),
    # x.set_(y): x becomes y (its shape too); x itself is then unused and not an input of the export.
    OpCase("loop", lambda k: (torch.randn(2 + k, 3, 4),), sample="python_numbers_only",
           module=lambda: torch.jit.script(_LoopOfNumbers())),
    OpCase("set_", lambda k: (torch.ones(2, 3), torch.randn(4 + k, 6)), fn=lambda x, y: x.set_(y) * 2),
    OpCase("mul_", lambda k: (torch.randn(3 + k, 2),), sample="after_add_in_loop",
           module=lambda: torch.jit.script(_TwoInPlaceOpsPerIteration())),
]


def _assign_constant_row_from_size(x):
    """``x[:, n:] = row`` with ``n = x.size(0)``: a trace records the row expanded to the traced size of the view."""
    x = x.clone()
    x[:, x.size(0):] = torch.tensor([1.0, 2.0, 3.0])
    return x


CASES += [
    OpCase("copy_", lambda k: (torch.randn(2 + k, 5 - k, 3),), sample="broadcast_constant_run_time_view",
           fn=_assign_constant_row_from_size, dynamic_min_opset=10),
]


def _assign_run_time_slice(x, start, stop, step):
    """``x[start:stop:step] = ...`` with all three computed at run time (graph inputs): Slice with input steps reads
    the view (opset 10); the write-back gathers from Concat(x, new) at computed positions."""
    x = x.clone()
    x[start:stop:step] = x[start:stop:step] * 10 + 1
    return x


def _assign_strided_rows(x):
    x = x.clone()
    x[1::2] = 0.5
    return x


def _run_time_slice_inputs(k):
    return torch.randn(9 + 4 * k, 3), torch.tensor([1, -7][k]), torch.tensor([8, 100][k]), torch.tensor([2, 3][k])


CASES += [
    OpCase("slice", _run_time_slice_inputs, sample="run_time_step", min_opset=10, fn=lambda x, a, b, c: x[a:b:c] * 2),
    OpCase("slice_scatter", _run_time_slice_inputs, sample="run_time_step", min_opset=10, fn=_assign_run_time_slice),
    OpCase("slice_scatter", lambda k: (torch.randn(5 + 2 * k, 3),), sample="strided_run_time_size",
           fn=_assign_strided_rows, dynamic_min_opset=10),
]


class _TensorOfLoopBuiltList(torch.nn.Module):
    """``torch.tensor`` of a list of numbers a loop builds: the sequence's items stacked (ConcatFromSequence)."""

    def forward(self, x):
        counts = [i * 2 for i in range(x.size(0))]
        return x * torch.tensor(counts, dtype=torch.float).unsqueeze(1)


class _StackOfLoopCarriedList(torch.nn.Module):
    """A list grown with ``+=`` in a loop and stacked: the stack's rank comes from the items' shape the sequence
    carries (the transpose needs it)."""

    def forward(self, x):
        outputs = []
        for i in range(x.size(0)):
            outputs += [x[i] * i]
        return torch.stack(outputs).transpose(0, 1)


class _InterpolateByScale(torch.nn.Module):
    """Scripted F.interpolate computes the output size in a loop over the spatial dims (``input.size(i + 2)``)."""

    def forward(self, x):
        return torch.nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True,
                                               align_corners=False)


CASES += [
    # Dynamic: the loop runs at run time; a list read other than by stack is a split scan output from 11.
    OpCase("tensor", lambda k: (torch.randn(3 + k, 2),), sample="loop_built_list", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_TensorOfLoopBuiltList())),
    OpCase("stack", lambda k: (torch.randn(3 + k, 4),), sample="loop_carried_list", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_StackOfLoopCarriedList())),
    OpCase("upsample_bilinear2d", lambda k: (torch.randn(1, 2, 4 + k, 6),), sample="scripted_scale_factor",
           dynamic_min_opset=11, module=lambda: torch.jit.script(_InterpolateByScale())),
]
