"""Rounding, element-wise minimum and maximum, and clamping: Floor, Ceil, trunc, frac, round half to even (with
decimals), Min/Max (NaN-propagating, and fmin/fmax ignoring NaN), Clip. Integer and bool tensors round to
themselves."""

from __future__ import annotations

import builtins

from exporter import dtypes
from exporter.lowering.arithmetic import clamp_value, maximum_value, min_max, minimum_value
from exporter.lowering.arithmetic import typed_scalar as _scalar
from exporter.lowering.comparison import is_nan, select
from exporter.lowering.core import cast, constant_value, promote, promote_all
from exporter.lowering.rounding import round_half_even, trunc_value
from exporter.registry import symbolic


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
