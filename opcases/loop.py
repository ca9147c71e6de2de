"""Cases of ``exporter/symbolics/loop.py``: scripted ``for`` and ``while`` loops (``prim::Loop``), nested with branches
or over Python numbers only. TorchScript's capture only: torch.export takes no ScriptModule."""

from __future__ import annotations

import torch

from opcases import OpCase


class _ForLoop(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc = acc + x[i] * i
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


class _NestedLoopIf(torch.nn.Module):
    def forward(self, x):
        out = x
        for i in range(x.size(0)):
            if i % 2 == 0:
                out = out + x[i]
            else:
                out = out - 1
        return out


class _WhileLoop(torch.nn.Module):
    def forward(self, x):
        steps = 0
        while bool(x.abs().sum() < 50.0) and steps < 20:
            x = x * 1.5 + 0.1
            steps += 1
        return x


CASES = [
    OpCase("loop", lambda k: (torch.randn(3 + 2 * k, 4),), sample="scripted_for",
           module=lambda: torch.jit.script(_ForLoop())),
    OpCase("loop", lambda k: (torch.randn(2 + k, 3),), sample="while",
           module=lambda: torch.jit.script(_WhileLoop())),
    OpCase("loop", lambda k: (torch.randn(4 + k, 3),), sample="nested_if",
           module=lambda: torch.jit.script(_NestedLoopIf())),
    # x.set_(y): x becomes y (its shape too); x itself is then unused and not an input of the export.
    OpCase("loop", lambda k: (torch.randn(2 + k, 3, 4),), sample="python_numbers_only",
           module=lambda: torch.jit.script(_LoopOfNumbers())),
]
