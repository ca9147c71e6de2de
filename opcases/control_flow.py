"""Cases for scripted control flow (ONNX If / Loop), the number arithmetic around it, and in-place assignment."""

import torch

from opcases import OpCase


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


class _TwoInPlaceOpsPerIteration(torch.nn.Module):
    """A tensor from outside the loop mutated twice per iteration: the loop carries it after both."""

    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc.add_(x[i])
            acc.mul_(0.5)
        return acc


def _add_into_slice(data):
    data[:2].add_(1.0)
    return data + 0


CASES = [
    OpCase("if", lambda k: (torch.randn(3, 2 + k) + (1.0 if k == 0 else -1.0),), sample="data_dependent",
           module=lambda: torch.jit.script(_DataDependentIf())),
    OpCase("floordiv", lambda k: (torch.randn(5 + 2 * k, 2),), sample="numbers",
           module=lambda: torch.jit.script(_NumberArithmetic())),
    OpCase("add_", lambda k: (torch.randn(3 + k, 2),), sample="into_slice", fn=_add_into_slice),
    OpCase("mul_", lambda k: (torch.randn(3 + k, 2),), sample="after_add_in_loop",
           module=lambda: torch.jit.script(_TwoInPlaceOpsPerIteration())),
]


CASES += [
]


def _run_time_slice_inputs(k):
    return torch.randn(9 + 4 * k, 3), torch.tensor([1, -7][k]), torch.tensor([8, 100][k]), torch.tensor([2, 3][k])


CASES += [
    OpCase("slice", _run_time_slice_inputs, sample="run_time_step", min_opset=10, fn=lambda x, a, b, c: x[a:b:c] * 2),
]


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
    OpCase("stack", lambda k: (torch.randn(3 + k, 4),), sample="loop_carried_list", dynamic_min_opset=11,
           module=lambda: torch.jit.script(_StackOfLoopCarriedList())),
    OpCase("upsample_bilinear2d", lambda k: (torch.randn(1, 2, 4 + k, 6),), sample="scripted_scale_factor",
           dynamic_min_opset=11, module=lambda: torch.jit.script(_InterpolateByScale())),
]
