"""exporter: an ONNX export engine for PyTorch with the API of ``torch.onnx.export`` in both of its contracts: today's
(``dynamo=True``, the default: torch.export capture, an :class:`ONNXProgram` returned) and the TorchScript-era one
(``dynamo=False``: a traced or scripted model written to ``f``). :func:`export_program` is the same call returning
the program for both.

Opsets 7 to 26 (default 20). Our own engine: it captures with torch.export or TorchScript and converts with its own
symbolic functions; it never calls PyTorch's own ONNX exporter.

The public names are imported on first use (PEP 562 ``__getattr__``): importing the package costs nothing, so the
command lines (``python -m exporter``, ``python -m conformance``) check their arguments before torch is imported.
``from exporter import export`` and ``exporter.export`` work as with eager imports; the names below, under
``TYPE_CHECKING``, are what type checkers and readers see.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from exporter.version import __version__

# Each public name -> the module that defines it ("errors" is that module itself).
_HOMES = {
    "errors": "exporter.errors",
    **dict.fromkeys(("OperatorExportTypes", "TrainingMode", "disable_log", "enable_log", "is_in_onnx_export",
                     "prepare_capture", "register_custom_op_symbolic", "select_model_mode_for_export",
                     "unconvertible_ops", "unregister_custom_op_symbolic"), "exporter.api"),
    "Capture": "exporter.frontends.base",
    "DEFAULT_OPSET": "exporter.arguments",
    **dict.fromkeys(("export", "export_program", "export_to_pretty_string"), "exporter.contract"),
    **dict.fromkeys(("CheckerError", "OnnxExporterError", "SymbolicValueError", "UnsupportedOperatorError"),
                    "exporter.errors"),
    "ONNXProgram": "exporter.program",
    **dict.fromkeys(("MAX_OPSET", "MIN_OPSET", "parse_args"), "exporter.registry"),
    "in_place_of_torch_onnx": "exporter.stand_in",
    **dict.fromkeys(("VerifyResult", "verify"), "exporter.verify"),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use and kept; else a submodule of that name (as the eager
    imports made ``exporter.capture`` and the like attributes of the package)."""
    home = _HOMES.get(name)
    if home is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(home)
    value = module if name == "errors" else getattr(module, name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """The package's module object. Importing a submodule makes it an attribute of its package; ``verify`` the
    function is defined by ``exporter.verify`` the module, so once anything imports that module, ``exporter.verify``
    would be the module, not the function, where the eager imports left the function. The function stays."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "verify" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from exporter import errors, generation  # generation: prefill/decode-step graphs and loops (docs/generation.md)
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
