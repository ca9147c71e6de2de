"""The export's arguments checked and normalized before any work: a wrong argument is an ExportArgumentError that
names it, not a TypeError from deep inside the export, and PyTorch's forms (``dynamic_axes`` lists, trailing keyword
dicts, its enums) become the ones the flow reads."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from exporter import binding
from exporter.errors import ExportArgumentError
from exporter.frontends.base import flatten, split_args
from exporter.frontends.export.capture import check_dynamic_shapes, dynamic_shapes_from_axes
from exporter.frontends.export.dynamic_shapes import DynamicRequest, read_dynamic_shapes
from exporter.lowering import runtime
from exporter.opsets import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET
from exporter.options import OperatorExportTypes, TrainingMode


def shortened(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def check_capture_choice(dynamo: Any, dynamic_shapes: Any, model: Any) -> None:
    if not isinstance(dynamo, bool):
        raise ExportArgumentError(f"dynamo must be True (capture with torch.export) or False (TorchScript), "
                                  f"got {dynamo!r}")
    check_dynamic_shapes(dynamic_shapes)


def check_export_capture_options(operator_export_type: OperatorExportTypes, export_modules_as_functions: Any) -> None:
    """What the torch.export capture does not do yet is refused before any work, not ignored."""
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ExportArgumentError(f"operator_export_type={operator_export_type.name} needs dynamo=False: the torch.export "
                                  "capture converts every op or raises (no ATen or fallthrough nodes)")
    if export_modules_as_functions:
        raise ExportArgumentError("export_modules_as_functions needs dynamo=False: local functions are made from "
                                  "TorchScript's module scopes")


def dynamic_request(model: Any, args: Any, dynamic_shapes: Any, dynamic_axes: dict, input_names,
                    dynamo: bool) -> DynamicRequest:
    """``dynamic_shapes`` read for the capture (``exporter/frontends/export/dynamic_shapes.py``: for the TorchScript capture,
    its axes become ``dynamic_axes``), else, for torch.export, ``dynamic_axes`` translated to its form."""
    if dynamic_shapes is not None:
        if dynamic_axes:
            raise ExportArgumentError("give dynamic_shapes or dynamic_axes, not both")
        return read_dynamic_shapes(model, args, dynamic_shapes, numbers_are_inputs=not dynamo)
    if not dynamic_axes or not dynamo:
        return DynamicRequest()
    return DynamicRequest(shapes=_translated_dynamic_axes(model, args, dynamic_axes, input_names))


def _translated_dynamic_axes(model: Any, args: Any, dynamic_axes: dict, input_names) -> Any:
    """``dynamic_axes`` in torch.export's form (by the names the inputs will have: ``input_names`` over the
    defaults)."""
    names = binding.export_input_names(model, args)
    names[:len(input_names or [])] = list(input_names or [])[:len(names)]
    by_position = {names.index(key): axes for key, axes in normalize_dynamic_axes(dynamic_axes).items()
                   if key in names}
    return dynamic_shapes_from_axes(model, args, by_position)


def state_tensors(model: Any) -> list[Any]:
    """The values of the model's state_dict (none for a function)."""
    return list(model.state_dict().values()) if isinstance(model, torch.nn.Module) else []


def check_tensors_hold_data(state: list[Any], args: Any) -> None:
    """A model or argument on the ``meta`` device has shapes but no data: nothing could be run or written. Nor has a
    lazy module (``nn.LazyLinear``) before its first call."""
    if any(torch.nn.parameter.is_lazy(t) for t in state):
        raise ExportArgumentError(
            "the model has lazy modules whose parameters or buffers are not initialized yet; call the model once "
            "on example inputs (model(*args)) before exporting it"
        )
    tensors = state + flatten(split_args(args))[0]
    if any(isinstance(t, torch.Tensor) and t.is_meta for t in tensors):
        raise ExportArgumentError(
            "the model or its arguments are on the 'meta' device, which holds shapes but no data; "
            "load real weights (e.g. model.to_empty(device='cpu') then load_state_dict) before exporting"
        )


def with_keyword_arguments(args: Any, kwargs: Mapping[str, Any] | None) -> Any:
    """``args`` with ``kwargs`` appended as the trailing dict of keyword arguments (torch 2.x's ``kwargs=``); a dict
    that ended ``args`` is then a positional argument, as in both of PyTorch's exporters."""
    if not kwargs:
        return args
    return (*(args if isinstance(args, tuple) else (args,)), dict(kwargs))


def bound_arguments(model: Any, args: Any, dynamo: bool) -> Any:
    """``args`` bound to ``forward``'s parameters as the capture takes them (``exporter.binding``)."""
    return binding.bind_for_export(model, args) if dynamo else binding.bind_for_trace(model, args)


