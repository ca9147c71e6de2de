"""Element-wise arithmetic and math (Add, Sub, Mul, Div, Mod, Pow, Sqrt, Round, Clip, Where, ...).

Types follow PyTorch's promotion (``promote``): Python scalars take the dtype PyTorch gives them, integer
true division and unary math on integers produce the default float type. ONNX Runtime lacks some kernels
(no double Tan/Asin/Erf, ...) and ONNX takes some types only from later opsets (no int8/uint8 Add before opset 14):
those are computed in a wider type or through an exact identity, and narrow results wrap back on the final Cast as
PyTorch's do.
"""

from __future__ import annotations

import builtins
import math

import numpy as np
from onnx import TensorProto

from exporter.dtypes import BOOL, DOUBLE, FLOAT, INT32, INT64
from exporter import dtypes
from exporter.lowering.arithmetic import (
    arith,
    as_float,
    clamp_value,
    float_type,
    maximum_value,
    min_max,
    minimum_value,
    unary_math,
)
from exporter.lowering.arithmetic import typed_scalar as _scalar
from exporter.lowering.comparison import equal, is_nan, less, not_nan, select
from exporter.lowering.core import cast, constant_value, is_value, promote, promote_all, require_opset
from exporter.lowering.indexing import nonzero_vectors
from exporter.lowering.rounding import (
    add_where,
    floor_divide_floats,
    off_floor,
    round_half_even,
    trunc_value,
    truncated_remainder,
)
from exporter.lowering.runtime import DOUBLE_MATH_BY_IDENTITY, applies
from exporter.lowering.sequence import is_list, is_list_tensor, list_concat
from exporter.registry import parse_args, symbolic, unsupported



# -- arithmetic ---------------------------------------------------------------------------------------------
def _scaled(g, x, alpha, dtype):
    """``x * alpha`` in ``dtype`` (``alpha`` is a constant; 1 or None leaves ``x`` alone)."""
    if alpha is None or constant_value(alpha) == 1:
        return x
    if not is_value(x):
        return constant_value(x) * constant_value(alpha)
    return arith(g, "Mul", x, g.const(constant_value(alpha), dtype), dtype)


@symbolic("aten::add", "aten::add_")
def add(g, self, other, alpha=None):
    """Tensors and numbers add; lists (``lst + [x]``, ``lst += [x]``) concatenate."""
    if is_list(self) or is_list_tensor(g, self):
        return list_concat(g, self, other)
    dtype = promote(g, self, other)
    return arith(g, "Add", self, _scaled(g, cast(g, other, dtype), alpha, dtype), dtype)


@symbolic("aten::sub", "aten::sub_", "aten::subtract")
def sub(g, self, other, alpha=None):
    dtype = promote(g, self, other)
    return arith(g, "Sub", self, _scaled(g, cast(g, other, dtype), alpha, dtype), dtype)


@symbolic("aten::rsub")
def rsub(g, self, other, alpha=None):
    dtype = promote(g, self, other)
    return arith(g, "Sub", other, _scaled(g, cast(g, self, dtype), alpha, dtype), dtype)


@symbolic("aten::mul", "aten::mul_", "aten::multiply")
def mul(g, self, other):
    return arith(g, "Mul", self, other, promote(g, self, other))


def _true_divide(g, self, other):
    dtype = float_type(g, self, other)
    return g.op("Div", cast(g, self, dtype), cast(g, other, dtype))


@symbolic("aten::true_divide", "aten::true_divide_")
def true_divide(g, self, other):
    return _true_divide(g, self, other)


@symbolic("aten::div", "aten::div_", "aten::divide")
@parse_args("v", "v", "s")
def div(g, self, other, rounding_mode=None):
    if rounding_mode is None:
        return _true_divide(g, self, other)
    if rounding_mode == "floor":
        return floor_divide(g, self, other)
    dtype, (a, b) = promote_all(g, self, other)
    if dtypes.is_float(dtype):
        return trunc_value(g, g.op("Div", a, b))
    # ONNX Runtime's integer Div truncates toward zero, as C++ does.
    return arith(g, "Div", a, b, dtype)


