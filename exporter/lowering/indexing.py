"""Index building blocks across the opsets that grew ONNX's indexing ops.

* ``strided_slice``: Slice with steps from opset 10; below, a Gather of the selected positions (static bounds).
* ``gather_elements``: GatherElements from opset 11; below, a Gather of linear positions on the flattened input
  (static shapes) or an ``index == j`` selection (dynamic shapes, opset 9; an index of run-time shape, 10).
* ``wrap_negative``: negative indices counted from the end (Less on integers from opset 9, on doubles before).
* ``scatter_elements``: Scatter at opsets 9-10, ScatterElements from 11, with a reduction from 16.
* ``scatter_add_elements``: ScatterElements reduction 'add' from opset 16; below, the ``index == j`` summation
  (Where from opset 9, a 0/1 product before).
* ``scatter_extreme_elements``: scatter_reduce amax/amin: ScatterElements reduction max/min from opset 18; below, the
  ``index == j`` spread with the type's extreme, ReduceMax/ReduceMin, Max/Min (Where: opset 9; integers: opset 12).
* ``crop_to``: a scatter's src cut to its index's shape (run-time sizes: Slice from 10, a Gather at 9).
* ``add_rows``: rows added at row indices, duplicates summed: ScatterND reduction 'add' from opset 16; below, a
  one-hot MatMul (integers from opset 9, as MatMul takes them).
* ``nonzero_vectors`` / ``nonzero_input``: NonZero (opset 9) on every input type.
* ``repeat_indices``: ``torch.repeat_interleave(counts)`` for counts known only at run time (opset 9; the running
  sum is CumSum from 11, a masked ReduceSum below).
"""

from __future__ import annotations

import numpy as np
import torch
from onnx import TensorProto

from exporter import dtypes, ir
from exporter.dtypes import BOOL, FLOAT, INT32, INT64
from exporter.lowering.comparison import equal, less
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_value,
    reduce_op,
    require_opset,
    require_rank,
    slice_op,
    unsqueeze,
)
from exporter.lowering.factories import filled
from exporter.lowering.runtime import NONZERO_AS_COMPARISON, SCATTER_EXTREMES_OF_BOOLS_AS_UINT8, applies
from exporter.lowering.shape import (
    arange_indices,
    dims_or_sizes,
    known_dims,
    reshape_to,
    size_arith,
    transpose_perm,
    typed,
)


def scalar_of(g, value, like):
    return g.const(np.array(constant_value(value), dtype=dtypes.numpy_from_onnx(g.dtype(like))))


# -- slicing ----------------------------------------------------------------------------------------------------
def strided_slice(g, x, dim: int, start, end, step):
    """``x[start:end:step]`` along ``dim``: Slice, whose steps arrive in opset 10 (a step computed at run time, a 0-d
    value, too); below it a strided slice with bounds and dim size known at export time is a Gather of the selected
    positions."""
    if is_value(step):
        require_opset(g, 10, "a slice step computed at run time needs Slice with input steps")
        return slice_op(g, x, [dim], [start], [end], [step])
    if step == 1 or g.opset >= 10:
        return slice_op(g, x, [dim], [start], [end], None if step == 1 else [step])
    size = known_dims(g, x)[dim]
    start, end = int_or_none(start), int_or_none(end)
    if size is None or start is None or end is None:
        require_opset(g, 10, "a strided slice of a dynamic dim")
    positions = np.arange(size)[slice(start, end, step)].astype(np.int64)
    return g.op("Gather", x, g.const(positions), axis_i=dim)


def int_or_none(x):
    """A slice bound as an int, or None when absent or computed at run time."""
    return None if x is None or is_value(x) else int(constant_value(x))


# -- gather along a dim -----------------------------------------------------------------------------------------
def gather_elements(g, x, dim: int, index):
    """torch.gather of ``x`` along ``dim`` at the int64 ``index``: GatherElements from opset 11; below, a Gather of
    linear positions (static shapes) or an index == j selection (dynamic shapes, opset 9)."""
    if g.opset >= 11:
        return g.op("GatherElements", x, index, axis_i=dim)
    index = _wrapped(g, x, dim, index)
    if g.static_dims(x) is None or g.static_dims(index) is None:
        return _gather_by_hits(g, x, dim, index)
    return g.op("Gather", reshape_to(g, x, [-1]), _flat_positions(g, x, dim, index), axis_i=0)


