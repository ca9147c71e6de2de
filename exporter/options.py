"""The export options both the public API (``api.py``) and the converter read: training mode and how operators are
exported. They have the same members as PyTorch's ONNX enums, and torch's own members are accepted by name."""

from __future__ import annotations

import enum
from typing import Any, TypeVar


class TrainingMode(enum.IntEnum):
    """In which mode the model is exported (same members as PyTorch's ONNX ``TrainingMode``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """How operators are exported (same members as PyTorch's ONNX ``OperatorExportTypes``)."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


_Enum = TypeVar("_Enum", bound=enum.IntEnum)


def enum_member(enum_type: type[_Enum], value: Any, parameter: str) -> _Enum:
    """Our member of ``enum_type`` for ``value``: one of ours, its int value, or any enum member of the same name.

    Callers pass PyTorch's own ``TrainingMode``/``OperatorExportTypes`` (pybind enums, not ints): matching by
    member name accepts them without any conversion work delegated to PyTorch's exporter.
    """
    if isinstance(value, enum_type):
        return value
    name = getattr(value, "name", None)
    if isinstance(name, str) and name in enum_type.__members__:
        return enum_type[name]
    if isinstance(value, int) and not isinstance(value, bool) and value in enum_type._value2member_map_:
        return enum_type(value)
    members = ", ".join(enum_type.__members__)
    from exporter.errors import ExportArgumentError  # here: the enums are read before torch is imported (__main__)

    raise ExportArgumentError(f"{parameter} must be a {enum_type.__name__} ({members}), got {value!r}")
