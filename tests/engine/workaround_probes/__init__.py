"""Probes for the runtime workarounds of ``exporter/lowering/runtime.py``: per workaround, the smallest export that
depends on it. Each module of this package defines ``PROBES: list[Probe]`` (one module per op-family group)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Probe:
    workaround: str  # its name in exporter.lowering.runtime.WORKAROUNDS
    fn: Callable  # a function of the inputs whose export at ``opset`` needs the workaround
    inputs: Callable[[], tuple]
    opset: int
    # What the runtime does with the plain ONNX form: "rejects" (the session cannot be built or run) or
    # "diverges" (it runs and returns other numbers than PyTorch and the ONNX reference evaluator).
    gap: str = "rejects"
    # onnx.reference implements some ops only at a later opset (DequantizeLinear: 19) although their semantics for
    # the probe's types did not change since: the plain form is then evaluated with its opset import raised to this.
    reference_opset: int | None = None
    training: bool = False  # exported with training=TrainingMode.TRAINING


def all_probes() -> list[Probe]:
    probes: list[Probe] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        probes.extend(getattr(importlib.import_module(f"{__name__}.{info.name}"), "PROBES", []))
    return probes