def _linear_offsets(shape: list[int], index_shape: list[int], dim: int) -> tuple[np.ndarray, int]:
    """For every position of an index tensor: its linear offset in ``shape`` without ``dim``, and dim's stride."""
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1].astype(np.int64)
    grids = np.meshgrid(*[np.arange(s, dtype=np.int64) for s in index_shape], indexing="ij")
    offsets = np.zeros(index_shape, dtype=np.int64)
    for axis, grid in enumerate(grids):
        if axis != dim:
            offsets = offsets + grid * strides[axis]
    return offsets, int(strides[dim])


def _wrapped(g, x, dim: int, index):
    """Negative indices made non-negative (torch and GatherElements read -1 as the last position; the linear
    positions and the index == j selection below opset 11 need 0 .. n-1). Less on float exists from opset 7."""
    size = dim_size(g, x, dim)
    size = g.const(size, torch.int64) if isinstance(size, int) else size
    double = dtypes.onnx_from_torch(torch.float64)
    negative = cast(g, g.op("Less", cast(g, index, double), g.const(0.0, torch.float64)), INT64)
    wrapped = g.op("Add", index, g.op("Mul", negative, size))
    wrapped.shape = index.shape
    return wrapped


def _flat_positions(g, x, dim: int, index):
    """Linear positions into ``x`` flattened that torch.gather addresses (static shapes only)."""
    offsets, stride = _linear_offsets(g.static_dims(x), g.static_dims(index), dim)
    scaled = g.op("Mul", cast(g, index, INT64), g.const(stride, torch.int64))
    return g.op("Add", scaled, g.const(offsets))


def _gather_by_hits(g, x, dim: int, index):
    """gather for dynamic shapes below opset 11: ``sum_j where(index == j, x[..., j, ...], 0)`` (opset 9).

    Exactly one j matches each index, so the sum is the selected value itself (NaN elsewhere is never read).
    """
    rank = require_rank(g, x)
    x_dims, index_dims = known_dims(g, x), known_dims(g, index)
    cropped = any(a != dim and (x_dims[a] is None or x_dims[a] != index_dims[a]) for a in range(rank))
    # each refusal names the lowest opset that exports this gather: 10 where the input is cropped at run time
    if not cropped:
        require_opset(g, 9, "with dynamic shapes gather needs GatherElements (opset 11) or Where with NonZero")
    else:
        require_opset(g, 10, "gather with an index of run-time shape needs Slice with input bounds")
        axes = [a for a in range(rank) if a != dim]
        x = slice_op(g, x, axes, [0] * len(axes), [dim_size(g, index, a) for a in axes])
    original = g.dtype(x)
    work = original if original != BOOL else dtypes.onnx_from_torch(torch.int32)
    targets = unsqueeze(g, arange_indices(g, dim_size(g, x, dim)), list(range(rank)))  # (a Reshape to [1, 0] would copy)
    hits = g.op("Equal", unsqueeze(g, index, [rank]), targets)
    values = unsqueeze(g, transpose_perm(g, cast(g, x, work), [a for a in range(rank) if a != dim] + [dim]), [dim])
    zero = g.const(np.zeros((), dtype=dtypes.numpy_from_onnx(work)))
    picked = reduce_op(g, "ReduceSum", g.op("Where", hits, values, zero), [rank], keepdims=False)
    return cast(g, typed(picked, index_dims), original)


def wrap_negative(g, index, size):
    """``index`` with negative entries counted from the end (needed before combining indices linearly)."""
    if not is_value(index) or (index.const is not None and bool(np.all(np.asarray(index.const) >= 0))):
        return index
    size = g.value(size, torch.int64) if not is_value(size) else size
    if g.opset >= 9:
        negative = g.op("Less", index, g.const(0, torch.int64))
    else:  # Less takes only floating types before opset 9
        negative = g.op("Less", cast(g, index, dtypes.onnx_from_torch(torch.float64)), g.const(0.0, torch.float64))
    return typed(g.op("Add", index, g.op("Mul", cast(g, negative, INT64), size)), g.shape(index))


