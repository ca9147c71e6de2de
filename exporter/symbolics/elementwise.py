"""Element-wise arithmetic (Add, Sub, Mul, Div, Mod, Pow, Abs, Sign, lerp, addcmul, hypot, bit shifts, logit), Where
and masked_fill, and the non-finite tests (isnan, isinf, isfinite, nan_to_num). Math functions (Sqrt, Exp, Tan, ...)
are ``math_functions``', rounding, minimum/maximum and clamping ``rounding``'s.

Types follow PyTorch's promotion (``promote``): Python scalars take the dtype PyTorch gives them, integer
true division on integers produces the default float type. ONNX takes some types only from later opsets (no
int8/uint8 Add before opset 14): those are computed in a wider type, and narrow results wrap back on the final Cast
as PyTorch's do.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import BOOL, DOUBLE, FLOAT, INT32, INT64
from exporter.lowering.arithmetic import (
    arith,
    clamp_value,
    float_type,
    maximum_value,
    sign_by_comparison,
)
from exporter.lowering.arithmetic import typed_scalar as _scalar
from exporter.lowering.comparison import equal, is_nan, less, not_nan, select
from exporter.lowering.core import cast, constant_value, is_value, promote, promote_all, require_opset
from exporter.lowering.indexing import nonzero_vectors
from exporter.lowering.rounding import (
    add_where,
    floor_divide_floats,
    off_floor,
    trunc_value,
    truncated_remainder,
)
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
    if not is_value(exponent) and bool(np.all(np.asarray(constant_value(exponent)) >= 0)):
        return exponent  # a constant exponent (a number, or a tensor the export folded) with no negative power
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


@symbolic("aten::sign", "aten::sign_")
def sign(g, self):
    return self if g.dtype(self) == BOOL else sign_by_comparison(g, self)


@symbolic("aten::sign", "aten::sign_", since=9)
def sign_op(g, self):
    """Sign (opset 9) for integers; floats keep the comparisons for sign(NaN) == 0."""
    dtype = g.dtype(self)
    if dtype == BOOL:
        return self
    if dtypes.is_float(dtype):
        return sign_by_comparison(g, self)
    return g.op("Sign", self)


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
