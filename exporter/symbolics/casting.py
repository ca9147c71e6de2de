"""Dtype conversions: every ``aten::to`` overload, ``type_as``, ``_to_copy`` and the ``_cast_*`` family (Cast).

TorchScript records the result type of each conversion, which is the target whatever overload was used;
when it did not (scripted code with unknown types), the target comes from the overload's own arguments:
a ``dtype`` or the dtype of an ``other`` tensor. Device, layout, copy and memory-format arguments have no
meaning in ONNX.
"""

from __future__ import annotations

from exporter import dtypes
from exporter.errors import SymbolicValueError
from exporter.lowering.core import (
    cast,
    constant_value,
    is_value,
)
from exporter.registry import symbolic


def _target_from_arguments(g, args):
    other = g.argument(args, "other")
    if other is not None:
        return g.dtype(other)
    code = g.argument(args, "dtype")
    if code is None or is_value(code):
        return None
    return dtypes.onnx_from_torch(dtypes.torch_dtype_from_code(int(constant_value(code))))


@symbolic("aten::to", "aten::_to_copy", "aten::type_as", "aten::_cast_Byte", "aten::_cast_Char",
          "aten::_cast_Short", "aten::_cast_Int", "aten::_cast_Long", "aten::_cast_Half", "aten::_cast_Float",
          "aten::_cast_Double", "aten::_cast_Bool")
def to(g, self, *args):
    """Cast ``self`` to the dtype the conversion produces (no node when it already has it)."""
    target = g.output_dtype() or _target_from_arguments(g, (self, *args))
    if target is None:
        if g.dtype(self) is None:
            raise SymbolicValueError("the target dtype of this conversion is not known at export time")
        return self
    return cast(g, g.value(self), target)