def gather_at(g, x, index, axis: int):
    """Gather of ``x`` at the int64 ``index`` along ``axis``, negative entries counting from the end as in PyTorch.
    Gather takes negative indices from opset 11 only; before, entries not known to be non-negative are wrapped."""
    if g.opset < 11:
        index = wrap_negative(g, index, dim_size(g, x, axis))
    return g.op("Gather", x, index, axis_i=axis)


# -- scatters ---------------------------------------------------------------------------------------------------
def scatter_elements(g, x, dim: int, index, updates, reduction: str | None = None):
    """``x`` with ``updates`` written at ``index`` along ``dim``: Scatter at opsets 9-10, ScatterElements from 11
    (a ``reduction`` 'add'/'mul' from 16, 'max'/'min' from 18)."""
    if g.opset >= 11:
        return typed(g.op("ScatterElements", x, index, updates, axis_i=dim, reduction_s=reduction), known_dims(g, x))
    return typed(g.op("Scatter", x, index, updates, axis_i=dim), known_dims(g, x))


def scatter_add_elements(g, x, dim: int, index, updates):
    """scatter_add: ScatterElements reduction 'add' from opset 16; below it, for every target j along ``dim``, the
    sum of the ``updates`` entries whose index is j.

    ``hits = (index[..., None] == 0..n-1)``; the contributions ``where(hits, updates[..., None], 0)`` summed over
    ``dim`` leave j as the last axis, which moves back to ``dim``. Duplicate indices add up, as in torch.
    """
    if g.opset >= 16:
        return scatter_elements(g, x, dim, index, updates, "add")
    rank = require_rank(g, x)
    targets = unsqueeze(g, arange_indices(g, dim_size(g, x, dim)), list(range(rank)))  # (a Reshape to [1, 0] would copy)
    hits = g.op("Equal", unsqueeze(g, index, [rank]), targets)
    values = unsqueeze(g, updates, [rank])
    if g.opset >= 9:
        zero = g.const(np.zeros((), dtype=dtypes.numpy_from_onnx(g.dtype(x))))
        spread = g.op("Where", hits, values, zero)
    else:  # Where is opset 9; 0/1 weights give the same sums for finite values
        spread = g.op("Mul", values, cast(g, hits, g.dtype(x)))
    index_dims = known_dims(g, index) or [None] * rank
    summed_shape = [d for a, d in enumerate(index_dims) if a != dim] + [known_dims(g, x)[dim]]
    summed = typed(reduce_op(g, "ReduceSum", spread, [dim], keepdims=False), summed_shape)
    contribution = transpose_perm(g, summed, list(range(dim)) + [rank - 1] + list(range(dim, rank - 1)))
    return g.op("Add", x, _zero_extend(g, contribution, x, skip=dim))


def crop_to(g, src, index):
    """``src`` cut to ``index``'s shape (torch's scatters read only that corner of ``src``; ONNX wants equal shapes).
    Where a size is known only at run time (two such sizes may differ), the cut is a Slice to index's run-time shape
    from opset 10, a Gather of positions 0..m-1 at opset 9 (NonZero), and needs opset 9 below."""
    src_dims, index_dims = known_dims(g, src), known_dims(g, index)
    rank = require_rank(g, index)
    if src_dims is not None and all(s is not None and s == i for s, i in zip(src_dims, index_dims, strict=True)):
        return src
    ends = [d if d is not None else dim_size(g, index, axis) for axis, d in enumerate(index_dims)]
    if g.opset >= 10 or not any(is_value(end) for end in ends):
        return slice_op(g, src, list(range(rank)), [0] * rank, ends)
    require_opset(g, 9, "cutting a scatter's src to an index shape known only at run time needs NonZero positions")
    for axis, end in enumerate(ends):
        if not (src_dims is not None and src_dims[axis] is not None and src_dims[axis] == end):
            src = g.op("Gather", src, arange_indices(g, end), axis_i=axis)
    return src


def require_extreme_scatter(g, elem: int) -> None:
    """The opsets ``scatter_extreme_elements`` needs for element type ``elem``."""
    if not dtypes.is_float(elem):
        require_opset(g, 12, "scatter_reduce 'amax'/'amin' of integers needs Max/Min on integers")
    require_opset(g, 9, "scatter_reduce 'amax'/'amin' needs Where")


