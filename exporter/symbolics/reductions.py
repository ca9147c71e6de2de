"""Reductions: sum, mean, prod, max/min (and their index forms), var/std, norms, logsumexp, all/any.

ONNX Reduce* ops take their axes as an attribute through opset 16 (ReduceSum: an input from 13); both forms
come from ``reduce_op``. They take no bool and no int8/int16/uint8 (ReduceMax/Min: int8/uint8 from opset 12), so
those are widened first and the result cast back to the type PyTorch records. Half-precision inputs accumulate in
float32, as PyTorch itself does (``accumulation_type``); extremes are found in the input's own type where ONNX
takes it (``extreme_type``).
"""

from __future__ import annotations

import math

from exporter.dtypes import BOOL, INT32, INT64
from exporter.lowering.core import (
    cast,
    constant_value,
    is_value,
    normalize_dim,
    reduce_op,
    require_rank,
    reshape,
    squeeze,
    torch_dtype_arg,
)
from exporter.lowering.reductions import (
    NARROW_INTS,
    accumulation_type,
    extreme_type,
    reduce,
    reduction_axes,
    reduction_result_type,
    vector_norm,
)
from exporter.registry import REGISTRY, parse_args, symbolic, unsupported


def _is_overload(g, name: str) -> bool:
    return g.overload == name


# -- sum, mean, prod -------------------------------------------------------------------------------------------
@symbolic("aten::sum")
def sum_(g, self, *args):
    """sum(self, dtype) and sum.dim_IntList(self, dim, keepdim, dtype)."""
    dim, keepdim, dtype = (None, False, args[0]) if len(args) == 1 else args
    return _accumulate(g, "ReduceSum", self, dim, constant_value(keepdim), dtype)


@symbolic("aten::mean")
def mean(g, self, *args):
    """mean(self, dtype) and mean.dim(self, dim, keepdim, dtype); PyTorch rejects integer inputs itself."""
    dim, keepdim, dtype = (None, False, args[0]) if len(args) == 1 else args
    return _accumulate(g, "ReduceMean", self, dim, constant_value(keepdim), dtype)


@symbolic("aten::prod")
def prod(g, self, *args):
    """prod(self, dtype) and prod.dim_int(self, dim, keepdim, dtype)."""
    dim, keepdim, dtype = (None, False, args[0]) if len(args) == 1 else args
    return _accumulate(g, "ReduceProd", self, dim, constant_value(keepdim), dtype)


def _accumulate(g, op_type, x, dim, keepdim, dtype):
    out = reduction_result_type(g, x, dtype, integers_to=INT64)
    compute = accumulation_type(out)
    # A requested dtype applies before accumulating (PyTorch casts the input first).
    if torch_dtype_arg(dtype) is not None and out in NARROW_INTS:
        x = cast(g, x, out)
    return reduce(g, op_type, x, reduction_axes(g, x, dim), bool(keepdim), compute, out)


# -- max, min, amax, amin, argmax, argmin ----------------------------------------------------------------------
@symbolic("aten::max")
def max_(g, self, *args):
    return _extreme(g, "ReduceMax", "ArgMax", "aten::maximum", self, args)


@symbolic("aten::min")
def min_(g, self, *args):
    return _extreme(g, "ReduceMin", "ArgMin", "aten::minimum", self, args)


def _extreme(g, reduce_type, arg_type, elementwise_name, x, args):
    """max(self) reduces everything; max.dim gives (values, indices); max.other is element-wise."""
    if len(args) == 1:
        # The binary overload is the element-wise op, exported by its own symbolic.
        return REGISTRY.lookup(elementwise_name, g.opset)(g, x, args[0])
    if not args:
        return reduce(g, reduce_type, x, None, False, extreme_type(g, g.dtype(x)), g.dtype(x))
    dim, keepdim = int(constant_value(args[0])), bool(constant_value(args[1]))
    axes = reduction_axes(g, x, dim)
    values = reduce(g, reduce_type, x, axes, keepdim, extreme_type(g, g.dtype(x)), g.dtype(x))
    indices = _arg_extreme(g, arg_type, x, axes[0] if axes else 0, keepdim)  # no axes: a 0-d input
    return values, indices


@symbolic("aten::amax")
@parse_args("v", "is", "b")
def amax(g, self, dim, keepdim):
    return reduce(g, "ReduceMax", self, reduction_axes(g, self, dim), keepdim,
                  extreme_type(g, g.dtype(self)), g.dtype(self))


@symbolic("aten::amin")
@parse_args("v", "is", "b")
def amin(g, self, dim, keepdim):
    return reduce(g, "ReduceMin", self, reduction_axes(g, self, dim), keepdim,
                  extreme_type(g, g.dtype(self)), g.dtype(self))


@symbolic("aten::argmax")
@parse_args("v", "v", "b")
def argmax(g, self, dim, keepdim):
    return _arg_reduction(g, "ArgMax", self, dim, keepdim)


