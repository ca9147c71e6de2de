"""What the zoo knows about one model: how to build it, feed it, export it and judge its outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

# rtol/atol that the design measured torch's own exporter against on randomly initialised torchvision models
# (96 of 108 within it), used unless an entry gives a reason for something else.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5


@dataclass
class ZooEntry:
    """One model or documentation example the project claims to export.

    ``inputs(variant, seed)`` returns the positional example arguments: variant 0 is exported (and checked),
    variant 1 has different sizes on the dynamic axes and is fed to the dynamic export as a second check.
    ``seed`` changes the values only (never the shapes), which is how the runner perturbs the input.
    ``extra_checks`` are further argument tuples every mode is verified on (e.g. another loop count).
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
    comparison: str = "outputs"  # "outputs" (every tensor, allclose) | "detection" (matched boxes, see compare)
    quick_opsets: tuple[int, ...] = ()  # opsets of the quick tier (empty: not in it)
    cost: float = 1.0  # rough relative cost; scales the per-case timeout
    notes: str = ""

    def tolerance(self, reference_scale: float) -> tuple[float, float]:
        """(rtol, atol) for outputs whose largest magnitude is ``reference_scale``."""
        return self.rtol, self.atol + self.atol_scale * reference_scale
