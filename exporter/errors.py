"""Errors raised by the export engine.

Every error derives from :class:`OnnxExporterError`, so callers can catch the whole family at once.
"""

from __future__ import annotations

import functools
import sys


class OnnxExporterError(RuntimeError):
    """Base class of every error the exporter raises."""


class ExportArgumentError(OnnxExporterError, ValueError):
    """An argument to ``export`` is invalid (bad opset, unknown dynamic-axes name, ...)."""


class CaptureError(OnnxExporterError):
    """The model could not be turned into a TorchScript graph (tracing or scripting failed)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operator has no symbolic applicable at the target opset.

    ``min_opset`` is the lowest opset that has a symbolic for the operator, or ``None`` when no opset
    from 7 to 16 can express it (or no symbolic is registered at all).
    """

    def __init__(self, op_name: str, opset: int, min_opset: int | None = None, reason: str | None = None):
        self.op_name = op_name
        self.opset = opset
        self.min_opset = min_opset
        self.reason = reason
        if reason:
            message = f"{op_name} is not exportable at opset {opset}: {reason}"
        elif min_opset is not None:
            message = f"{op_name} is not exportable at opset {opset}: needs opset >= {min_opset}"
        else:
            message = f"{op_name} is not exportable at opset {opset}: no symbolic is registered for it in any opset"
        super().__init__(message)


class SymbolicValueError(OnnxExporterError):
    """A symbolic received an argument it cannot express in ONNX (e.g. a dynamic value where a constant is needed)."""


class CheckerError(OnnxExporterError):
    """The exported model failed ``onnx.checker.check_model(full_check=True)``; nothing was written."""


# Read from sys.modules only: the engine never imports PyTorch's exporter nor calls into it.
_CALLERS_ERRORS_MODULE = "torch.onnx.errors"


def in_callers_terms(function):
    """Let ``except`` clauses written for PyTorch's TorchScript-era exporter catch the errors ``function`` raises.

    When the caller has loaded PyTorch's exporter errors, an escaping error also becomes an instance of the class
    of the same name there (``OnnxExporterError``, ``UnsupportedOperatorError``, ``SymbolicValueError``), keeping its
    own class, message and traceback. When the caller has not, nothing changes and nothing is imported."""

    @functools.wraps(function)
    def calling(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except OnnxExporterError as error:
            theirs = sys.modules.get(_CALLERS_ERRORS_MODULE)
            if theirs is not None:
                error.__class__ = _with_counterpart(type(error), vars(theirs))
            raise

    return calling


@functools.cache
def _class_with_counterpart(ours: type, counterpart: type) -> type:
    return type(ours.__name__, (ours, counterpart), {"__module__": ours.__module__, "__doc__": ours.__doc__})


def _with_counterpart(ours: type, their_namespace: dict) -> type:
    for cls in ours.__mro__:
        counterpart = their_namespace.get(cls.__name__)
        if isinstance(counterpart, type) and issubclass(counterpart, RuntimeError):
            return ours if issubclass(ours, counterpart) else _class_with_counterpart(ours, counterpart)
    return ours
