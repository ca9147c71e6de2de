"""Tiny model zoo entries for the conformance runner's own tests (loaded through $MODEL_ZOO_EXTRA)."""

from __future__ import annotations

import os
import random
import signal
import time

import torch

from model_zoo import ZooEntry


class AddOne(torch.nn.Module):
    def forward(self, x):
        return x + 1.0


class Sleeps(torch.nn.Module):
    """Hangs in PyTorch itself, as a deadlocked kernel would: only killing the worker ends the case."""

    def forward(self, x):
        time.sleep(3600)
        return x


class KillsItsProcess(torch.nn.Module):
    """Dies like a native crash would (SIGKILL: no Python cleanup, no exception)."""

    def forward(self, x):
        os.kill(os.getpid(), signal.SIGKILL)
        return x


class BakesARandomNumber(torch.nn.Module):
    """Tracing records the Python random number drawn at trace time; every later PyTorch call draws another,
    so the export mismatches PyTorch (the documented tracing pitfall) - a deterministic way to get a mismatch."""

    def forward(self, x):
        return x + random.random() + 1.0


class ConstantOutput(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x) + 2.0


def _inputs(variant: int, seed: int) -> tuple:
    return (torch.randn((2, 3)[variant], 4, generator=torch.Generator().manual_seed(seed)),)


def entries() -> list[ZooEntry]:
    def entry(name, build, **kwargs):
        return ZooEntry(name=name, kind="example", family="test", build=build, inputs=_inputs,
                        input_names=["x"], dynamic_axes={"x": {0: "n"}}, **kwargs)

    return [
        entry("test_add_one", AddOne, quick_opsets=(9, 13)),
        entry("test_sleeps", Sleeps),
        entry("test_kills_its_process", KillsItsProcess),
        entry("test_bakes_a_random_number", BakesARandomNumber),
        entry("test_constant_output", ConstantOutput),
    ]