@symbolic("aten::argmin")
@parse_args("v", "v", "b")
def argmin(g, self, dim, keepdim):
    return _arg_reduction(g, "ArgMin", self, dim, keepdim)


def _arg_reduction(g, op_type, x, dim, keepdim):
    rank = require_rank(g, x)
    if dim is None or rank == 0:
        # Over the flattened tensor; keepdim keeps every axis as size 1.
        flat = _arg_extreme(g, op_type, reshape(g, x, [-1]), 0, False)
        return reshape(g, flat, [1] * rank) if keepdim else flat
    return _arg_extreme(g, op_type, x, normalize_dim(int(constant_value(dim)), rank), keepdim)


def _arg_extreme(g, op_type, x, axis, keepdim):
    """ArgMax/ArgMin; both ONNX and PyTorch pick the first of equal extremes (select_last_index=0)."""
    x = cast(g, g.value(x), INT32) if x.dtype == BOOL else g.value(x)
    if g.rank(x) == 0:
        x = reshape(g, x, [1])
        keepdim = False
    return g.op(op_type, x, axis_i=axis, keepdims_i=int(keepdim))


# -- var, std and their fused forms with mean ------------------------------------------------------------------
@symbolic("aten::var")
def var(g, self, *args):
    variance, _ = _moments(g, self, args)
    return variance


@symbolic("aten::std")
def std(g, self, *args):
    variance, _ = _moments(g, self, args)
    return g.op("Sqrt", variance)


@symbolic("aten::var_mean")
def var_mean(g, self, *args):
    return _moments(g, self, args)


@symbolic("aten::std_mean")
def std_mean(g, self, *args):
    variance, mean_value = _moments(g, self, args)
    return g.op("Sqrt", variance), mean_value


def _moments(g, x, args):
    """(variance, mean) for the overloads (self, unbiased), .dim(self, dim, unbiased, keepdim) and
    .correction(self, dim, correction, keepdim)."""
    if len(args) == 1:
        dim, correction, keepdim = None, 1 if constant_value(args[0]) else 0, False
    else:
        dim, third, keepdim = args[0], constant_value(args[1]), bool(constant_value(args[2]))
        if _is_overload(g, "correction"):
            correction = 1 if third is None else third
        else:
            correction = 1 if third else 0
    out = g.output_dtype() or g.dtype(x)
    compute = accumulation_type(out)
    x = cast(g, x, compute)
    axes = reduction_axes(g, x, dim)
    if g.rank(x) == 0:
        x, axes = reshape(g, x, [1]), None
    mean_kept = reduce_op(g, "ReduceMean", x, axes, True)
    centered = g.op("Sub", x, mean_kept)
    squares_sum = reduce_op(g, "ReduceSum", g.op("Mul", centered, centered), axes, keepdim)
    variance = g.op("Div", squares_sum, _degrees_of_freedom(g, x, mean_kept, axes, correction, compute))
    mean_value = mean_kept if keepdim else reduce_op(g, "ReduceMean", x, axes, False)
    return cast(g, variance, out), cast(g, mean_value, out)


def _degrees_of_freedom(g, x, reduced, axes, correction, compute):
    """max(N - correction, 0), where N counts the reduced elements (a constant when the shape is static).

    torch clamps at 0, so too few elements give 0/0 = NaN; an unclamped -1 would give -0 for an empty input.
    """
    dims = g.static_dims(x)
    if dims is not None:
        count = math.prod(dims[a] for a in (axes if axes is not None else range(len(dims))))
        return g.const(float(max(count - correction, 0)), compute)
    # Size(x) / Size(mean with kept dims) is the reduced count without knowing any dim.
    count = g.op("Div", cast(g, g.op("Size", x), compute), cast(g, g.op("Size", reduced), compute))
    return g.op("Max", g.op("Sub", count, g.const(float(correction), compute)), g.const(0.0, compute))


# -- norms and logsumexp ---------------------------------------------------------------------------------------
@symbolic("aten::linalg_vector_norm")
def linalg_vector_norm(g, self, ord, dim, keepdim, dtype):
    return vector_norm(g, self, constant_value(ord), dim, bool(constant_value(keepdim)), dtype)


@symbolic("aten::norm")
def norm(g, self, p, *args):
    """norm.Scalar(self, p), .ScalarOpt_dtype(self, p, dtype), .ScalarOpt_dim(self, p, dim, keepdim) and
    .ScalarOpt_dim_dtype(self, p, dim, keepdim, dtype)."""
    p = 2 if constant_value(p) is None else constant_value(p)
    if len(args) <= 1:
        return vector_norm(g, self, p, None, False, args[0] if args else None)
    return vector_norm(g, self, p, args[0], bool(constant_value(args[1])), args[2] if len(args) > 2 else None)


@symbolic("aten::frobenius_norm")
def frobenius_norm(g, self, dim=None, keepdim=False):
    return vector_norm(g, self, 2, dim, bool(constant_value(keepdim)), None)


