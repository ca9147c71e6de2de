"""Comparisons, logical and bitwise ops (Equal, Less, Greater, LessOrEqual, And, Or, Xor, Not, Where).

ONNX widened the types of its comparison ops over time: Less/Greater take only floats before opset 9, Equal
takes only bool/int32/int64 before opset 11, LessOrEqual/GreaterOrEqual appear at 12 and Where at 9. The
helpers here (``less``, ``equal``, ``less_equal``, ``is_nan``, ``select``) emit the exact equivalent at any
opset, so other families can compare and select without caring about the opset.
"""

from __future__ import annotations

from exporter import dtypes
from exporter.dtypes import BOOL, INT32
from exporter.lowering.comparison import WIDE_INTS, as_bool, equal, less, less_equal
from exporter.lowering.core import cast, promote_all, require_opset
from exporter.registry import symbolic, unsupported


# -- comparison symbolics ---------------------------------------------------------------------------------
def _operands(g, self, other):
    _, (a, b) = promote_all(g, self, other)
    return a, b


def _compares_devices(g) -> bool:
    return all(g.input_type(i).startswith("Device") for i in range(g.input_count))


@symbolic("aten::eq", "aten::eq_")
def eq(g, self, other):
    if _compares_devices(g):
        return True  # an ONNX model has no devices: every device is the same one, as PyTorch's exporter has it
    return equal(g, *_operands(g, self, other))


@symbolic("aten::ne", "aten::ne_")
def ne(g, self, other):
    if _compares_devices(g):
        return False
    return g.op("Not", equal(g, *_operands(g, self, other)))


@symbolic("aten::lt", "aten::lt_", "aten::less")
def lt(g, self, other):
    return less(g, *_operands(g, self, other))


@symbolic("aten::gt", "aten::gt_", "aten::greater")
def gt(g, self, other):
    a, b = _operands(g, self, other)
    return less(g, b, a)


@symbolic("aten::le", "aten::le_", "aten::less_equal")
def le(g, self, other):
    return less_equal(g, *_operands(g, self, other))


@symbolic("aten::ge", "aten::ge_", "aten::greater_equal")
def ge(g, self, other):
    a, b = _operands(g, self, other)
    return less_equal(g, b, a)


# -- logical ops: any dtype, non-zero is true --------------------------------------------------------------
@symbolic("aten::logical_and", "aten::logical_and_")
def logical_and(g, self, other):
    return g.op("And", as_bool(g, g.value(self)), as_bool(g, g.value(other)))


@symbolic("aten::logical_or", "aten::logical_or_")
def logical_or(g, self, other):
    return g.op("Or", as_bool(g, g.value(self)), as_bool(g, g.value(other)))


@symbolic("aten::logical_xor", "aten::logical_xor_")
def logical_xor(g, self, other):
    return g.op("Xor", as_bool(g, g.value(self)), as_bool(g, g.value(other)))


@symbolic("aten::logical_not", "aten::logical_not_")
def logical_not(g, self):
    return g.op("Not", as_bool(g, self))


# -- bitwise ops: logical on bool; on integers ONNX has BitwiseAnd/Or/Xor/Not only from opset 18 ------------
BITWISE_OPSET = 18


def _bitwise(g, logical, bitwise, self, other):
    """The ``logical`` op (And/Or/Xor) on bool operands, the ``bitwise`` one (opset 18) on integers."""
    dtype, (a, b) = promote_all(g, self, other)
    if dtype == BOOL:
        return g.op(logical, a, b)
    require_opset(g, BITWISE_OPSET, f"on integer tensors it needs ONNX {bitwise}")
    return g.op(bitwise, a, b)


@symbolic("aten::bitwise_and", "aten::bitwise_and_", "aten::__and__", "aten::__iand__")
def bitwise_and(g, self, other):
    return _bitwise(g, "And", "BitwiseAnd", self, other)


@symbolic("aten::bitwise_or", "aten::bitwise_or_", "aten::__or__", "aten::__ior__")
def bitwise_or(g, self, other):
    return _bitwise(g, "Or", "BitwiseOr", self, other)


@symbolic("aten::bitwise_xor", "aten::bitwise_xor_", "aten::__xor__", "aten::__ixor__")
def bitwise_xor(g, self, other):
    return _bitwise(g, "Xor", "BitwiseXor", self, other)


@symbolic("aten::bitwise_not", "aten::bitwise_not_", "aten::__invert__")
def bitwise_not(g, self):
    return _bitwise_not(g, self, lambda x, dtype: _twos_complement_not(g, x, dtype))


@symbolic("aten::bitwise_not", "aten::bitwise_not_", "aten::__invert__", since=BITWISE_OPSET)
def bitwise_not_18(g, self):
    return _bitwise_not(g, self, lambda x, dtype: g.op("BitwiseNot", x))


def _bitwise_not(g, self, integer_not):
    """Not on bool, ``integer_not(x, dtype)`` on integers; other types have no bitwise not."""
    dtype = g.dtype(self)
    if dtype == BOOL:
        return g.op("Not", self)
    if not dtypes.is_integer(dtype):
        raise unsupported(g.op_kind, g.opset, "bitwise_not is defined only for bool and integer tensors")
    return integer_not(self, dtype)


def _twos_complement_not(g, x, dtype):
    """~x == -1 - x; narrow types go through int32 (Sub takes no int8/uint8 before opset 14) and wrap back on the
    cast, as PyTorch's uint8 does."""
    work = dtype if dtype in WIDE_INTS else INT32
    return cast(g, g.op("Sub", g.const(-1, work), cast(g, x, work)), dtype)
