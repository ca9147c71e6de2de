"""Sorting, selection and scans: topk, sort/argsort/msort, kthvalue, cumsum, cumprod, diff, unique.

TopK takes ``k`` as an attribute before opset 10 and as an input from 10; ``largest``/``sorted`` arrive in 11,
so smallest-first selection below 11 runs TopK on the negated input. TopK below 11 takes only float types:
narrow integers are widened to float64 (exact), int64 needs opset 11 (``lowering.sorting.top_k``). CumSum
arrives in opset 11; below it a scan along an axis of static length is a MatMul by a triangular constant.
cumprod has no ONNX op at any opset: it is a log-depth (Hillis-Steele) scan of shifted products. diff, the
inverse of cumsum, is two Slices and a Sub (Xor for bool) at every opset.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import BOOL, INT64
from exporter.lowering.arithmetic import arith
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    normalize_dim,
    promote_all,
    require_rank,
    reshape,
    shape_of,
    slice_op,
    squeeze,
    torch_dtype_arg,
)
from exporter.lowering.reductions import accumulation_type
from exporter.lowering.runtime import UNIQUE_AS_INT64, applies
from exporter.lowering.scans import matmul_type, pad_front, pad_type
from exporter.lowering.sorting import top_k
from exporter.registry import parse_args, symbolic, unsupported


@symbolic("aten::topk")
@parse_args("v", "v", "i", "b", "b")
def topk(g, self, k, dim, largest, sorted):
    """topk; ``sorted=False`` leaves the order unspecified in PyTorch, so the sorted order is a valid answer."""
    if g.rank(self) == 0:
        return self, g.const(0)
    return top_k(g, self, k, normalize_dim(dim, require_rank(g, self)), largest)


def _sort(g, x, dim, descending):
    """Full sort along ``dim`` as a TopK of the axis length (ties keep index order, i.e. a stable sort)."""
    rank = require_rank(g, x)
    if rank == 0:
        return x, g.const(0)
    axis = normalize_dim(dim, rank)
    return top_k(g, x, dim_size(g, x, axis), axis, largest=descending)


def _sort_args(g, args):
    """(dim, descending) from sort/argsort(self, dim, descending) or their .stable(self, stable, dim, descending)."""
    if g.has_argument("stable"):
        _, dim, descending = args
    else:
        dim, descending = args
    return int(constant_value(dim)), bool(constant_value(descending))


@symbolic("aten::sort")
def sort(g, self, *args):
    return _sort(g, self, *_sort_args(g, args))


@symbolic("aten::argsort")
def argsort(g, self, *args):
    _, indices = _sort(g, self, *_sort_args(g, args))
    return indices


@symbolic("aten::msort")
def msort(g, self):
    values, _ = _sort(g, self, 0, False)
    return values


@symbolic("aten::kthvalue")
@parse_args("v", "i", "i", "b")
def kthvalue(g, self, k, dim, keepdim):
    """The k-th smallest entry along ``dim`` (and its index): the last of the k smallest."""
    rank = require_rank(g, self)
    if rank == 0:
        return self, g.const(0)
    axis = normalize_dim(dim, rank)
    values, indices = top_k(g, self, k, axis, largest=False)
    pick = [k - 1]
    values = slice_op(g, values, [axis], pick, [k])
    indices = slice_op(g, indices, [axis], pick, [k])
    if not keepdim:
        values, indices = squeeze(g, values, [axis]), squeeze(g, indices, [axis])
    return values, indices


# -- scans -------------------------------------------------------------------------------------------------------
def _scan_types(g, x, dtype):
    """(output type, compute type) for cumsum/cumprod; integers accumulate as int64 like PyTorch."""
    out = g.output_dtype()
    if out is None:
        requested = torch_dtype_arg(dtype)
        out = dtypes.onnx_from_torch(requested) if requested is not None else g.dtype(x)
    return out, accumulation_type(out)


def _axis_length(g, x, axis) -> int | None:
    dims = g.dims(x)
    return dims[axis] if dims is not None else None


def _scan(g, self, dim, dtype, scan_along):
    """``scan_along(x, axis)`` of the input in the scan's compute type, cast to its output type (a 0-d input is its
    own scan)."""
    out, compute = _scan_types(g, self, dtype)
    x = cast(g, self, compute)
    rank = require_rank(g, x)
    if rank == 0:
        return cast(g, x, out)
    return cast(g, scan_along(x, normalize_dim(int(constant_value(dim)), rank)), out)


@symbolic("aten::cumsum", "aten::cumsum_")
def cumsum_by_matmul(g, self, dim, dtype=None):
    """cumsum before CumSum (opset 11): x @ U, U upper-triangular ones, with the axis (of static length) last."""
    return _scan(g, self, dim, dtype, lambda x, axis: _cumsum_by_matmul(g, x, axis))


@symbolic("aten::cumsum", "aten::cumsum_", since=11)
def cumsum(g, self, dim, dtype=None):
    return _scan(g, self, dim, dtype, lambda x, axis: g.op("CumSum", x, g.const(axis)))


def _cumsum_by_matmul(g, x, axis):
    length = _axis_length(g, x, axis)
    if length is None:  # (this form is cumsum's below opset 11)
        raise unsupported(g.op_kind, g.opset, "cumsum along an axis of dynamic length needs CumSum: needs opset >= 11")
    rank = require_rank(g, x)
    matmul_dtype = matmul_type(g, x.dtype)
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = x if axis == rank - 1 else g.op("Transpose", x, perm_i=perm)
    upper = g.const(np.triu(np.ones((length, length))), matmul_dtype)
    summed = cast(g, g.op("MatMul", cast(g, moved, matmul_dtype), upper), x.dtype)
    return summed if axis == rank - 1 else g.op("Transpose", summed, perm_i=perm)


@symbolic("aten::diff")
@parse_args("v", "i", "i", "v", "v")
def diff(g, self, n, dim, prepend=None, append=None):
    """torch.diff: ``prepend`` and ``append`` joined to the input along ``dim``, then ``n`` times each element's
    successor minus the element (exclusive or for bool, as PyTorch computes it); ``n=0`` is the input alone."""
    if n == 0:
        return self
    axis = normalize_dim(dim, require_rank(g, self))
    parts = [p for p in (prepend, self, append) if p is not None]
    dtype, parts = promote_all(g, *parts)
    x = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis_i=axis)
    for _ in range(n):
        later = slice_op(g, x, [axis], [1], [np.iinfo(np.int64).max])
        earlier = slice_op(g, x, [axis], [0], [-1])
        x = g.op("Xor", later, earlier) if dtype == BOOL else arith(g, "Sub", later, earlier, dtype)
    return x


@symbolic("aten::cumprod", "aten::cumprod_")
def cumprod(g, self, dim, dtype=None):
    """Hillis-Steele scan: after step s every entry holds the product of the 2**s entries ending at it."""
    return _scan(g, self, dim, dtype, lambda x, axis: _running_product(g, x, axis))


# The compute types CumProd-26 takes that ONNX Runtime 1.31 has kernels for (halves compute in float32, narrow
# integers in int64: ``_scan_types``).
_CUMPROD_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64)


@symbolic("aten::cumprod", "aten::cumprod_", since=26)
def cumprod_op(g, self, dim, dtype=None):
    """CumProd-26, along an axis of any length (dynamic too), in the scan's compute type."""
    return _scan(g, self, dim, dtype, lambda x, axis: g.op("CumProd", x, g.const(axis))
                 if g.dtype(x) in _CUMPROD_TYPES else _running_product(g, x, axis))


