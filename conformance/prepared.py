"""A zoo model as a worker holds it between cases: built and calibrated, its check inputs, PyTorch's outputs on each
(on each device, and in float64 for arbitration), and its captures, so the opsets and modes of one model share one
build and one trace. Capturing does not depend on the opset or on dynamic axes, so reusing it is sound."""

from __future__ import annotations

import copy
import gc
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import model_zoo
from conformance.feeds import call

PERTURBED_SEED = 1
EXPORT_SEED = 0


@dataclass
class Prepared:
    """Everything about one zoo entry that does not depend on the opset, mode or provider."""

    entry: model_zoo.ZooEntry
    model: Any = None
    export_args: tuple | None = None
    checks: dict[str, tuple] = field(default_factory=dict)  # label -> args (positional, then a dict of keywords)
    references: dict[tuple[str, str], Any] = field(default_factory=dict)  # (device, label) -> structured output
    torch_ms: dict[str, float] = field(default_factory=dict)
    problem: str = ""
    reference_checked: bool = False
    setup_error: str = ""
    captures: dict = field(default_factory=dict)
    device_models: dict[str, Any] = field(default_factory=dict)


def clone_inputs(obj: Any) -> Any:
    """Deep copy of nested inputs: some models (in-place assignment) write into their arguments."""
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(clone_inputs(x) for x in obj)
    if isinstance(obj, dict):
        return {k: clone_inputs(v) for k, v in obj.items()}
    return obj


def _to(obj: Any, device: str) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _as_float64(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_as_float64(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _as_float64(v) for k, v in obj.items()}
    return obj


def flat_outputs(obj: Any) -> list[np.ndarray]:
    from exporter.frontends.base import flatten_outputs

    return [t.detach().cpu().numpy() for t in flatten_outputs(obj)]


class WorkerState:
    """The worker's memory of the current model (one at a time, to bound memory)."""

    def __init__(self, scratch: str):
        self.scratch = scratch
        self.current: Prepared | None = None

    def prepare(self, name: str) -> Prepared:
        if self.current is not None and self.current.entry.name == name:
            return self.current
        self.current = None
        gc.collect()
        entry = model_zoo.get(name)
        prepared = Prepared(entry)
        try:
            prepared.model = model_zoo.prepare_model(entry)
            prepared.export_args = clone_inputs(entry.inputs(0, EXPORT_SEED))
            prepared.checks["input 0"] = entry.inputs(0, EXPORT_SEED)
            if entry.dynamic_axes:
                prepared.checks["dynamic input 1"] = entry.inputs(1, EXPORT_SEED)
            for index, make in enumerate(entry.extra_checks):
                prepared.checks[f"extra input {index}"] = make()
            prepared.checks["perturbed"] = entry.inputs(0, PERTURBED_SEED)
        except Exception as error:
            prepared.setup_error = f"building the model or its inputs failed: {type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"
        self.current = prepared
        return prepared

    def reference(self, prepared: Prepared, device: str, label: str) -> Any:
        """PyTorch's output for the check ``label`` on ``device`` (computed once)."""
        key = (device, label)
        if key not in prepared.references:
            model = prepared.model if device == "cpu" else self._device_model(prepared, device)
            args = _to(clone_inputs(prepared.checks[label]), device)
            with torch.no_grad():
                start = time.perf_counter()
                prepared.references[key] = call(model, args)
                if device == "cuda":
                    torch.cuda.synchronize()
                prepared.torch_ms[key[0] + label] = (time.perf_counter() - start) * 1e3
        return prepared.references[key]

    def float64_reference(self, prepared: Prepared, device: str, label: str) -> Any:
        """PyTorch's output for ``label`` with the model and its float inputs in float64 (computed once)."""
        key = (device + ":float64", label)
        if key not in prepared.references:
            if key[0] not in prepared.device_models:
                prepared.device_models[key[0]] = copy.deepcopy(prepared.model).to(device=device, dtype=torch.float64).eval()
            model = prepared.device_models[key[0]]
            args = _to(_as_float64(clone_inputs(prepared.checks[label])), device)
            with torch.no_grad():
                prepared.references[key] = call(model, args)
        return prepared.references[key]

    @staticmethod
    def _device_model(prepared: Prepared, device: str):
        if device not in prepared.device_models:
            prepared.device_models[device] = copy.deepcopy(prepared.model).to(device).eval()
        return prepared.device_models[device]


def prepared_capture(cache: dict, model, args, dynamo: bool = False, dynamic_axes=None, input_names=None):
    """One capture per (model, args) within this worker, reused by every export of them: TorchScript's, or with
    ``dynamo`` torch.export's, one per set of ``dynamic_axes`` (its program fixes which axes are dynamic). A capture
    that failed fails again at once, with the same error, for every export that would reuse it (torch.export is not
    asked again at each opset)."""
    import exporter

    key = (id(model), id(args), dynamo, repr(sorted((dynamic_axes or {}).items())) if dynamo else None)
    if key not in cache:
        try:
            cache[key] = exporter.prepare_capture(model, args, dynamo=dynamo, dynamic_axes=dynamic_axes,
                                                  input_names=input_names) if dynamo else exporter.prepare_capture(model, args)
        except Exception as error:
            cache[key] = error
    if isinstance(cache[key], Exception):
        raise cache[key]
    return cache[key]
