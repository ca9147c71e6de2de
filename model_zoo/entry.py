"""What the zoo knows about one model: how to build it, feed it, export it and judge its outputs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from exporter.tolerances import DEFAULT_ATOL, DEFAULT_RTOL

# A magnitude-scaled tolerance uses the output's scale rounded up to this many significant digits: the scale is
# measured on every run and carries float noise (raft_small's 16.034074 one run, 16.034079 the next), which must not
# reach the tolerance a verdict and the release gate rest on. Rounding up loosens by at most 1 % of the scaled part.
SCALE_DIGITS = 3


def stable_scale(scale: float) -> float:
    """``scale`` rounded up to SCALE_DIGITS significant digits (0 stays 0), so run-to-run noise cannot move it."""
    if scale <= 0 or not math.isfinite(scale):
        return scale
    step = 10.0 ** (math.floor(math.log10(scale)) - SCALE_DIGITS + 1)
    return float(f"{math.ceil(scale / step) * step:.{SCALE_DIGITS}g}")


@dataclass
class ZooEntry:
    """One model or documentation example the project claims to export.

    ``inputs(variant, seed)`` returns the example arguments as ``export`` takes them (positional ones, then
    optionally a dict of keyword arguments, in any order, as library exporters pass them): variant 0 is exported (and checked),
    variant 1 has different sizes on the dynamic axes and is fed to the dynamic export as a second check.
    ``seed`` changes the values only (never the shapes), which is how the runner perturbs the input.
    ``extra_checks`` are further argument tuples every mode is verified on (e.g. another loop count).
    ``input_names`` name the flattened arguments in the order torch.onnx binds them (positional, then the keyword
    dict's entries in ``forward``'s order); the harness feeds ONNX Runtime by these names (``conformance.feeds``).
    ``min_opset`` is the lowest opset the model should export at (below it, ``unsupported`` is expected);
    ``min_opset_reason`` says which ONNX feature sets it.
    """

    name: str
    kind: str  # "model" | "example"
    family: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, int], tuple]
    input_names: list[str] | None = None
    output_names: list[str] | None = None
    dynamic_axes: dict[str, Any] | None = None  # None: the entry has no dynamic mode
    extra_checks: list[Callable[[], tuple]] = field(default_factory=list)
    calibration_inputs: Callable[[int], tuple] | None = None  # seed -> a batch that calibrates BatchNorm
    min_opset: int = 7
    min_opset_reason: str = ""
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    atol_scale: float = 0.0  # atol also grows by atol_scale * max|reference| (see tolerance_reason)
    tolerance_reason: str = ""
    # "outputs" (every tensor, allclose) | "detection" (matched boxes, see compare) | "quantized" (allclose; a
    # mismatch is judged node by node, each quantized value within one step of PyTorch's: see conformance.worker)
    comparison: str = "outputs"
    quick_opsets: tuple[int, ...] = ()  # opsets of the quick tier (empty: not in it)
    cost: float = 1.0  # rough relative cost; scales the per-case timeout
    # False where PyTorch cannot run the model on CUDA (its quantized kernels are CPU-only): its CUDA cases compare
    # ONNX Runtime's CUDA outputs with PyTorch's CPU outputs.
    cuda_reference: bool = True
    notes: str = ""

    def tolerance(self, reference_scale: float) -> tuple[float, float]:
        """(rtol, atol) for outputs whose largest magnitude is ``reference_scale`` (see ``stable_scale``)."""
        if not self.atol_scale:
            return self.rtol, self.atol
        return self.rtol, float(f"{self.atol + self.atol_scale * stable_scale(reference_scale):.6g}")
