"""Comparisons, logical and bitwise ops (Equal, Less, Greater, LessOrEqual, And, Or, Xor, Not, Where).

ONNX widened the types of its comparison ops over time: Less/Greater take only floats before opset 9, Equal
takes only bool/int32/int64 before opset 11, LessOrEqual/GreaterOrEqual appear at 12 and Where at 9. The
helpers here (``less``, ``equal``, ``less_equal``, ``is_nan``, ``select``) emit the exact equivalent at any
opset 7-16, so other families can compare and select without caring about the opset.
"""

from __future__ import annotations

import math

from onnx import TensorProto

from exporter import dtypes
from exporter.registry import symbolic, unsupported
from exporter.symbolics._helpers import BOOL, FLOAT, cast, promote_all

INT32 = TensorProto.INT32
INT64 = TensorProto.INT64
DOUBLE = TensorProto.DOUBLE
# Integer types ONNX Runtime compares natively; narrower ones are widened to int32 (exact).
_NATIVE_EQUAL_INTS = frozenset({INT32, INT64})
_WIDE_INTS = frozenset({INT32, INT64, TensorProto.UINT32, TensorProto.UINT64})


def _bool(g, x):
    return g.op("Cast", x, to_i=BOOL) if g.dtype(x) != BOOL else x


# -- opset-independent building blocks ----------------------------------------------------------------------
def less(g, a, b):
    """``a < b`` for two values of one element type, exact at every opset."""
    dtype = g.dtype(a)
    if dtype == BOOL:
        return g.op("Less", cast(g, a, INT32 if g.opset >= 9 else FLOAT), cast(g, b, INT32 if g.opset >= 9 else FLOAT))
    if g.opset < 9 and dtypes.is_integer(dtype):
        if dtype in _WIDE_INTS:
            # Less takes only floats before opset 9 and int64 does not fit a double exactly; the sign of the
            # (exact) integer difference survives the cast to float, so compare that with zero instead.
            difference = g.op("Cast", g.op("Sub", a, b), to_i=FLOAT)
            return g.op("Less", difference, g.const(0.0, FLOAT))
        return g.op("Less", cast(g, a, DOUBLE), cast(g, b, DOUBLE))
    return g.op("Less", a, b)


def not_nan(g, x):
    """True where ``x`` is not NaN: every number but NaN is below +inf or above -inf."""
    if not dtypes.is_float(g.dtype(x)):
        return equal(g, x, x)
    if g.opset >= 9:
        return g.op("Not", g.op("IsNaN", x))
    inf = g.const(math.inf, g.dtype(x))
    return g.op("Or", g.op("Less", x, inf), g.op("Less", g.op("Neg", inf), x))


def is_nan(g, x):
    """True where ``x`` is NaN (never for integers)."""
    if dtypes.is_float(g.dtype(x)) and g.opset >= 9:
        return g.op("IsNaN", x)
    return g.op("Not", not_nan(g, x))


def equal(g, a, b):
    """``a == b`` for two values of one element type, exact at every opset (NaN equals nothing)."""
    dtype = g.dtype(a)
    if g.opset >= 11 or dtype == BOOL or dtype in _NATIVE_EQUAL_INTS:
        return g.op("Equal", a, b)
    if dtypes.is_integer(dtype):
        return g.op("Equal", cast(g, a, INT32), cast(g, b, INT32))
    ordered = g.op("Or", less(g, a, b), less(g, b, a))
    both_numbers = g.op("And", not_nan(g, a), not_nan(g, b))
    return g.op("And", g.op("Not", ordered), both_numbers)


def less_equal(g, a, b):
    """``a <= b``: LessOrEqual from opset 12; before it ``not (a > b)``, false when either side is NaN."""
    dtype = g.dtype(a)
    if g.opset >= 12:
        if dtype == BOOL:
            a, b = cast(g, a, INT32), cast(g, b, INT32)
        return g.op("LessOrEqual", a, b)
    not_greater = g.op("Not", less(g, b, a))
    if not dtypes.is_float(dtype):
        return not_greater
    return g.op("And", not_greater, g.op("And", not_nan(g, a), not_nan(g, b)))


def select(g, condition, a, b):
    """``where(condition, a, b)`` for values of one element type.

    Where exists from opset 9. Before it, integers and bools are blended arithmetically (exact); floats are
    not, because ``inf * 0`` is NaN, so a float select there needs opset 9.
    """
    condition = _bool(g, condition)
    if g.opset >= 9:
        return g.op("Where", condition, a, b)
    dtype = g.dtype(a)
    if dtype == BOOL:
        return g.op("Or", g.op("And", condition, a), g.op("And", g.op("Not", condition), b))
    if dtypes.is_integer(dtype):
        work = dtype if dtype in _WIDE_INTS else INT32
        a, b = cast(g, a, work), cast(g, b, work)
        blended = g.op("Add", b, g.op("Mul", g.op("Sub", a, b), g.op("Cast", condition, to_i=work)))
        return cast(g, blended, dtype)
    raise unsupported(
        g.node.kind(), g.opset,
        "selecting between float tensors needs ONNX Where (an arithmetic blend is wrong for inf/NaN): needs opset >= 9",
    )


# -- comparison symbolics ---------------------------------------------------------------------------------
def _operands(g, self, other):
    _, (a, b) = promote_all(g, self, other)
    return a, b


@symbolic("aten::eq", "aten::eq_")
def eq(g, self, other):
    return equal(g, *_operands(g, self, other))


@symbolic("aten::ne", "aten::ne_")
def ne(g, self, other):
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
    return g.op("And", _bool(g, g.value(self)), _bool(g, g.value(other)))


@symbolic("aten::logical_or", "aten::logical_or_")
def logical_or(g, self, other):
    return g.op("Or", _bool(g, g.value(self)), _bool(g, g.value(other)))


@symbolic("aten::logical_xor", "aten::logical_xor_")
def logical_xor(g, self, other):
    return g.op("Xor", _bool(g, g.value(self)), _bool(g, g.value(other)))


@symbolic("aten::logical_not", "aten::logical_not_")
def logical_not(g, self):
    return g.op("Not", _bool(g, self))


# -- bitwise ops: logical on bool; on integers ONNX has BitwiseAnd/Or/Xor only from opset 18 ----------------
def _bitwise(g, op_type, onnx_bitwise, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    if dtype != BOOL:
        raise unsupported(
            g.node.kind(), g.opset,
            f"on integer tensors it needs ONNX {onnx_bitwise}, which no opset up to 16 has (needs opset >= 18)",
        )
    return g.op(op_type, a, b)


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
    dtype = g.dtype(self)
    if dtype == BOOL:
        return g.op("Not", self)
    if not dtypes.is_integer(dtype):
        raise unsupported(g.node.kind(), g.opset, "bitwise_not is defined only for bool and integer tensors")
    # Two's complement: ~x == -1 - x; narrow types go through int32 (Sub has no int8/uint8 kernel before
    # opset 14) and wrap back on the cast, as PyTorch's uint8 does.
    work = dtype if dtype in _WIDE_INTS else INT32
    inverted = g.op("Sub", g.const(-1, work), cast(g, self, work))
    return cast(g, inverted, dtype)
