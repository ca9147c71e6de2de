"""The hand-written op cases: ``OpCase`` and one module per symbolic family (``opcases/<family>.py`` tests
``exporter/symbolics/<family>.py``), each defining ``CASES: list[OpCase]``.

A case names its op (``name``, used in test ids), builds a model (a function of tensors or a module), and makes
sample inputs for two size variants: variant 0 is exported, variant 1 (different sizes on the axes that should be
dynamic) is fed to the dynamic export as a second check. Axes whose sizes differ between the variants become the
dynamic axes. Below ``min_opset`` the case must raise UnsupportedOperatorError naming that minimum.

This package is definitions only: it imports the engine's registry and nothing of the harness. The runner that
exports a case and compares ONNX Runtime with PyTorch is ``conformance.op_runner``; the pytest tier (``op_tests``)
and the conformance runner (``conformance.op_cases``) both run these cases through it. ``special_values`` is the one
module not named after a family: IEEE edge values (infinities, NaN, empty rows) fed to ops of several families.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from exporter.registry import MAX_OPSET, MIN_OPSET

OPSETS = tuple(range(MIN_OPSET, MAX_OPSET + 1))


def no_kernel_from_22(op_type: str) -> dict[int, str]:
    """Known failures at opsets 22 and up of a case whose export needs ``op_type``, which ONNX Runtime 1.31 has no
    kernel for at its opset-22 version: the export is refused naming opset 21 (``exporter.lowering.runtime``)."""
    return {opset: f"refused: ONNX Runtime 1.31 has no kernel for {op_type}-22 (exporter.lowering.runtime."
                   "NO_KERNEL_FROM_22); opset 21 exports it" for opset in range(22, MAX_OPSET + 1)}


# ONNX Runtime's CUDA provider refuses what its CPU provider computes (seen on an NVIDIA H200 and an H100 with
# onnxruntime-gpu 1.31.1, 2026-11-27, at every opset that exports the model): a reduction over an empty axis
# without keepdims.
CUDA_EMPTY_REDUCTION = ("ONNX Runtime's CUDA reductions refuse an empty axis without keepdims: 'Can't reduce on dim "
                        "with value of 0 if 'keepdims' is false'; the CPU provider computes the same model right")


@dataclass
class OpCase:
    op: str  # the ATen op under test, without namespace, e.g. "gather" or "max_pool2d"
    inputs: Callable[[int], tuple]  # size variant (0 or 1) -> positional example inputs
    sample: str = ""  # what this sample exercises, e.g. "negative_dim"; part of the test id
    fn: Callable[..., Any] | None = None  # a function of the inputs ...
    module: Callable[[], torch.nn.Module] | None = None  # ... or a module factory
    min_opset: int = 7  # lowest opset that must export and run
    dynamic_min_opset: int | None = None  # lowest opset for the dynamic export, when above min_opset
    rtol: float | None = None  # overrides of the per-dtype tolerance, with a reason
    atol: float | None = None
    tolerance_reason: str = ""
    dynamic: bool = True  # False when dynamic shapes make no sense for this op
    known_failures: dict[int, str] = field(default_factory=dict)  # opset -> reason naming the ONNX/ORT limitation
    # opset -> reason, for failures of the dynamic export alone where the static one passes (a dynamic export that
    # the exporter refuses is ``dynamic_min_opset``'s, not a known failure)
    dynamic_known_failures: dict[int, str] = field(default_factory=dict)
    # opset -> reason naming the gap of ONNX Runtime's CUDA provider, seen on a GPU, where its CPU provider passes
    cuda_known_failures: dict[int, str] = field(default_factory=dict)
    compare: str = "values"  # "values", or "distribution" for random outputs (see the module docstring)
    # Why the dynamic export keeps a count the trace fixes (the number of pieces a split makes of a dynamic dim, equal
    # at both size variants): exported with check_dynamic_axes=False, which the engine otherwise refuses (see
    # exporter/capture/traced_sizes.py); empty for every case the check must pass.
    frozen_by_trace: str = ""

    def known_failures_on(self, provider: str, dynamic: bool) -> dict[int, str]:
        """The expected failures on ``provider`` of the static or dynamic export: ``known_failures``, the dynamic
        export's own too, and on CUDA ``cuda_known_failures`` too."""
        known = {**self.known_failures, **(self.dynamic_known_failures if dynamic else {})}
        return {**known, **self.cuda_known_failures} if provider == "cuda" else known

    def min_opset_for(self, dynamic: bool) -> int:
        """The lowest opset that must export and run, static or dynamic (static exports may bake sizes in)."""
        return max(self.min_opset, self.dynamic_min_opset or 0) if dynamic else self.min_opset

    @property
    def name(self) -> str:
        return f"{self.op}_{self.sample}" if self.sample else self.op

    def build(self) -> torch.nn.Module:
        if self.module is not None:
            return self.module().eval()
        return FunctionModule(self.fn).eval()

    def dynamic_axes(self, names: list[str]) -> dict[str, list[int]]:
        first, second = self.inputs(0), self.inputs(1)
        axes: dict[str, list[int]] = {}
        for name, a, b in zip(names, first, second, strict=True):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim():
                differing = [i for i in range(a.dim()) if a.shape[i] != b.shape[i]]
                if differing:
                    axes[name] = differing
        return axes

    def has_dynamic_variant(self) -> bool:
        return self.dynamic and bool(self.dynamic_axes([f"input_{i}" for i in range(len(self.inputs(0)))]))


class FunctionModule(torch.nn.Module):
    """A module whose forward is ``fn`` of its inputs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def random_tensor(*shape, dtype=torch.float32) -> torch.Tensor:
    """A random example input: normal floats, booleans by sign, integers in [-5, 5)."""
    if dtype == torch.bool:
        return torch.randn(*shape) > 0
    if dtype.is_floating_point:
        return torch.randn(*shape).to(dtype)
    return torch.randint(-5, 5, shape, dtype=dtype)


def input_names(count: int) -> list[str]:
    return [f"input_{i}" for i in range(count)]


def export_modes(case: OpCase, opset: int, wanted: tuple[str, ...] = ("static", "dynamic")) -> list[str]:
    """The modes the op tests export ``case`` in at ``opset``: static, and dynamic where the case has a dynamic
    variant and ``opset`` is at least its ``min_opset``; of those the ``wanted`` ones, or else the first (so every
    case runs at every opset)."""
    modes = ["static", "dynamic"] if case.has_dynamic_variant() and opset >= case.min_opset else ["static"]
    return [mode for mode in modes if mode in wanted] or modes[:1]


def all_cases() -> list[OpCase]:
    """Every case of every family module, by module name (duplicate case names are an error: they are test ids)."""
    cases: list[OpCase] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        cases.extend(module.CASES)
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate op case names: {duplicates}")
    return cases


@functools.lru_cache(maxsize=1)
def by_name() -> dict[str, OpCase]:
    """Every OpCase by its name."""
    return {case.name: case for case in all_cases()}
