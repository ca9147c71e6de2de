"""Arithmetic building blocks: Add/Sub/Mul/Div in a type ONNX takes (narrow integers from opset 14), float versions
of integer values, unary math in a type ONNX can compute, elementwise min/max (Min/Max: opset 8 broadcasts, opset 12
takes integers) and clamping (Clip: bounds as attributes before opset 11, inputs from 11, every numeric type from
12)."""

from __future__ import annotations

import math

import numpy as np
import torch
from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import BFLOAT16, BOOL, DOUBLE, FLOAT, INT32
from exporter.lowering.comparison import WIDE_INTS, less, select
from exporter.lowering.core import cast, constant_value, is_value, promote
from exporter.lowering.runtime import (
    BFLOAT16_ARITHMETIC_IN_FLOAT,
    CLIP_DOUBLE_AS_MAX_MIN,
    DOUBLE_MATH_IN_FLOAT32,
    applies,
)
from exporter.registry import unsupported


def typed_scalar(g, value, like):
    """A constant scalar ``value`` of ``like``'s element type."""
    return g.const(np.array(value, dtype=dtypes.numpy_from_onnx(g.dtype(like))))


def arithmetic_type(g, dtype):
    """The type Add/Sub/Mul/Div run in for ``dtype``: they take no bool, and int8/uint8/int16/uint16 only from
    opset 14, so those widen to int32 (exact; the final cast wraps back as PyTorch's narrow types do). bfloat16
    computes in float32 where the runtime lacks its kernels, rounded back once as PyTorch's CPU kernels do."""
    if dtype == BOOL or (dtypes.is_integer(dtype) and dtype not in WIDE_INTS and g.opset < 14):
        return INT32
    if dtype == BFLOAT16 and applies(g, BFLOAT16_ARITHMETIC_IN_FLOAT):
        return FLOAT
    return dtype


def arith(g, op_type, a, b, dtype):
    """``op_type(a, b)`` computed for result type ``dtype`` (operands cast as needed)."""
    work = arithmetic_type(g, dtype)
    return cast(g, g.op(op_type, cast(g, a, work), cast(g, b, work)), dtype)


def as_float(g, x):
    return cast(g, x, float_type(g, x))


def unary_math(g, op_type, x):
    """``op_type(x)`` with integers computed in the default float type, as PyTorch does."""
    x = as_float(g, x)
    if x.dtype == DOUBLE and op_type in _NO_DOUBLE_KERNEL and applies(g, DOUBLE_MATH_IN_FLOAT32):
        # float32 keeps the export runnable in ONNX Runtime, at reduced precision.
        return cast(g, g.op(op_type, cast(g, x, FLOAT)), DOUBLE)
    return g.op(op_type, x)


def sign_by_comparison(g, x):
    """(x > 0) - (x < 0): also PyTorch's sign(NaN) == 0, where ONNX Sign gives NaN."""
    dtype = g.dtype(x)
    zero = typed_scalar(g, 0, x)
    positive = cast(g, less(g, zero, x), dtype)
    negative = cast(g, less(g, x, zero), dtype)
    return arith(g, "Sub", positive, negative, dtype)


def maximum_value(g, a, b):
    return min_max(g, "Max", a, b)


def clamp_value(g, x, low, high):
    """``min(max(x, low), high)`` with either bound optional: Clip for constant bounds of a type it takes."""
    dtype = g.dtype(x)
    if _is_scalar_constant(low) and _is_scalar_constant(high) and _clip_takes(g, dtype):
        if g.opset < 11:
            return g.op(
                "Clip", x,
                min_f=float(constant_value(low)) if low is not None else -math.inf,
                max_f=float(constant_value(high)) if high is not None else math.inf,
            )
        bounds = [None if b is None else g.const(constant_value(b), dtype) for b in (low, high)]
        return g.op("Clip", x, *bounds)
    if low is not None:
        x = maximum_value(g, x, cast(g, low, dtype))
    if high is not None:
        x = minimum_value(g, x, cast(g, high, dtype))
    return x


def _clip_takes(g, dtype):
    """Clip-6 and Clip-11 take float types only, Clip-12 every numeric type; ONNX Runtime has no double kernel
    before Clip-12 (a workaround: Max and Min instead)."""
    if g.opset >= 12:
        return dtype != BOOL
    if dtype == DOUBLE:
        return not applies(g, CLIP_DOUBLE_AS_MAX_MIN)
    return dtype in (TensorProto.FLOAT16, FLOAT)


# Unary math ops that ONNX Runtime's CPU provider implements for float and float16 but not for double.
_NO_DOUBLE_KERNEL = frozenset({"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf"})


def float_type(g, *args):
    """The floating type PyTorch computes ``args`` in: their promoted type, or the default float for ints
    (``torch.get_default_dtype()`` at export time, as PyTorch's own run of the model uses)."""
    target = promote(g, *args)
    return target if dtypes.is_float(target) else dtypes.onnx_from_torch(torch.get_default_dtype())


def min_max(g, op_type, a, b):
    """Element-wise Min or Max of two values of one type, for every type at every opset."""
    dtype = g.dtype(a)
    if dtype == BOOL:
        return g.op("And" if op_type == "Min" else "Or", a, b)
    if dtypes.is_float(dtype):
        if dtype == DOUBLE and g.opset < 8:
            raise unsupported(g.op_kind, g.opset, "ONNX Runtime has no double Min/Max before opset 8: needs opset >= 8")
        return g.op(op_type, *_broadcast_for_opset7(g, a, b))
    if g.opset >= 12:
        return g.op(op_type, a, b)
    a_first = less(g, a, b) if op_type == "Min" else less(g, b, a)
    return select(g, a_first, a, b)


def minimum_value(g, a, b):
    return min_max(g, "Min", a, b)


def _is_scalar_constant(x):
    return x is None or (not is_value(x) and not isinstance(constant_value(x), list)) or (
        is_value(x) and x.const is not None and not x.is_param and x.const.size == 1
    )


def _broadcast_for_opset7(g, a, b):
    """Min/Max broadcast only from opset 8: before, add zeros of the other operand's shape (Add broadcasts)."""
    if g.opset >= 8 or (g.static_dims(a) is not None and g.static_dims(a) == g.static_dims(b)):
        return a, b
    dtype = g.dtype(a)
    return g.op("Add", a, _zeros_like(g, b, dtype)), g.op("Add", b, _zeros_like(g, a, dtype))


# -- min / max / clamp --------------------------------------------------------------------------------------
def _zeros_like(g, x, dtype):
    """Zeros of ``x``'s shape from ops every opset has (x & not x is false even for NaN and inf)."""
    truth = g.op("Cast", x, to_i=BOOL)
    return g.op("Cast", g.op("And", truth, g.op("Not", truth)), to_i=dtype)