def _running_product(g, x, axis):
    """The products, in the type Pad takes (the final cast goes straight to the output type)."""
    rank = require_rank(g, x)
    length = _axis_length(g, x, axis)
    if length is None:
        raise unsupported(g.op_kind, g.opset, "cumprod along an axis of dynamic length needs CumProd: needs "
                                                  "opset >= 26 (below it the scan unrolls over the axis)")
    y = cast(g, x, pad_type(g, x.dtype))
    shift = 1
    while shift < length:
        head = slice_op(g, y, [axis], [0], [length - shift])
        y = g.op("Mul", y, pad_front(g, head, axis, rank, shift, 1))
        shift *= 2
    return y


# -- unique ------------------------------------------------------------------------------------------------------
# The input types ONNX Runtime has a Unique kernel for.
_UNIQUE_KERNEL_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT64,
                        TensorProto.INT8)


@symbolic("aten::_unique2", since=11)
@parse_args("v", "b", "b", "b")
def unique2(g, self, sorted, return_inverse, return_counts):
    """Unique over the flattened input; ``sorted=False`` leaves the order to the implementation in PyTorch,
    so the sorted order is emitted either way. The inverse indices take the input's shape."""
    values, inverse, counts = _unique(g, self, None)
    return values, reshape(g, inverse, shape_of(g, self)), counts


@symbolic("aten::unique_dim", since=11)
@parse_args("v", "i", "b", "b", "b")
def unique_dim(g, self, dim, sorted, return_inverse, return_counts):
    return _unique(g, self, normalize_dim(dim, require_rank(g, self)))


def _unique(g, x, axis):
    compute = g.dtype(x)
    if compute not in _UNIQUE_KERNEL_TYPES and applies(g, UNIQUE_AS_INT64):
        compute = INT64
    attrs = {"sorted_i": 1} if axis is None else {"sorted_i": 1, "axis_i": axis}
    values, _, inverse, counts = g.op("Unique", cast(g, x, compute), outputs=4, **attrs)
    values.dtype = compute
    return cast(g, values, g.dtype(x)), inverse, counts
