"""Tensor factories: zeros/ones/full/empty and their _like/new_ forms, arange/range, linspace, eye, fill_.

Factories whose arguments are all constants are folded by the converter before reaching these symbolics; what
arrives here has a size or bound computed at run time (in dynamic exports) or is an ``empty`` (never folded).
A filled tensor of run-time shape is ConstantOfShape from opset 9, Expand of a scalar at 8 and Tile at 7.
Ranges of run-time length use Range from opset 11 and NonZero over a ConstantOfShape of ones at 9-10.
The element type always follows the type TorchScript recorded for the node, which applies torch's dtype rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from exporter import dtypes
from exporter.dtypes import BOOL, FLOAT, INT64
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    require_opset,
    reshape,
    shape_of,
    to_int64_list_value,
    torch_dtype_arg,
)
from exporter.lowering.factories import filled
from exporter.lowering.shape import arange_indices
from exporter.registry import symbolic

DOUBLE = dtypes.onnx_from_torch(torch.float64)


def _size_list(size):
    if isinstance(size, (list, tuple)) or is_value(size):
        return size
    return constant_value(size)


def _dtype(g, dtype_arg=None, fallback=None) -> int:
    """The result's element type: the explicit ``dtype`` argument, else the type TorchScript recorded (traces
    always record it), else torch's default for this factory (``fallback``, float32 when not given)."""
    explicit = torch_dtype_arg(dtype_arg)
    if explicit is not None:
        return dtypes.onnx_from_torch(explicit)
    return g.output_dtype() or fallback or FLOAT


def _fill_type(g, fill) -> int:
    """torch.full's dtype inference: bool fill -> bool, integer -> int64, floating -> the default float32."""
    if is_value(fill):
        return FLOAT if dtypes.is_float(fill.dtype) else (fill.dtype or FLOAT)
    value = constant_value(fill)
    return BOOL if isinstance(value, bool) else INT64 if isinstance(value, int) else FLOAT


def _first(args):
    return args[0] if args else None


@symbolic("aten::zeros", "aten::empty")
def zeros(g, size, *options):
    """zeros/empty(size): zeros of the size (empty contents are undefined in torch; zeros are a valid choice)."""
    return filled(g, _size_list(size), 0, _dtype(g, _first(options)))


@symbolic("aten::ones")
def ones(g, size, *options):
    """ones(size)."""
    return filled(g, _size_list(size), 1, _dtype(g, _first(options)))


@symbolic("aten::full")
def full(g, size, fill_value, *options):
    """full(size, fill_value): dtype from the argument, else from the fill value's type."""
    return filled(g, _size_list(size), fill_value, _dtype(g, _first(options), _fill_type(g, fill_value)))