def scatter_extreme_elements(g, x, dim: int, index, updates, largest: bool):
    """scatter_reduce 'amax' (``largest``) / 'amin' with include_self: ``x`` where no update lands, else the largest
    (smallest) of ``x`` and the updates whose index is there. ScatterElements reduces by max/min only from opset 18;
    here, as in ``scatter_add_elements``, ``hits = (index[..., None] == 0..n-1)``, the updates spread where they hit and
    the type's extreme (-inf/+inf, or the integer limit) elsewhere, reduced over ``dim`` (ReduceMax/ReduceMin), then
    Max/Min with ``x`` (Where: opset 9; Max/Min take integers from opset 12). Exact: no arithmetic on the values.
    From opset 18 it is ScatterElements with reduction 'max'/'min', which starts from ``x`` as include_self does
    (``scatter_extremes_18``)."""
    if g.opset >= 18:
        return scatter_extremes_18(g, x, dim, index, updates, largest)
    elem = g.dtype(x)
    require_extreme_scatter(g, elem)
    numbers = dtypes.numpy_from_onnx(elem)
    if dtypes.is_float(elem):
        limit = -np.inf if largest else np.inf
    else:
        limit = np.iinfo(numbers).min if largest else np.iinfo(numbers).max
    extreme = np.array(limit, dtype=numbers)
    rank = require_rank(g, x)
    targets = unsqueeze(g, arange_indices(g, dim_size(g, x, dim)), list(range(rank)))  # (a Reshape to [1, 0] would copy)
    hits = g.op("Equal", unsqueeze(g, index, [rank]), targets)
    spread = g.op("Where", hits, unsqueeze(g, updates, [rank]), g.const(extreme))
    index_dims = known_dims(g, index) or [None] * rank
    reduced_shape = [d for a, d in enumerate(index_dims) if a != dim] + [known_dims(g, x)[dim]]
    reduced = typed(reduce_op(g, "ReduceMax" if largest else "ReduceMin", spread, [dim], keepdims=False), reduced_shape)
    contribution = transpose_perm(g, reduced, list(range(dim)) + [rank - 1] + list(range(dim, rank - 1)))
    return g.op("Max" if largest else "Min", x, _zero_extend(g, contribution, x, skip=dim, fill=extreme))


def scatter_extremes_18(g, x, dim: int, index, updates, largest: bool):
    """ScatterElements-18 with reduction 'max'/'min'. ONNX leaves NaN unspecified and both ONNX Runtime and
    onnx.reference keep the current value when an update is NaN, where PyTorch's amax/amin propagate it: for floats,
    a second scatter (reduction 'max' of uint8 NaN flags, a type both take) marks every position that saw a NaN, and
    those become NaN."""
    reduced = scatter_elements(g, x, dim, index, updates, "max" if largest else "min")
    if not dtypes.is_float(g.dtype(x)):
        return reduced
    def nan_flags(v, like):  # (updates has index's shape)
        return cast(g, typed(g.op("IsNaN", v), known_dims(g, like)), TensorProto.UINT8)

    flags = scatter_elements(g, nan_flags(x, x), dim, index, nan_flags(updates, index), "max")
    nan = g.const(np.array(np.nan, dtype=dtypes.numpy_from_onnx(g.dtype(x))))
    return typed(g.op("Where", cast(g, flags, BOOL), nan, reduced), known_dims(g, x))


def _zero_extend(g, x, like, skip: int, fill=0):
    """``x`` extended with zeros (or ``fill``) at the end of every dim (but ``skip``) to ``like``'s size there."""

    rank = require_rank(g, like)
    x_dims, like_dims = known_dims(g, x), known_dims(g, like)
    for axis in range(rank):
        if axis == skip or (x_dims[axis] is not None and x_dims[axis] == like_dims[axis]):
            continue
        sizes = dims_or_sizes(g, x)
        sizes[axis] = size_arith(g, "Sub", dim_size(g, like, axis), dim_size(g, x, axis))
        zeros = filled(g, sizes, fill, g.dtype(x))
        x = typed(g.op("Concat", x, zeros, axis_i=axis), [None] * rank)
    return x


