"""Which capture an export uses, and the fallback when the caller did not choose.

``dynamo`` defaults to True, as in torch.onnx, through :data:`DYNAMO_DEFAULT`: a value equal to True that tells
"the caller passed nothing" from ``dynamo=True``. A caller who passed nothing gets torch.export's capture, and where
torch.export cannot capture the model (data-dependent control flow, quantized modules' packed parameters: 24 of the
zoo's models, docs/measurements/2026-12-07-fallback-to-tracing.md), the TorchScript trace instead, with a warning naming torch.export's reason, as
torch.onnx's ``fallback=True`` did. The trace goes through every check a trace export goes through: its declared
dynamic axes are traced again at other sizes (``frontends/torchscript/traced_sizes.py``), so the fallback is never a silently fixed
size. A caller who passed ``dynamo=True`` gets torch.export's refusal; ``dynamo=False``, the trace.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from exporter.arguments import bound_arguments, dynamic_request
from exporter.errors import CaptureError, ExportArgumentError
from exporter.frontends.base import Captured
from exporter.frontends.export.capture import capture_program
from exporter.frontends.export.dynamic_shapes import DynamicRequest
from exporter.frontends.torchscript.capture import capture


class _DynamoDefault:
    """``dynamo``'s default: True, and not the caller's ``True``."""

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return other is True or other is self

    def __hash__(self) -> int:
        return hash(True)

    def __repr__(self) -> str:
        return "True"


DYNAMO_DEFAULT: Any = _DynamoDefault()


@dataclass(frozen=True)
class CaptureChoice:
    dynamo: bool  # capture with torch.export
    explicit: bool  # the caller chose: no fallback


def capture_choice(dynamo: Any, model: Any = None) -> CaptureChoice:
    """The capture ``dynamo`` asks for. Left to its default, a scripted model keeps its TorchScript graph (torch.export
    takes an ``nn.Module``)."""
    if dynamo is DYNAMO_DEFAULT:
        scripted = isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction))
        if scripted:  # the fallback's rule: torch.export refuses a scripted model, so its own graph is exported
            warnings.warn(f"torch.export cannot capture a {type(model).__name__} (it takes an nn.Module): exporting "
                          "its TorchScript graph instead (dynamo=False); pass dynamo=False to say so, or dynamo=True "
                          "to make this an error", UserWarning, stacklevel=4)
        return CaptureChoice(dynamo=not scripted, explicit=False)
    if not isinstance(dynamo, bool):
        raise ExportArgumentError(f"dynamo must be True (capture with torch.export) or False (TorchScript), "
                                  f"got {dynamo!r}")
    return CaptureChoice(dynamo=dynamo, explicit=True)


def captured_or_traced(model: Any, call_args: Any, args: Any, request: DynamicRequest,
                       choice: CaptureChoice) -> Captured:
    """torch.export's capture of ``model`` on ``args`` (bound for it), or, where it refuses and the caller did not
    choose the capture, the trace on ``call_args`` (the call's arguments, unbound), with a warning naming the refusal.
    An export that gets a trace reads the arguments as :func:`traced_arguments` gives them."""
    try:
        return capture_program(model, args, request.shapes)
    except CaptureError as refusal:
        if choice.explicit:
            raise
        warnings.warn(f"{refusal}\nExporting with the TorchScript trace instead (dynamo=False), as torch.onnx's "
                      "fallback=True did; pass dynamo=True to make this an error, or dynamo=False to trace directly",
                      UserWarning, stacklevel=4)
    return capture(model, bound_arguments(model, call_args, dynamo=False))


def traced_arguments(model: Any, call_args: Any, dynamic_shapes: Any, dynamic_axes: dict,
                     input_names: Any) -> tuple[Any, DynamicRequest]:
    """The arguments bound for a trace, and ``dynamic_shapes`` read for it (the fallback's trace)."""
    args = bound_arguments(model, call_args, dynamo=False)
    return args, dynamic_request(model, args, dynamic_shapes, dynamic_axes, input_names, dynamo=False)