@symbolic("aten::zeros_like", "aten::empty_like")
def zeros_like(g, self, *options):
    """zeros_like/empty_like(self): zeros of self's shape."""
    return filled(g, shape_of(g, self), 0, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::ones_like")
def ones_like(g, self, *options):
    """ones_like(self)."""
    return filled(g, shape_of(g, self), 1, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::full_like")
def full_like(g, self, fill_value, *options):
    """full_like(self, fill_value)."""
    return filled(g, shape_of(g, self), fill_value, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::new_zeros", "aten::new_empty")
def new_zeros(g, self, size, *options):
    """self.new_zeros/new_empty(size): zeros with self's dtype unless one is given."""
    return filled(g, _size_list(size), 0, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::new_ones")
def new_ones(g, self, size, *options):
    """self.new_ones(size)."""
    return filled(g, _size_list(size), 1, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::new_full")
def new_full(g, self, size, fill_value, *options):
    """self.new_full(size, fill_value)."""
    return filled(g, _size_list(size), fill_value, _dtype(g, _first(options), g.dtype(self)))


@symbolic("aten::fill", "aten::fill_")
def fill(g, self, value):
    """fill_(value): a tensor of self's shape and type holding value."""
    return filled(g, shape_of(g, self), value, g.dtype(self))


@symbolic("aten::zero_")
def zero_(g, self):
    """zero_(): zeros of self's shape and type."""
    return filled(g, shape_of(g, self), 0, g.dtype(self))


# -- ranges -----------------------------------------------------------------------------------------------------
def _is_out_overload(g) -> bool:
    """Whether the node is an ``out=`` overload (``aten::arange.out``, ``.start_out``): its last input is ``out``."""
    return g.overload.endswith("out")


def _bound_count(g) -> int:
    """How many of aten::arange / aten::range's inputs are bounds (start, end, step), whichever overload it is."""
    count = g.input_count
    if _is_out_overload(g):
        return count - 1
    # The overloads end with dtype, layout, device, pin_memory; what comes before are the bounds.
    return count - 4 if count >= 5 else count


def _accumulate_type(out: int) -> int:
    """The type torch's CPU range kernels convert the bounds to and compute in: int64 for an integer result (the
    bounds truncated towards zero), double for a floating one."""
    return DOUBLE if dtypes.is_float(out) else INT64


def _range_count(g, start, end, step, out_type: int, inclusive: bool):
    """The element count of torch's range kernels, as an int64 scalar. arange: ceil((end - start) / step), from the
    bounds truncated to integers for an int64 result, from the bounds as given for every other type (torch's kernel
    reads them as doubles there: arange(8.5, dtype=int32) has 9 elements, arange(8.5, dtype=int64) 8). range:
    (end - start) / step + 1 truncated, always from the bounds converted to the accumulate type."""
    if inclusive or out_type == INT64:
        start, end, step = (cast(g, v, _accumulate_type(out_type)) for v in (start, end, step))
    start_d, end_d, step_d = (cast(g, v, DOUBLE) for v in (start, end, step))
    span = g.op("Div", g.op("Sub", end_d, start_d), step_d)
    count = g.op("Floor", span) if inclusive else g.op("Ceil", span)
    count = cast(g, count, INT64)
    if inclusive:
        count = g.op("Add", count, g.const(1, torch.int64))
    count.shape = ()
    return count


def _range_by_positions(g, start, end, step, out_type: int, inclusive: bool):
    """start + step * (0, 1, ..., count - 1), computed in the accumulate type as torch does; the positions come from
    Range from opset 11 and from NonZero over a ConstantOfShape of ones at 9-10."""
    require_opset(g, 9, "a range with run-time bounds needs ConstantOfShape/NonZero")
    count = _range_count(g, start, end, step, out_type, inclusive)
    work = _accumulate_type(out_type)
    positions = cast(g, arange_indices(g, count), work)
    values = g.op("Add", cast(g, start, work), g.op("Mul", positions, cast(g, step, work)))
    return cast(g, values, out_type)


def _range_by_range_op(g, start, end, step, out_type: int, inclusive: bool):
    """Range over the bounds converted to the accumulate type, where its count is torch's: arange with an int64 or
    floating result. The other integer results (whose count comes from the bounds as given) and torch.range (whose
    count includes ``end``) take the positions form."""
    if inclusive or not (out_type == INT64 or dtypes.is_float(out_type)):
        return _range_by_positions(g, start, end, step, out_type, inclusive)
    work = _accumulate_type(out_type)
    start, end, step = (cast(g, v, work) for v in (start, end, step))
    return cast(g, g.op("Range", start, end, step), out_type)


def _arange_arguments(g, args) -> tuple[Any, Any, Any, int]:
    """(start, end, step, result type) of aten::arange, whichever overload it is."""
    count = _bound_count(g)
    bounds, dtype_arg = args[:count], _first(args[count:])
    if len(bounds) == 1:
        start, end, step = 0, bounds[0], 1
    elif len(bounds) == 2:
        (start, end), step = bounds, 1
    else:
        start, end, step = bounds[:3]
    # torch.arange gives int64 when every bound is an integer, else the default float type.
    bounds = (start, end, step)
    integral = all(not dtypes.is_float(g.dtype(b)) and not (is_value(b) and b.dtype is None) for b in bounds)
    if _is_out_overload(g):  # the result takes the type of the ``out`` tensor
        out_type = g.dtype(args[-1])
    else:
        out_type = _dtype(g, dtype_arg, INT64 if integral else FLOAT)
    return start, end, step, out_type


def _range_arguments(g, args) -> tuple[Any, Any, Any, int]:
    """(start, end, step, result type) of aten::range."""
    count = _bound_count(g)
    bounds, dtype_arg = args[:count], _first(args[count:])
    step = bounds[2] if len(bounds) > 2 else 1
    return bounds[0], bounds[1], step, _dtype(g, dtype_arg)


@symbolic("aten::arange")
def arange_by_positions(g, *args):
    """arange(end) / arange(start, end[, step]) with bounds known at run time, before Range (opset 11): needs
    NonZero (opset 9)."""
    return _range_by_positions(g, *_arange_arguments(g, args), inclusive=False)


@symbolic("aten::arange", since=11)
def arange(g, *args):
    """arange(end) / arange(start, end[, step]) with bounds known at run time: Range."""
    return _range_by_range_op(g, *_arange_arguments(g, args), inclusive=False)


@symbolic("aten::range")
def range_by_positions(g, *args):
    """torch.range(start, end, step): like arange but including end; before Range (opset 11): needs NonZero
    (opset 9)."""
    return _range_by_positions(g, *_range_arguments(g, args), inclusive=True)


@symbolic("aten::range", since=11)
def range_(g, *args):
    """torch.range(start, end, step): like arange but including end; Range."""
    return _range_by_range_op(g, *_range_arguments(g, args), inclusive=True)


@symbolic("aten::linspace")
def linspace(g, start, end, steps, *options):
    """linspace(start, end, steps) with run-time bounds; steps must be a constant. The bounds are first converted to
    the result type, as torch's kernel does (an integer result spaces them truncated: 4.3 counts as 4)."""
    out_type = _dtype(g, _first(options))
    steps = int(constant_value(steps)) if is_constant(steps) else steps
    start, end = (cast(g, bound, out_type) for bound in (start, end))  # as torch's kernel reads them
    # torch computes a floating result in its own type (float16 steps and products included), integers in double.
    work = out_type if dtypes.is_float(out_type) else DOUBLE
    return cast(g, _linspace_in(g, start, end, steps, work), out_type)


def _linspace_run_time_steps(g, start, end, steps, work: int):
    """linspace with a step count computed at run time: positions i = 0..steps-1 (Range from 11, NonZero at 9-10),
    start + i * step below the halfway point and end - (steps - 1 - i) * step from it, as torch's kernel; the
    halfway point is steps // 2, but 1 for a single step (whose value is start)."""
    steps = cast(g, reshape(g, steps, []), INT64)
    steps.shape = ()
    positions = arange_indices(g, steps)
    one = g.const(1, torch.int64)
    last = g.op("Sub", steps, one)
    single = cast(g, g.op("Equal", steps, one), INT64)
    # (a single step divides by 1, not 0: Where computes both branches, and 0 * inf would be NaN)
    step = g.op("Div", g.op("Sub", end, start), cast(g, g.op("Add", last, single), work))
    half = g.op("Add", g.op("Div", steps, g.const(2, torch.int64)), single)
    lower = g.op("Add", start, g.op("Mul", cast(g, positions, work), step))
    upper = g.op("Sub", end, g.op("Mul", cast(g, g.op("Sub", last, positions), work), step))
    return g.op("Where", g.op("Less", positions, half), lower, upper)


def _linspace_in(g, start, end, steps, work: int):
    """``steps`` evenly spaced values from start to end, computed in ``work`` the way torch does."""
    start, end = cast(g, start, work), cast(g, end, work)
    if is_value(steps):
        return _linspace_run_time_steps(g, start, end, steps, work)
    if steps == 1:
        return reshape(g, start, [1])
    numbers = dtypes.numpy_from_onnx(work)
    step = g.op("Div", g.op("Sub", end, start), g.const(np.array(steps - 1, dtype=numbers)))
    # torch walks from both ends towards the middle, so the last value is exactly ``end``.
    half = steps // 2
    lower = g.op("Add", start, g.op("Mul", g.const(np.arange(half, dtype=numbers)), step))
    upper_offsets = np.arange(steps - half - 1, -1, -1, dtype=numbers)
    upper = g.op("Sub", end, g.op("Mul", g.const(upper_offsets), step))
    return g.op("Concat", lower, upper, axis_i=0)


@symbolic("aten::hann_window")
def hann_window(g, window_length, *args):
    """hann_window(length[, periodic]) of a length computed at run time (a constant one is folded): as torch computes
    it, 0.5 - 0.5 * cos(n * (2 pi / d)) for n = 0..length-1, the factor rounded to the result type, d = length when
    periodic (the default) and length - 1 when not; a length of 1 gives [1] (positions from Range/NonZero and a Where:
    opset 9)."""
    has_periodic = g.input_count == 6
    periodic = bool(constant_value(args[0])) if has_periodic else True
    out_type = _dtype(g, _first(args[1:] if has_periodic else args))
    work = out_type if out_type in (FLOAT, DOUBLE) else FLOAT
    length = cast(g, reshape(g, window_length, []), INT64)
    length.shape = ()
    positions = cast(g, arange_indices(g, length), work)
    span = length if periodic else g.op("Sub", length, g.const(1, torch.int64))
    factor = cast(g, g.op("Div", g.const(2 * np.pi, torch.float64), cast(g, span, DOUBLE)), work)
    numbers = dtypes.numpy_from_onnx(work)
    window = g.op("Add", g.op("Mul", g.op("Cos", g.op("Mul", positions, factor)), g.const(np.array(-0.5, numbers))),
                  g.const(np.array(0.5, numbers)))
    single = g.op("Equal", length, g.const(1, torch.int64))
    window = g.op("Where", single, g.const(np.array(1.0, numbers)), window)
    return cast(g, window, out_type)


@symbolic("aten::eye")
def eye(g, n, *args):
    """eye(n[, m]) of run-time size: EyeLike over a ConstantOfShape."""
    has_columns = g.input_count == 6
    m, options = (args[0], args[1:]) if has_columns else (n, args)
    require_opset(g, 9, "an identity matrix of run-time size needs EyeLike")
    out_type = _dtype(g, _first(options))
    zeros_ = g.op("ConstantOfShape", to_int64_list_value(g, [n, m]), value_t=np.zeros(1, dtype=np.float32))
    return cast(g, g.op("EyeLike", zeros_, dtype_i=FLOAT), out_type)


@symbolic("aten::logspace")
def logspace(g, start, end, steps, base, *options):
    """logspace(start, end, steps, base): base ** linspace(start, end, steps), in float64 like torch's kernel. An
    result takes its bounds converted to the result type (integer exponents for an integer result), except with a single
    step, where start stays as given."""
    out_type, steps = _dtype(g, _first(options)), int(constant_value(steps))
    if steps > 1:
        start, end = (cast(g, bound, out_type) for bound in (start, end))
    exponents = _linspace_in(g, start, end, steps, DOUBLE)
    powers = g.op("Pow", g.const(float(constant_value(base)), torch.float64), exponents)
    return cast(g, powers, out_type)


@symbolic("aten::_dim_arange")
def dim_arange(g, like, dim):
    """_dim_arange(like, dim): 0 .. like.size(dim) - 1 as int64 (what a traced ``arange(x.size(dim))`` records)."""
    return arange_indices(g, dim_size(g, like, int(constant_value(dim))))
