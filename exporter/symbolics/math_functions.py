"""Element-wise math functions: square roots, exponentials and logarithms, trigonometric and hyperbolic functions,
erf, atan2. Integers compute in the default float type, as PyTorch does; where ONNX Runtime has no double kernel
(Tan, Sinh, ...) or ONNX no op before opset 9 (Sinh, Asinh, ...), an exact identity computes the same."""

from __future__ import annotations

import math

from exporter.dtypes import DOUBLE
from exporter.lowering.arithmetic import as_float, float_type, sign_by_comparison, unary_math
from exporter.lowering.arithmetic import typed_scalar as _scalar
from exporter.lowering.comparison import equal, less, select
from exporter.lowering.core import cast
from exporter.lowering.runtime import DOUBLE_MATH_BY_IDENTITY, applies
from exporter.registry import symbolic


def _register_unary(aten_name, op_type):
    @symbolic(f"aten::{aten_name}", f"aten::{aten_name}_")
    def unary(g, self):
        return unary_math(g, op_type, self)

    unary.__name__ = aten_name
    unary.__doc__ = f"aten::{aten_name} as ONNX {op_type} (integers computed in the default float type)."
    return unary


for _aten, _onnx in [
    ("sqrt", "Sqrt"), ("exp", "Exp"), ("log", "Log"), ("reciprocal", "Reciprocal"), ("sin", "Sin"),
    ("cos", "Cos"), ("asin", "Asin"), ("acos", "Acos"), ("atan", "Atan"),
]:
    _register_unary(_aten, _onnx)


def _double_by_identity(g, op_type, x, identity):
    """``op_type(x)``, or its exact ``identity`` for doubles, which ONNX Runtime cannot compute with ``op_type``."""
    if g.dtype(x) == DOUBLE and applies(g, DOUBLE_MATH_BY_IDENTITY):
        return identity(g, x)
    return g.op(op_type, x)


def _tan_identity(g, x):
    return g.op("Div", g.op("Sin", x), g.op("Cos", x))


@symbolic("aten::tan", "aten::tan_")
def tan(g, self):
    return _double_by_identity(g, "Tan", as_float(g, self), _tan_identity)


@symbolic("aten::rsqrt", "aten::rsqrt_")
def rsqrt(g, self):
    return g.op("Reciprocal", g.op("Sqrt", as_float(g, self)))


@symbolic("aten::expm1", "aten::expm1_")
def expm1(g, self):
    x = as_float(g, self)
    return g.op("Sub", g.op("Exp", x), _scalar(g, 1, x))


@symbolic("aten::log1p", "aten::log1p_")
def log1p(g, self):
    x = as_float(g, self)
    return g.op("Log", g.op("Add", x, _scalar(g, 1, x)))


@symbolic("aten::log2", "aten::log2_")
def log2(g, self):
    x = as_float(g, self)
    return g.op("Div", g.op("Log", x), _scalar(g, math.log(2.0), x))


@symbolic("aten::log10", "aten::log10_")
def log10(g, self):
    x = as_float(g, self)
    return g.op("Div", g.op("Log", x), _scalar(g, math.log(10.0), x))


def _exp_pair(g, x):
    return g.op("Exp", x), g.op("Exp", g.op("Neg", x))


def _sinh_identity(g, x):
    up, down = _exp_pair(g, x)
    return g.op("Div", g.op("Sub", up, down), _scalar(g, 2, x))


def _cosh_identity(g, x):
    up, down = _exp_pair(g, x)
    return g.op("Div", g.op("Add", up, down), _scalar(g, 2, x))


def _asinh_identity(g, x):
    # asinh(x) = sign(x) * log(|x| + sqrt(x^2 + 1)), on |x| to avoid cancellation for negative x.
    magnitude = g.op("Abs", x)
    root = g.op("Sqrt", g.op("Add", g.op("Mul", x, x), _scalar(g, 1, x)))
    result = g.op("Log", g.op("Add", magnitude, root))
    return g.op("Mul", result, sign_by_comparison(g, x))


def _acosh_identity(g, x):
    root = g.op("Sqrt", g.op("Sub", g.op("Mul", x, x), _scalar(g, 1, x)))
    return g.op("Log", g.op("Add", x, root))


def _atanh_identity(g, x):
    one = _scalar(g, 1, x)
    ratio = g.op("Div", g.op("Add", one, x), g.op("Sub", one, x))
    return g.op("Mul", g.op("Log", ratio), _scalar(g, 0.5, x))


def _register_since_9(names, op_type, identity):
    """``names`` as ONNX ``op_type``, which arrives at opset 9; before it, as its exact ``identity``."""

    @symbolic(*names)
    def by_identity(g, self):
        return identity(g, as_float(g, self))

    @symbolic(*names, since=9)
    def native(g, self):
        return _double_by_identity(g, op_type, as_float(g, self), identity)

    by_identity.__name__, native.__name__ = f"{names[0][6:]}_by_identity", names[0][6:]


for _names, _onnx, _identity in [
    (("aten::sinh", "aten::sinh_"), "Sinh", _sinh_identity),
    (("aten::cosh", "aten::cosh_"), "Cosh", _cosh_identity),
    (("aten::asinh", "aten::asinh_", "aten::arcsinh"), "Asinh", _asinh_identity),
    (("aten::acosh", "aten::acosh_", "aten::arccosh"), "Acosh", _acosh_identity),
    (("aten::atanh", "aten::atanh_", "aten::arctanh"), "Atanh", _atanh_identity),
]:
    _register_since_9(_names, _onnx, _identity)


@symbolic("aten::erf", "aten::erf_", since=9)
def erf(g, self):
    return unary_math(g, "Erf", self)


@symbolic("aten::atan2", "aten::atan2_", "aten::arctan2")
def atan2(g, self, other):
    dtype = float_type(g, self, other)
    y, x = cast(g, self, dtype), cast(g, other, dtype)
    zero, pi = _scalar(g, 0, x), _scalar(g, math.pi, x)
    angle = unary_math(g, "Atan", g.op("Div", y, x))
    # Atan sees only y / x: move left-half-plane angles by +-pi, and fix x == 0 where y / x is not finite.
    turn = select(g, less(g, y, zero), g.op("Neg", pi), pi)
    angle = select(g, less(g, x, zero), g.op("Add", angle, turn), angle)
    on_axis = select(g, less(g, y, zero), _scalar(g, -math.pi / 2, x), _scalar(g, math.pi / 2, x))
    on_axis = select(g, equal(g, y, zero), zero, on_axis)
    return select(g, equal(g, x, zero), on_axis, angle)
