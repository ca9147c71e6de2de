"""Errors raised by the export engine.

Every error derives from :class:`OnnxExporterError`, so callers can catch the whole family at once, and that
derives from PyTorch's exporter's ``OnnxExporterError``, so a caller's ``except`` written for PyTorch's exporter
catches ours too. Importing that class (below) is the engine's only use of PyTorch's exporter package (the hard
line's one exception: it hands over no export work); it costs about 0.1 s once, for the modules that package loads.
"""

from __future__ import annotations

from torch.onnx.errors import OnnxExporterError as TorchOnnxExporterError


class OnnxExporterError(TorchOnnxExporterError):
    """Base class of every error the exporter raises (a RuntimeError, as PyTorch's exporter's errors are)."""


class ExportArgumentError(OnnxExporterError, ValueError):
    """An argument to ``export`` is invalid (bad opset, unknown dynamic-axes name, ...)."""


class DynamicAxesError(ExportArgumentError):
    """A declared dynamic axis the capture cannot leave free: the model's code fixed its size (a trace froze it into
    the graph, or torch.export's program holds only for some sizes). The message names the input, the axis and why."""


class CaptureError(OnnxExporterError):
    """The model could not be turned into a TorchScript graph (tracing or scripting failed)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operator has no symbolic applicable at the target opset.

    ``min_opset`` is the lowest opset that has a symbolic for the operator (a refusal does not count), or ``None``
    when no opset from MIN_OPSET to MAX_OPSET (7 to 26) can express it (or no symbolic is registered at all).
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