def check_workarounds(choice: Any) -> frozenset[str] | None:
    try:
        return runtime.enabled_set(choice)
    except (TypeError, ValueError) as error:
        raise ExportArgumentError(f"runtime_workarounds: {error}") from None


def check_opset(opset_version: int | None) -> int:
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if isinstance(opset, int) and not isinstance(opset, bool) and opset > MAX_OPSET:
        raise ExportArgumentError(
            f"unsupported opset_version {opset}: this exporter supports opsets {MIN_OPSET} to {MAX_OPSET}; "
            f"{MAX_OPSET} is the newest opset ONNX Runtime 1.31 implements (it refuses to load a model "
            f"importing {MAX_OPSET + 1} or above), so a model stamped {opset} could not be checked or run"
        )
    if not isinstance(opset, int) or isinstance(opset, bool) or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ExportArgumentError(
            f"unsupported opset_version {opset_version!r}: this exporter supports opsets {MIN_OPSET} to {MAX_OPSET}"
        )
    return opset


def check_argument_kinds(input_names: Any, output_names: Any, dynamic_axes: Any, kwargs: Any) -> None:
    """An argument of the wrong kind is an error that names it, not a TypeError from deep inside the export."""
    for what, names in (("input_names", input_names), ("output_names", output_names)):
        if names is not None and (isinstance(names, str) or not isinstance(names, Sequence)
                                  or not all(isinstance(name, str) for name in names)):
            raise ExportArgumentError(f"{what} must be a list of str, got {names!r}")
    if dynamic_axes is not None and not isinstance(dynamic_axes, Mapping):
        raise ExportArgumentError(f"dynamic_axes must be a dict {{input or output name: axes}}, got {dynamic_axes!r}")
    if kwargs is not None and not (isinstance(kwargs, Mapping) and all(isinstance(key, str) for key in kwargs)):
        raise ExportArgumentError(f"kwargs must be a dict of keyword arguments by name, got {kwargs!r}")


def check_dynamic_axes_shape(dynamic_axes: dict) -> None:
    for key, axes in dynamic_axes.items():
        if not isinstance(key, str):
            raise ExportArgumentError(f"dynamic_axes keys must be input or output names (str), got {key!r}")
        if isinstance(axes, Mapping):
            items = list(axes.keys())
        elif isinstance(axes, (list, tuple)):
            items = list(axes)
        else:
            raise ExportArgumentError(f"dynamic_axes[{key!r}] must be a dict {{axis: name}} or a list of axes")
        if not all(isinstance(a, int) for a in items):
            raise ExportArgumentError(f"dynamic_axes[{key!r}]: axes must be ints, got {items!r}")


def check_custom_opsets(custom_opsets: Mapping[str, int] | None) -> None:
    """``custom_opsets`` versions custom domains only: the default domain's version is ``opset_version``, and a second
    import of it makes a model ONNX Runtime refuses to load."""
    for domain in custom_opsets or {}:
        if domain in ("", "ai.onnx"):
            raise ExportArgumentError(f"custom_opsets names the default ONNX domain {domain!r}, whose version is "
                                      "opset_version; custom_opsets versions custom domains only")


def known_dynamic_axes(dynamic_axes: dict, names_in: list[str], names_out: list[str], user_count: int) -> dict:
    """The ``dynamic_axes`` whose key names a graph input or output. Any other key is ignored with torch.onnx's
    warning (it says nothing of a parameter's or buffer's name, whose data fixes its shape), naming what there is."""
    inputs, state = names_in[:user_count], set(names_in[user_count:])
    known = {}
    for key, axes in dynamic_axes.items():
        if key in inputs or key in names_out:
            known[key] = axes
            continue
        what = "it names a parameter or buffer of the model, whose data fixes its shape" if key in state else \
            "it names neither an input nor an output"
        warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output name ({what}; the inputs are "
                      f"{shortened(inputs)} and the outputs {shortened(names_out)}): ignored", UserWarning, stacklevel=3)
    return known


def normalize_dynamic_axes(dynamic_axes: dict) -> dict[str, dict[int, str]]:
    normalized: dict[str, dict[int, str]] = {}
    for key, axes in dynamic_axes.items():
        if isinstance(axes, Mapping):
            normalized[key] = {int(a): str(n) for a, n in axes.items()}
        else:
            normalized[key] = {int(a): f"{key}_dynamic_axes_{k + 1}" for k, a in enumerate(axes)}
    return normalized


def exports_training_mode(model: Any, mode: TrainingMode) -> bool:
    if mode == TrainingMode.TRAINING:
        return True
    if mode == TrainingMode.PRESERVE:
        return bool(getattr(model, "training", False))
    return False