def _largest_magnitude(g, magnitudes, axes, keepdim, out):
    """The largest of non-negative ``magnitudes`` over ``axes``: 0 over no elements, as PyTorch's matrix norms give,
    where ONNX's ReduceMax gives the lowest value (Relu maps it to 0 and keeps every magnitude)."""
    largest = reduce(g, "ReduceMax", magnitudes, axes, keepdim, out=out)
    dims = g.dims(magnitudes)
    if dims is not None and all(dims[axis] for axis in (axes if axes is not None else range(len(dims)))):
        return largest
    return g.op("Relu", largest)


@symbolic("aten::logsumexp")
@parse_args("v", "is", "b")
def logsumexp(g, self, dim, keepdim):
    out = reduction_result_type(g, self)
    compute = accumulation_type(out)
    return reduce(g, "ReduceLogSumExp", self, reduction_axes(g, self, dim), keepdim, compute, out)


# -- all, any, count_nonzero -----------------------------------------------------------------------------------
@symbolic("aten::all")
def all_(g, self, dim=None, keepdim=False):
    """all / all.dim / all.dims: ReduceMin over the truth values (ONNX reductions take no bool)."""
    return _truth_reduction(g, "ReduceMin", self, dim, keepdim)


@symbolic("aten::any")
def any_(g, self, dim=None, keepdim=False):
    """any / any.dim / any.dims: ReduceMax over the truth values."""
    return _truth_reduction(g, "ReduceMax", self, dim, keepdim)


def _truth_reduction(g, op_type, x, dim, keepdim):
    truth = cast(g, cast(g, x, BOOL), INT32)
    out = g.output_dtype() or BOOL
    result = reduce(g, op_type, truth, reduction_axes(g, x, dim), bool(constant_value(keepdim)))
    return cast(g, cast(g, result, BOOL), out)


@symbolic("aten::count_nonzero")
def count_nonzero(g, self, dim=None):
    """count_nonzero(self, int? dim) and .dim_IntList(self, int[] dim); NaN counts as nonzero, as in PyTorch."""
    if is_value(dim):
        raise unsupported(g.op_kind, g.opset, "the dimensions must be constants")
    counts = cast(g, cast(g, self, BOOL), INT64)
    return reduce(g, "ReduceSum", counts, reduction_axes(g, self, dim), False)


# -- linalg norms ------------------------------------------------------------------------------------------------
@symbolic("aten::linalg_norm")
def linalg_norm(g, self, ord, dim, keepdim, dtype):
    """linalg.norm(self, ord, dim, keepdim, dtype): a vector norm over one dimension (or every element when neither
    ord nor dim is given), a matrix norm over two (or a 2-D input's both), with a numeric or string ``ord``."""
    ord, keepdim = constant_value(ord), bool(constant_value(keepdim))
    dims = constant_value(dim)
    dims = [dims] if isinstance(dims, int) else dims
    if ord is None:
        return vector_norm(g, self, 2, dims, keepdim, dtype)
    if isinstance(ord, str) or (dims is not None and len(dims) == 2) or (dims is None and require_rank(g, self) == 2):
        return linalg_matrix_norm(g, self, ord, dims or [-2, -1], keepdim, dtype)
    return vector_norm(g, self, ord, dims, keepdim, dtype)


@symbolic("aten::linalg_matrix_norm")
def linalg_matrix_norm(g, self, ord, dim, keepdim, dtype):
    """linalg.matrix_norm over the two dimensions ``dim`` = (rows, columns): 'fro'; 1 / -1, the largest / smallest
    column sum of absolute values; inf / -inf, the same over rows. 2, -2 and 'nuc' need singular values."""
    ord, keepdim = constant_value(ord), bool(constant_value(keepdim))
    rank = require_rank(g, self)
    rows, columns = (normalize_dim(int(d), rank) for d in constant_value(dim))
    if ord == "fro":
        return vector_norm(g, self, 2, [rows, columns], keepdim, dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        raise unsupported(g.op_kind, g.opset, f"the matrix norm ord={ord!r} needs singular values, which ONNX "
                                                  "has no operator for")
    out = reduction_result_type(g, self, dtype)
    summed, extreme = (rows, columns) if abs(ord) == 1 else (columns, rows)
    sums = reduce(g, "ReduceSum", g.op("Abs", cast(g, self, accumulation_type(out))), [summed], True)
    if ord > 0:
        result = _largest_magnitude(g, sums, [extreme], True, out)
    else:
        result = reduce(g, "ReduceMin", sums, [extreme], True, out=out)
    return result if keepdim else squeeze(g, result, sorted([rows, columns]))


@symbolic("aten::aminmax")
def aminmax(g, self, dim=None, keepdim=False):
    """aminmax(self, *, dim, keepdim) -> (min, max), over every element when dim is None."""
    axes, keepdim = reduction_axes(g, self, dim), bool(constant_value(keepdim))
    out = reduction_result_type(g, self)
    compute = extreme_type(g, out)
    return tuple(reduce(g, op, self, axes, keepdim, compute, out) for op in ("ReduceMin", "ReduceMax"))
