"""Comparison building blocks, exact at every opset: ONNX widened its comparison ops over time (Less/Greater
take only floats before opset 9, Equal only bool/int32/int64 before 11, LessOrEqual appears at 12, Where at 9), so
``less``, ``equal``, ``less_equal``, ``is_nan`` and ``select`` emit the equivalent form the target opset allows."""

from __future__ import annotations

import math

from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import BOOL, DOUBLE, FLOAT, INT32, INT64
from exporter.lowering.core import cast
from exporter.lowering.runtime import ISNAN_BFLOAT16_IN_FLOAT, applies
from exporter.registry import unsupported

# The integer types Equal-7 takes; before Equal-11 narrower ones are widened to int32 (exact).
_NATIVE_EQUAL_INTS = frozenset({INT32, INT64})


WIDE_INTS = frozenset({INT32, INT64, TensorProto.UINT32, TensorProto.UINT64})


def as_bool(g, x):
    return g.op("Cast", x, to_i=BOOL) if g.dtype(x) != BOOL else x


# -- opset-independent building blocks ----------------------------------------------------------------------
def less(g, a, b):
    """``a < b`` for two values of one element type, exact at every opset."""
    dtype = g.dtype(a)
    if dtype == BOOL:
        return g.op("Less", cast(g, a, INT32 if g.opset >= 9 else FLOAT), cast(g, b, INT32 if g.opset >= 9 else FLOAT))
    if g.opset < 9 and dtypes.is_integer(dtype):
        if dtype in WIDE_INTS:
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
        return g.op("Not", _isnan_node(g, x))
    inf = g.const(math.inf, g.dtype(x))
    return g.op("Or", g.op("Less", x, inf), g.op("Less", g.op("Neg", inf), x))


def is_nan(g, x):
    """True where ``x`` is NaN (never for integers)."""
    if dtypes.is_float(g.dtype(x)) and g.opset >= 9:
        return _isnan_node(g, x)
    return g.op("Not", not_nan(g, x))


def _isnan_node(g, x):
    """IsNaN of a floating ``x`` (opset 9; bfloat16 from 13). Below 20 a bfloat16 is tested in float (exact): IsNaN-9
    takes none, and ONNX Runtime has no bfloat16 IsNaN-13 kernel (``ISNAN_BFLOAT16_IN_FLOAT``; IsNaN-20 has one)."""
    if g.dtype(x) == TensorProto.BFLOAT16 and g.opset < 20 and (g.opset < 13 or applies(g, ISNAN_BFLOAT16_IN_FLOAT)):
        x = cast(g, x, FLOAT)
    return g.op("IsNaN", x)


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
    condition = as_bool(g, condition)
    if g.opset >= 9:
        return g.op("Where", condition, a, b)
    dtype = g.dtype(a)
    if dtype == BOOL:
        return g.op("Or", g.op("And", condition, a), g.op("And", g.op("Not", condition), b))
    if dtypes.is_integer(dtype):
        work = dtype if dtype in WIDE_INTS else INT32
        a, b = cast(g, a, work), cast(g, b, work)
        blended = g.op("Add", b, g.op("Mul", g.op("Sub", a, b), g.op("Cast", condition, to_i=work)))
        return cast(g, blended, dtype)
    raise unsupported(
        g.op_kind, g.opset,
        "selecting between float tensors needs ONNX Where (an arithmetic blend is wrong for inf/NaN): needs opset >= 9",
    )