@symbolic("aten::floor_divide", "aten::floor_divide_")
def floor_divide(g, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    if not dtypes.is_float(dtype):
        quotient = arith(g, "Div", a, b, dtype)
        remainder = arith(g, "Sub", a, arith(g, "Mul", quotient, b, dtype), dtype)
        return add_where(g, quotient, off_floor(g, remainder, b), _scalar(g, -1, quotient))
    return floor_divide_floats(g, a, b)


@symbolic("aten::fmod", "aten::fmod_")
def fmod(g, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    return truncated_remainder(g, a, b, dtype)


def _floored_remainder(g, a, b, dtype):
    truncated = truncated_remainder(g, a, b, dtype)
    return add_where(g, truncated, off_floor(g, truncated, b), b)


@symbolic("aten::remainder", "aten::remainder_")
def remainder(g, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    return _floored_remainder(g, a, b, dtype)


@symbolic("aten::remainder", "aten::remainder_", since=10)
def remainder_mod(g, self, other):
    """Mod's floored mode (fmod=0) takes integers only."""
    dtype, (a, b) = promote_all(g, self, other)
    if dtypes.is_float(dtype):
        return _floored_remainder(g, a, b, dtype)
    return g.op("Mod", a, b, fmod_i=0)


def _pow_type(g, self, exponent):
    return g.output_dtype() if g.op_kind == "aten::float_power" else promote(g, self, exponent)


def _zero_base_exponent(g, base, exponent):
    """Integer powers: PyTorch's 0 ** -n is 0, the ONNX Pow's inf (cast to an integer: INT64_MIN). Where the base is
    0 the exponent is made |n|, which gives 0 (and 0 ** 0 stays 1): e + (base == 0) * (|e| - e), in integer
    arithmetic that every opset has."""
    if not is_value(exponent) and int(constant_value(exponent)) >= 0:
        return exponent
    exponent = cast(g, exponent, TensorProto.INT64)
    zero = g.const(np.zeros((), dtype=np.int64))
    zero_base = cast(g, g.op("Equal", cast(g, base, TensorProto.INT64), zero), TensorProto.INT64)
    return g.op("Add", exponent, g.op("Mul", zero_base, g.op("Sub", g.op("Abs", exponent), exponent)))


def _pow_in(g, self, exponent, work):
    return g.op("Pow", cast(g, self, work), cast(g, exponent, work))


@symbolic("aten::pow", "aten::pow_", "aten::float_power")
def pow(g, self, exponent):
    """Pow-7 takes floats only: integer powers are computed in double, which holds the exact powers up to 2**53
    (Round-free truncation is safe because std::pow is exact on representable integer results)."""
    dtype = _pow_type(g, self, exponent)
    if dtypes.is_float(dtype):
        return _pow_in(g, self, exponent, dtype)
    return cast(g, _pow_in(g, self, _zero_base_exponent(g, self, exponent), DOUBLE), dtype)


@symbolic("aten::pow", "aten::pow_", "aten::float_power", since=12)
def pow_integers(g, self, exponent):
    """Pow-12 takes int32 and int64 bases too."""
    dtype = _pow_type(g, self, exponent)
    if dtypes.is_float(dtype):
        return _pow_in(g, self, exponent, dtype)
    exponent = _zero_base_exponent(g, self, exponent)
    return cast(g, _pow_in(g, self, exponent, dtype if dtype in (INT32, INT64) else INT32), dtype)


@symbolic("aten::square")
def square(g, self):
    dtype = g.output_dtype() or promote(g, self)
    return arith(g, "Mul", self, self, dtype)


@symbolic("aten::neg", "aten::neg_", "aten::negative")
def neg(g, self):
    dtype = g.dtype(self)
    if dtype in (TensorProto.UINT8, TensorProto.UINT16):
        return arith(g, "Sub", _scalar(g, 0, self), self, dtype)
    return g.op("Neg", self)


@symbolic("aten::abs", "aten::abs_", "aten::absolute")
def abs(g, self):
    return g.op("Abs", self)


def _sign_by_comparison(g, x):
    """(x > 0) - (x < 0): also PyTorch's sign(NaN) == 0, where ONNX Sign gives NaN."""
    dtype = g.dtype(x)
    zero = _scalar(g, 0, x)
    positive = cast(g, less(g, zero, x), dtype)
    negative = cast(g, less(g, x, zero), dtype)
    return arith(g, "Sub", positive, negative, dtype)


@symbolic("aten::sign", "aten::sign_")
def sign(g, self):
    return self if g.dtype(self) == BOOL else _sign_by_comparison(g, self)


@symbolic("aten::sign", "aten::sign_", since=9)
def sign_op(g, self):
    """Sign (opset 9) for integers; floats keep the comparisons for sign(NaN) == 0."""
    dtype = g.dtype(self)
    if dtype == BOOL:
        return self
    if dtypes.is_float(dtype):
        return _sign_by_comparison(g, self)
    return g.op("Sign", self)


# -- unary math ---------------------------------------------------------------------------------------------
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
    if x.dtype == DOUBLE and applies(g, DOUBLE_MATH_BY_IDENTITY):
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
    return g.op("Mul", result, _sign_by_comparison(g, x))


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


# -- rounding -----------------------------------------------------------------------------------------------
def _integer_valued(g, self):
    """True when rounding ``self`` is the identity (integer and bool tensors)."""
    return not dtypes.is_float(g.dtype(self))


@symbolic("aten::floor", "aten::floor_")
def floor(g, self):
    return self if _integer_valued(g, self) else g.op("Floor", self)


@symbolic("aten::ceil", "aten::ceil_")
def ceil(g, self):
    return self if _integer_valued(g, self) else g.op("Ceil", self)


@symbolic("aten::trunc", "aten::trunc_", "aten::fix")
def trunc(g, self):
    return self if _integer_valued(g, self) else trunc_value(g, self)


@symbolic("aten::frac", "aten::frac_")
def frac(g, self):
    return g.op("Sub", self, trunc_value(g, self))


@symbolic("aten::round", "aten::round_")
def round(g, self, decimals=None):
    if _integer_valued(g, self):
        return self
    decimals = int(constant_value(decimals)) if decimals is not None else 0
    if decimals == 0:
        return round_half_even(g, self)
    # As PyTorch: scale by 10^decimals (divide for negative decimals), round, undo the scaling.
    scale = _scalar(g, 10.0 ** builtins.abs(decimals), self)
    if decimals > 0:
        return g.op("Div", round_half_even(g, g.op("Mul", self, scale)), scale)
    return g.op("Mul", round_half_even(g, g.op("Div", self, scale)), scale)


@symbolic("aten::minimum")
def minimum(g, self, other):
    _, (a, b) = promote_all(g, self, other)
    return minimum_value(g, a, b)


@symbolic("aten::maximum")
def maximum(g, self, other):
    _, (a, b) = promote_all(g, self, other)
    return maximum_value(g, a, b)


def _nan_ignoring(g, op_type, self, other):
    _, (a, b) = promote_all(g, self, other)
    if not dtypes.is_float(g.dtype(a)):
        return min_max(g, op_type, a, b)
    both = min_max(g, op_type, a, b)
    return select(g, is_nan(g, a), b, select(g, is_nan(g, b), a, both))


@symbolic("aten::fmin")
def fmin(g, self, other):
    return _nan_ignoring(g, "Min", self, other)


@symbolic("aten::fmax")
def fmax(g, self, other):
    return _nan_ignoring(g, "Max", self, other)


@symbolic("aten::clamp", "aten::clamp_", "aten::clip", "aten::clip_")
def clamp(g, self, min=None, max=None):
    dtype = g.output_dtype() or promote(g, *(a for a in (self, min, max) if a is not None))
    return clamp_value(g, cast(g, self, dtype), min, max)


@symbolic("aten::clamp_min", "aten::clamp_min_")
def clamp_min(g, self, min):
    return clamp(g, self, min, None)


@symbolic("aten::clamp_max", "aten::clamp_max_")
def clamp_max(g, self, max):
    return clamp(g, self, None, max)


# -- selection and masking ----------------------------------------------------------------------------------
@symbolic("aten::where")
def where(g, condition, self=None, other=None):
    """where(condition, self, other): Where on promoted types; one-argument where(condition) is
    nonzero(as_tuple=True), NonZero from opset 9."""
    if self is None:
        require_opset(g, 9, "where(condition) needs NonZero")
        return nonzero_vectors(g, condition)
    _, (a, b) = promote_all(g, self, other)
    return select(g, g.value(condition), a, b)


@symbolic("aten::masked_fill", "aten::masked_fill_")
def masked_fill(g, self, mask, value):
    return select(g, g.value(mask), cast(g, value, g.dtype(self)), self)


@symbolic("aten::isnan")
def isnan(g, self):
    return is_nan(g, self)


def _finite_bound(g, x, upper):
    limit = np.finfo(dtypes.numpy_from_onnx(g.dtype(x)))
    return _scalar(g, float(limit.max if upper else limit.min), x)


def _beyond_finite(g, x):
    """Beyond the largest finite value of the type lies only infinity (nothing, for integers)."""
    if not dtypes.is_float(g.dtype(x)):
        return g.op("Not", equal(g, x, x))
    above = less(g, _finite_bound(g, x, True), x)
    below = less(g, x, _finite_bound(g, x, False))
    return g.op("Or", above, below)


@symbolic("aten::isinf")
def isinf(g, self):
    return _beyond_finite(g, self)


@symbolic("aten::isinf", since=10)
def isinf_op(g, self):
    """IsInf (opset 10) takes float and double only: float16 and bfloat16 are tested in float (exact)."""
    dtype = g.dtype(self)
    if not dtypes.is_float(dtype):
        return _beyond_finite(g, self)
    return g.op("IsInf", cast(g, self, FLOAT) if dtype in (TensorProto.FLOAT16, TensorProto.BFLOAT16) else self)


@symbolic("aten::isinf", since=20)
def isinf_20(g, self):
    """IsInf-20 takes float16 and bfloat16 as well."""
    if not dtypes.is_float(g.dtype(self)):
        return _beyond_finite(g, self)
    return g.op("IsInf", self)


@symbolic("aten::isfinite")
def isfinite(g, self):
    if not dtypes.is_float(g.dtype(self)):
        return equal(g, self, self)
    inside = g.op("And", g.op("Not", less(g, _finite_bound(g, self, True), self)),
                  g.op("Not", less(g, self, _finite_bound(g, self, False))))
    return g.op("And", inside, not_nan(g, self))


@symbolic("aten::nan_to_num", "aten::nan_to_num_")
def nan_to_num(g, self, nan=None, posinf=None, neginf=None):
    if not dtypes.is_float(g.dtype(self)):
        return self
    replaced = select(g, is_nan(g, self), _scalar(g, 0.0 if nan is None else constant_value(nan), self), self)
    top = _finite_bound(g, self, True) if posinf is None else _scalar(g, constant_value(posinf), self)
    bottom = _finite_bound(g, self, False) if neginf is None else _scalar(g, constant_value(neginf), self)
    replaced = select(g, less(g, _finite_bound(g, self, True), self), top, replaced)
    return select(g, less(g, self, _finite_bound(g, self, False)), bottom, replaced)


# -- fused arithmetic ---------------------------------------------------------------------------------------
@symbolic("aten::lerp", "aten::lerp_")
def lerp(g, self, end, weight):
    dtype, (start, stop, w) = promote_all(g, self, end, weight)
    return g.op("Add", start, g.op("Mul", w, g.op("Sub", stop, start)))


@symbolic("aten::addcmul", "aten::addcmul_")
def addcmul(g, self, tensor1, tensor2, value=1):
    """self + value * tensor1 * tensor2, float16 computed in float32 and rounded once, as PyTorch's kernel does."""
    dtype, operands = promote_all(g, self, tensor1, tensor2)
    work = dtypes.opmath_type(dtype)
    base, a, b = (cast(g, x, work) for x in operands)
    product = arith(g, "Mul", a, b, work)
    return cast(g, arith(g, "Add", base, _scaled(g, product, value, work), work), dtype)


@symbolic("aten::addcdiv", "aten::addcdiv_")
def addcdiv(g, self, tensor1, tensor2, value=1):
    """self + value * tensor1 / tensor2, float16 computed in float32 and rounded once, as PyTorch's kernel does."""
    dtype, operands = promote_all(g, self, tensor1, tensor2)
    work = dtypes.opmath_type(dtype)
    base, a, b = (cast(g, x, work) for x in operands)
    return cast(g, g.op("Add", base, _scaled(g, g.op("Div", a, b), value, work)), dtype)


@symbolic("aten::hypot", "aten::hypot_")
def hypot(g, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


@symbolic("aten::logaddexp")
def logaddexp(g, self, other):
    dtype, (a, b) = promote_all(g, self, other)
    # Factor out the larger term so exp never overflows: max + log(1 + exp(-|a - b|)).
    larger = maximum_value(g, a, b)
    gap = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    # Equal infinities give inf - inf = NaN; their gap is 0 (logaddexp(-inf, -inf) = -inf, as in torch).
    gap = select(g, equal(g, a, b), _scalar(g, 0, a), gap)
    return g.op("Add", larger, g.op("Log", g.op("Add", _scalar(g, 1, a), g.op("Exp", gap))))


@symbolic("aten::xlogy", "aten::xlogy_")
def xlogy(g, self, other):
    dtype = float_type(g, self, other)
    x, y = cast(g, self, dtype), cast(g, other, dtype)
    product = g.op("Mul", x, g.op("Log", y))
    zero = _scalar(g, 0, x)
    # 0 * log(y) is 0 even for y == 0, but a NaN y stays NaN.
    return select(g, is_nan(g, y), y, select(g, equal(g, x, zero), zero, product))


# -- bit shifts, logit ----------------------------------------------------------------------------------------------
_UNSIGNED = frozenset({TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64})


def _power_of_two(g, exponent, dtype: int):
    """2 ** exponent in ``dtype``: a constant for a constant exponent, else computed in double (exact below 2^53)."""
    if not is_value(exponent):
        return g.const(np.left_shift(1, np.asarray(constant_value(exponent), dtype=np.int64)), dtype)
    return cast(g, g.op("Pow", g.const(2.0, DOUBLE), cast(g, exponent, DOUBLE)), dtype)


def _shift(g, self, other, direction: str):
    """``self << other`` / ``self >> other`` for integers. Unsigned types: ONNX BitShift (opset 11). Signed
    types: multiplication by 2^other, and floor division by it (arithmetic shift: -5 >> 1 == -3), written as a
    truncating Div corrected down by one where it rounded towards zero, which is right whichever way Div rounds."""
    dtype = g.output_dtype() or g.dtype(self)
    self = cast(g, self, dtype)
    if dtype in _UNSIGNED:
        require_opset(g, 11, "shifting unsigned integers needs BitShift")
        return g.op("BitShift", self, cast(g, other, dtype), direction_s=direction)
    if not dtypes.is_integer(dtype):
        raise unsupported(g.op_kind, g.opset, "bit shifts of non-integer tensors")
    factor = _power_of_two(g, other, dtype)
    if direction == "LEFT":
        return g.op("Mul", self, factor)
    quotient = g.op("Div", self, factor)
    rounded_up = less(g, self, g.op("Mul", quotient, factor))
    return g.op("Sub", quotient, cast(g, rounded_up, dtype))


@symbolic("aten::__lshift__", "aten::bitwise_left_shift")
def lshift(g, self, other):
    return _shift(g, self, other, "LEFT")


@symbolic("aten::__rshift__", "aten::bitwise_right_shift")
def rshift(g, self, other):
    return _shift(g, self, other, "RIGHT")


@symbolic("aten::logit", "aten::special_logit")
@parse_args("v", "v")
def logit(g, self, eps=None):
    """logit(x, eps) = log(z / (1 - z)) with z = x clamped to [eps, 1 - eps] when eps is given."""
    dtype = g.output_dtype() or FLOAT
    z = cast(g, self, dtype)
    if constant_value(eps) is not None:
        eps = float(constant_value(eps))
        z = clamp_value(g, z, eps, 1.0 - eps)
    return g.op("Log", g.op("Div", z, g.op("Sub", g.const(1.0, dtype), z)))
