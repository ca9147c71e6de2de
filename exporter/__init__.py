"""exporter: an ONNX export engine for PyTorch with the API of the TorchScript-era PyTorch ONNX exporter (``export`` of torch 1.x).

Opsets 7 to 26 (default 20). Our own engine: it captures with TorchScript and converts with its own symbolic functions;
it never calls PyTorch's own ONNX exporter.
"""

from exporter import errors
from exporter import symbolics as _symbolics  # noqa: F401  (registers the built-in symbolics)
from exporter.api import (
    ExportResult,
    OperatorExportTypes,
    TrainingMode,
    disable_log,
    enable_log,
    export,
    export_to_pretty_string,
    is_in_onnx_export,
    prepare_capture,
    register_custom_op_symbolic,
    select_model_mode_for_export,
    unconvertible_ops,
    unregister_custom_op_symbolic,
)
from exporter.arguments import DEFAULT_OPSET
from exporter.errors import (
    CheckerError,
    OnnxExporterError,
    SymbolicValueError,
    UnsupportedOperatorError,
)
from exporter.registry import MAX_OPSET, MIN_OPSET, parse_args
from exporter.verify import VerifyResult, verify
from exporter.version import __version__

__all__ = [
    "__version__",
    "DEFAULT_OPSET",
    "MAX_OPSET",
    "MIN_OPSET",
    "CheckerError",
    "ExportResult",
    "OnnxExporterError",
    "OperatorExportTypes",
    "SymbolicValueError",
    "TrainingMode",
    "UnsupportedOperatorError",
    "disable_log",
    "enable_log",
    "errors",
    "export",
    "export_to_pretty_string",
    "is_in_onnx_export",
    "prepare_capture",
    "parse_args",
    "register_custom_op_symbolic",
    "select_model_mode_for_export",
    "unconvertible_ops",
    "unregister_custom_op_symbolic",
    "verify",
    "VerifyResult",
]
