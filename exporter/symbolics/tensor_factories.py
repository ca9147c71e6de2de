"""Tensor factories: zeros/ones/full/empty and their _like/new_ forms, arange/range, linspace, eye, fill_.

Factories whose arguments are all constants are folded by the converter before reaching these symbolics; what
arrives here has a size or bound computed at run time (in dynamic exports) or is an ``empty`` (never folded).
A filled tensor of run-time shape is ConstantOfShape from opset 9, Expand of a scalar at 8 and Tile at 7.
Ranges of run-time length use Range from opset 11 and NonZero over a ConstantOfShape of ones at 9-10.
The element type always follows the type TorchScript recorded for the node, which applies torch's dtype rules.
"""

from __future__ import annotations

import numpy as np
import torch

from exporter import dtypes
from exporter.lowering.core import (
    BOOL,
    FLOAT,
    INT64,
    cast,
    constant_value,
    dim_size,
    is_value,
    output_dtype,
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
    return output_dtype(g) or fallback or FLOAT


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
    return g.node.schema().partition("(")[0].endswith("out")


def _bound_count(g) -> int:
    """How many of aten::arange / aten::range's inputs are bounds (start, end, step), whichever overload it is."""
    inputs = list(g.node.inputs())
    if _is_out_overload(g):
        return len(inputs) - 1
    # The overloads end with dtype, layout, device, pin_memory; what comes before are the bounds.
    return len(inputs) - 4 if len(inputs) >= 5 else len(inputs)


def _compute_type(out: int) -> int:
    return out if out in (INT64, FLOAT, DOUBLE, dtypes.onnx_from_torch(torch.int32)) else (
        DOUBLE if dtypes.is_float(out) else INT64)


def _range_by_range_op(g, start, end, step, out_type: int, inclusive: bool):
    work = _compute_type(out_type)
    start, step = cast(g, start, work), cast(g, step, work)
    limit = cast(g, end, work)
    if inclusive:  # torch.range includes ``end``: extend the limit by half a step
        limit = g.op("Add", cast(g, limit, DOUBLE), g.op("Div", cast(g, step, DOUBLE), g.const(2.0, torch.float64)))
        limit = cast(g, limit, work)
    return cast(g, g.op("Range", start, limit, step), out_type)


def _range_by_positions(g, start, end, step, out_type: int, inclusive: bool):
    """start + step * (0, 1, ..., count - 1), the positions coming from NonZero over a ConstantOfShape of ones."""
    require_opset(g, 9, "a range with run-time bounds needs ConstantOfShape/NonZero")
    work = _compute_type(out_type)
    start_d, end_d, step_d = (cast(g, v, DOUBLE) for v in (start, end, step))
    span = g.op("Div", g.op("Sub", end_d, start_d), step_d)
    count = g.op("Floor", span) if inclusive else g.op("Ceil", span)
    count = cast(g, count, INT64)
    if inclusive:
        count = g.op("Add", count, g.const(1, torch.int64))
    count.shape = ()
    positions = cast(g, arange_indices(g, count), work)
    values = g.op("Add", cast(g, start, work), g.op("Mul", positions, cast(g, step, work)))
    return cast(g, values, out_type)


def _arange_arguments(g, args) -> tuple:
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


def _range_arguments(g, args) -> tuple:
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
    steps = int(constant_value(steps))
    start, end = (cast(g, bound, out_type) for bound in (start, end))  # as torch's kernel reads them
    # torch computes a floating result in its own type (float16 steps and products included), integers in double.
    work = out_type if dtypes.is_float(out_type) else DOUBLE
    return cast(g, _linspace_in(g, start, end, steps, work), out_type)


def _linspace_in(g, start, end, steps: int, work: int):
    """``steps`` evenly spaced values from start to end, computed in ``work`` the way torch does."""
    start, end = cast(g, start, work), cast(g, end, work)
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
    """hann_window(L[, periodic]) of run-time length, as torch computes it: 0.5 - 0.5 * cos(n * (2 pi / N)) for
    n < L in the result type, the factor computed in double, N = L when periodic else L - 1; [1] when L is 1.
    The positions come from Range (opset 11) or NonZero (9)."""
    periodic, options = (bool(constant_value(args[0])), args[1:]) if len(args) == 5 else (True, args)
    out_type = _dtype(g, _first(options))
    length = cast(g, window_length, INT64)
    period = length if periodic else g.op("Sub", length, g.const(1, torch.int64))
    factor = cast(g, g.op("Div", g.const(2 * np.pi, torch.float64), cast(g, period, DOUBLE)), out_type)
    positions = cast(g, arange_indices(g, length), out_type)
    numbers = dtypes.numpy_from_onnx(out_type)
    cosine = g.op("Cos", g.op("Mul", positions, factor))
    window = g.op("Add", g.op("Mul", cosine, g.const(np.array(-0.5, dtype=numbers))), g.const(np.array(0.5, dtype=numbers)))
    single = g.op("Equal", length, g.const(1, torch.int64))
    return g.op("Where", single, g.const(np.ones(1, dtype=numbers)), window)


@symbolic("aten::eye")
def eye(g, n, *args):
    """eye(n[, m]) of run-time size: EyeLike over a ConstantOfShape."""
    has_columns = len(list(g.node.inputs())) == 6
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
