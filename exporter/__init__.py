"""exporter: an ONNX export engine for PyTorch with the API of ``torch.onnx.export`` in both of its contracts: today's
(``dynamo=True``, the default: torch.export capture, an :class:`ONNXProgram` returned) and the TorchScript-era one
(``dynamo=False``: a traced or scripted model written to ``f``). :func:`export_program` is the same call returning
the program for both.

Opsets 7 to 26 (default 20). Our own engine: it captures with torch.export or TorchScript and converts with its own
symbolic functions; it never calls PyTorch's own ONNX exporter.
"""

from exporter import errors, generation  # generation: prefill/decode-step graphs and loops (docs/generation.md)
from exporter import symbolics as _symbolics  # noqa: F401  (registers the built-in symbolics)
from exporter.api import (
    OperatorExportTypes,
    TrainingMode,
    disable_log,
    enable_log,
    is_in_onnx_export,
    prepare_capture,
    register_custom_op_symbolic,
    select_model_mode_for_export,
    unconvertible_ops,
    unregister_custom_op_symbolic,
)
from exporter.arguments import DEFAULT_OPSET
from exporter.contract import export, export_program, export_to_pretty_string
from exporter.errors import (
    CheckerError,
    OnnxExporterError,
    SymbolicValueError,
    UnsupportedOperatorError,
)
from exporter.frontends.base import Capture
from exporter.program import ONNXProgram
from exporter.registry import MAX_OPSET, MIN_OPSET, parse_args
from exporter.stand_in import in_place_of_torch_onnx
from exporter.verify import VerifyResult, verify
from exporter.version import __version__

__all__ = [
    "__version__",
    "Capture",
    "DEFAULT_OPSET",
    "MAX_OPSET",
    "MIN_OPSET",
    "CheckerError",
    "ONNXProgram",
    "OnnxExporterError",
    "OperatorExportTypes",
    "SymbolicValueError",
    "TrainingMode",
    "UnsupportedOperatorError",
    "disable_log",
    "enable_log",
    "errors",
    "export",
    "export_program",
    "export_to_pretty_string",
    "generation",
    "in_place_of_torch_onnx",
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
