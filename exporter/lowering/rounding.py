"""Rounding building blocks: truncation, round half to even (Round from opset 11), the truncated remainder (Mod from
opset 10), floor division of floats (exact with Mod from opset 10) and the step from truncated to floored results
(Where from opset 9)."""

from __future__ import annotations

from exporter import dtypes
from exporter.lowering.arithmetic import arith, typed_scalar
from exporter.lowering.comparison import equal, less, select


def trunc_value(g, x):
    """Round a float value toward zero: floor, plus one for negative non-integers (exact, inf and NaN kept)."""
    floored = g.op("Floor", x)
    zero = typed_scalar(g, 0, x)
    raise_by_one = g.op("And", less(g, x, zero), less(g, floored, x))
    return g.op("Add", floored, g.op("Cast", raise_by_one, to_i=g.dtype(x)))


def round_half_even(g, x):
    """Round to nearest, ties to even: Round from opset 11, an exact Floor-based identity before it."""
    if g.opset >= 11:
        return g.op("Round", x)
    floored = g.op("Floor", x)
    fraction = g.op("Sub", x, floored)  # exact: x and floor(x) are within one unit of each other
    half, two = typed_scalar(g, 0.5, x), typed_scalar(g, 2, x)
    odd = g.op("Sub", floored, g.op("Mul", two, g.op("Floor", g.op("Div", floored, two))))
    tie_to_odd = g.op("And", equal(g, fraction, half), equal(g, odd, typed_scalar(g, 1, x)))
    round_up = g.op("Or", less(g, half, fraction), tie_to_odd)
    return g.op("Add", floored, g.op("Cast", round_up, to_i=g.dtype(x)))


def truncated_remainder(g, a, b, dtype):
    """``fmod(a, b)`` (the sign of ``a``): Mod with fmod=1 from opset 10, ``a - trunc(a / b) * b`` before."""
    if g.opset >= 10:
        return g.op("Mod", a, b, fmod_i=1)
    if dtypes.is_float(dtype):
        quotient = trunc_value(g, g.op("Div", a, b))
    else:
        quotient = arith(g, "Div", a, b, dtype)
    return arith(g, "Sub", a, arith(g, "Mul", quotient, b, dtype), dtype)


def off_floor(g, remainder, divisor):
    """True where a truncated remainder is non-zero and its sign differs from the divisor's: where truncated and
    floored division differ."""
    zero = typed_scalar(g, 0, remainder)
    signs_differ = g.op("Xor", less(g, remainder, zero), less(g, divisor, zero))
    return g.op("And", g.op("Not", equal(g, remainder, zero)), signs_differ)


def add_where(g, base, condition, delta):
    """``base + (delta if condition else 0)``.

    Before Where (opset 9) this is ``base + delta * condition``, exact unless ``delta`` is infinite; the
    callers' deltas are the constants +-1 and, for ``remainder``, the divisor.
    """
    dtype = g.dtype(base)
    if g.opset >= 9:
        return arith(g, "Add", base, select(g, condition, delta, typed_scalar(g, 0, base)), dtype)
    return arith(g, "Add", base, arith(g, "Mul", delta, g.op("Cast", condition, to_i=dtype), dtype), dtype)


def floor_divide_floats(g, a, b):
    """``a // b`` for floats as PyTorch computes it: from opset 10 its algorithm on the exact multiple
    ``a - fmod(a, b)``, so 1.0 // 0.1 is 9 as in Python, not floor(10.000000000000002) = 10. Before Mod there is no
    exact fmod; floor(a / b) differs from PyTorch only when a / b rounds onto an integer it did not reach."""
    if g.opset < 10:
        return g.op("Floor", g.op("Div", a, b))
    mod = g.op("Mod", a, b, fmod_i=1)
    quotient = g.op("Div", g.op("Sub", a, mod), b)
    quotient = add_where(g, quotient, off_floor(g, mod, b), typed_scalar(g, -1, quotient))
    floored = g.op("Floor", quotient)
    rounds_up = less(g, typed_scalar(g, 0.5, a), g.op("Sub", quotient, floored))
    floored = add_where(g, floored, rounds_up, typed_scalar(g, 1, floored))
    divide_by_zero = equal(g, b, typed_scalar(g, 0, b))
    return select(g, divide_by_zero, g.op("Div", a, b), floored)