def add_rows(g, base, row_index, updates):
    """``base[row_index[m]] += updates[m]`` for a 2-D ``base`` [N, R], summing duplicate rows (torch's accumulate):
    ScatterND reduction 'add' from opset 16; below it ``base + onehot(row_index)^T @ updates``, for the types
    MatMul takes (floats; int32/int64 from opset 9)."""
    if g.opset >= 16:
        return g.op("ScatterND", base, unsqueeze(g, reshape_to(g, row_index, [-1]), [1]), updates, reduction_s="add")
    elem = g.dtype(base)
    if not (dtypes.is_float(elem) or (g.opset >= 9 and elem in (dtypes.onnx_from_torch(torch.int32), INT64))):
        require_opset(g, 16, "an accumulating scatter of this type needs ScatterND reduction")
    one_hot = _one_hot_rows(g, row_index, dim_size(g, base, 0), elem)
    spread = g.op("MatMul", g.op("Transpose", one_hot, perm_i=[1, 0]), updates)
    return g.op("Add", base, spread)


def _one_hot_rows(g, row_index, rows, dtype: int):
    """[M, N] matrix of ``dtype`` with a 1 at (m, row_index[m]); Equal against 0..N-1 works at every opset."""
    column = unsqueeze(g, reshape_to(g, row_index, [-1]), [1])
    hits = g.op("Equal", column, unsqueeze(g, arange_indices(g, rows), [0]))
    return cast(g, hits, dtype)


# -- nonzero ----------------------------------------------------------------------------------------------------
def nonzero_vectors(g, x):
    """``nonzero(as_tuple=True)`` and one-argument ``where``: one index vector per dim (NonZero: opset 9)."""
    rows = g.op("NonZero", nonzero_input(g, x))
    return [g.op("Gather", rows, g.const(i, torch.int64), axis_i=0) for i in range(max(require_rank(g, x), 1))]


# The input types ONNX Runtime has a NonZero kernel for.
_NONZERO_KERNEL_TYPES = frozenset({BOOL, INT32, INT64, TensorProto.UINT8, TensorProto.FLOAT16, FLOAT})


def nonzero_input(g, x):
    """NonZero's input: ``x`` itself, or ``x != 0`` (same positions) where the runtime has no NonZero for its type."""
    x = g.value(x)
    if g.dtype(x) in _NONZERO_KERNEL_TYPES or not applies(g, NONZERO_AS_COMPARISON):
        return x
    return g.op("Not", equal(g, x, scalar_of(g, 0, x)))


def repeat_indices(g, counts) -> ir.Value:
    """``torch.repeat_interleave(counts)``: 0..n-1, position i repeated ``counts[i]`` times, for a 1-d int64
    ``counts`` whose values (and length) may be known only at run time.

    Output position j belongs to the i with ``cum[i-1] <= j < cum[i]`` (``cum`` the running sum of the counts), so
    its index is the number of i with ``cum[i] <= j``: a ReduceSum of ``not (j < cum[i])`` over i. ``cum`` is
    CumSum from opset 11; below, the ReduceSum of ``counts[k]`` over ``k <= i``. The positions 0..total-1 need a
    run-time range: Range (11) or ConstantOfShape/NonZero (9), so opset 9 at least.
    """
    require_opset(g, 9, "repeats known only at run time need a range of run-time length (ConstantOfShape)")
    counts = cast(g, counts, INT64)
    if g.opset >= 11:
        cum = g.op("CumSum", counts, g.const(0, torch.int64))
    else:
        k = arange_indices(g, dim_size(g, counts, 0))
        upto = g.op("Not", less(g, unsqueeze(g, k, [0]), unsqueeze(g, k, [1])))  # [k, i]: k <= i
        cum = reduce_op(g, "ReduceSum", g.op("Mul", cast(g, upto, INT64), unsqueeze(g, counts, [1])), [0], False)
    total = reduce_op(g, "ReduceSum", counts, None, False)
    positions = arange_indices(g, total)
    reached = g.op("Not", less(g, unsqueeze(g, positions, [1]), unsqueeze(g, cum, [0])))  # [j, i]: cum[i] <= j
    out = reduce_op(g, "ReduceSum", cast(g, reached, INT64), [1], False)
    out.dtype, out.shape = INT64, (None,)
    return out


def bool_extremes_as_uint8(g) -> bool:
    """Whether a scatter's max/min of bools is computed on uint8: Max/Min take no bools before ScatterElements
    max/min (opset 18), and from there ONNX Runtime refuses bool ones (a declared runtime workaround)."""
    return g.opset < 18 or applies(g, SCATTER_EXTREMES_OF_BOOLS_AS_UINT8)
