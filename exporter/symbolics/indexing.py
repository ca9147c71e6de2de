"""Indexing: slicing, select, gathers, scatters (index_add/copy/fill/reduce too), masked selection, nonzero, one_hot,
bucketize, take. ``x[indices]`` read and written with tensor indices (index, index_put) is ``advanced_indexing``'s.

ONNX grew its indexing ops late (GatherElements, ScatterElements and ScatterND at 11, NonZero and Compress at 9,
scatter reductions at 16). Below those opsets the static-shape cases are rebuilt from older ops: a gather along a
dim becomes a Gather on the flattened tensor with precomputed linear indices, and an accumulating scatter becomes
a one-hot matrix product (``base + onehot(index)^T @ updates``), which sums duplicate indices as torch does.
"""

from __future__ import annotations

import numpy as np
import torch

from exporter import dtypes, ir
from exporter.dtypes import BOOL, INT64
from exporter.lowering.comparison import less, less_equal
from exporter.lowering.comparison import select as where_select
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    normalize_dim,
    reduce_op,
    require_opset,
    require_rank,
    reshape,
    shape_of,
    slice_op,
    squeeze,
    to_int64_list_value,
    unsqueeze,
)
from exporter.lowering.indexing import (
    add_rows,
    bool_extremes_as_uint8,
    crop_to,
    gather_at,
    gather_elements,
    int_or_none,
    nonzero_input,
    nonzero_vectors,
    require_extreme_scatter,
    scalar_of,
    scatter_add_elements,
    scatter_elements,
    scatter_extreme_elements,
    strided_slice,
)
from exporter.lowering.sequence import is_list_tensor
from exporter.lowering.shape import (
    INT64_MAX,
    broadcast_pair,
    dims_or_sizes,
    expand_to,
    expand_to_shape_value,
    inverse_permutation,
    known_dims,
    reshape_like,
    reshape_to,
    transpose_perm,
    typed,
)
from exporter.registry import symbolic, unsupported


def _flat(g, x):
    """``x`` as a 1-D tensor: how a 0-d operand enters ONNX's gathers, scatters and OneHot, which need rank >= 1
    (PyTorch reads a 0-d tensor as one element along dim 0 or -1)."""
    return reshape_to(g, g.value(x), [-1])


def _as_0d(g, x):
    """The one-element result of an op done on ``_flat`` operands, back to 0-d."""
    return reshape_to(g, x, [])


# -- slicing and selecting --------------------------------------------------------------------------------------
@symbolic("aten::slice")
def slice_(g, self, dim=0, start=None, end=None, step=1):
    """x[start:end:step] along dim: Slice (a strided slice below opset 10 gathers static positions).

    A TorchScript list (``aten::slice.t``, arguments start, end, step) is sliced at export time.
    """
    if isinstance(self, (list, tuple)):
        return list(self)[slice(int_or_none(dim), int_or_none(start), int_or_none(end))]
    if is_list_tensor(g, self):  # an int list held as a 1-d tensor: the arguments are (start, end, step)
        start, end, step = dim, start, end
        return strided_slice(g, self, 0, 0 if start is None else start, INT64_MAX if end is None else end,
                             1 if step is None else int(constant_value(step)))
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    step = 1 if step is None else int(constant_value(step)) if is_constant(step) else step
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    n = known_dims(g, self)[dim]
    start_c, end_c = int_or_none(start), int_or_none(end)
    if not is_value(step) and step == 1 and start_c == 0 and end_c is not None and (end_c >= INT64_MAX or (n is not None and end_c >= n)):
        return self
    return strided_slice(g, self, dim, start, end, step)


@symbolic("aten::select")
def select(g, self, dim, index):
    """x.select(dim, index): Gather with a scalar index (drops the dim)."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    if is_value(index):
        return gather_at(g, self, cast(g, index, INT64), dim)
    index = int(constant_value(index))
    n = known_dims(g, self)[dim]
    if index < 0 and n is not None:
        index += n
    return gather_at(g, self, g.const(index, torch.int64), dim)


@symbolic("aten::index_select")
def index_select(g, self, dim, index):
    """index_select(dim, index): Gather."""
    rank = require_rank(g, self)
    if rank == 0:  # index T[1] or T[]: the 0-d input itself
        return _as_0d(g, index_select(g, _flat(g, self), 0, index))
    dim = normalize_dim(int(constant_value(dim)), rank)
    index = g.value(index, torch.int64)
    if g.rank(index) == 0:
        index = reshape_to(g, index, [1])
    return g.op("Gather", self, cast(g, index, INT64), axis_i=dim)


# -- gather along a dim -----------------------------------------------------------------------------------------
@symbolic("aten::gather")
def gather(g, self, dim, index, sparse_grad=None):
    """torch.gather: GatherElements from opset 11; below, a Gather of linear positions (static shapes) or an
    index==j selection (dynamic shapes, opset 9)."""
    index = cast(g, g.value(index), INT64)
    index_dims = g.static_dims(index)
    if index_dims is not None and 0 in index_dims:
        # An empty index (of any rank, as PyTorch allows) gathers nothing: the empty result of its shape.
        return g.const(np.zeros(index_dims, dtype=dtypes.numpy_from_onnx(g.dtype(self))))
    rank = require_rank(g, self)
    if rank == 0 or (rank == 1 and require_rank(g, index) == 0):
        # A 0-d input or index (ranks 0 and 1 mix in PyTorch): both flattened, the result shaped like the index.
        out = gather_elements(g, _flat(g, self), 0, _flat(g, index))
        return _as_0d(g, out) if g.rank(index) == 0 else out
    dim = normalize_dim(int(constant_value(dim)), rank)
    return gather_elements(g, self, dim, index)


@symbolic("aten::take_along_dim")
def take_along_dim(g, self, indices, dim=None):
    """take_along_dim(indices, dim): broadcast input and indices except along dim, then gather."""
    if dim is None:
        return gather(g, reshape_to(g, self, [-1]), 0, reshape_to(g, indices, [-1]))
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    self_dims, index_dims = known_dims(g, self), known_dims(g, indices)
    # Broadcast every dim but ``dim``; -1 keeps a dim as it is.
    self_target, index_target = [], []
    for axis in range(rank):
        a, b = self_dims[axis], index_dims[axis]
        if axis == dim:
            self_target.append(-1)
            index_target.append(-1)
        elif a == 1 and b != 1:
            self_target.append(b if b is not None else dim_size(g, indices, axis))
            index_target.append(-1)
        elif b == 1 and a != 1:
            index_target.append(a if a is not None else dim_size(g, self, axis))
            self_target.append(-1)
        else:
            self_target.append(-1)
            index_target.append(-1)
    if any(t != -1 for t in self_target):
        self = expand_to(g, self, self_target)
    if any(t != -1 for t in index_target):
        indices = expand_to(g, indices, index_target)
    return gather(g, self, dim, indices)


# -- scatters ---------------------------------------------------------------------------------------------------
@symbolic("aten::scatter", "aten::scatter_")
def scatter(g, self, dim, index, src, reduce=None):
    """scatter(dim, index, src | value, reduce=None): Scatter (9-10) / ScatterElements (11+), reductions at 16."""
    if require_rank(g, self) == 0:
        # ONNX's scatters need rank >= 1: a 0-d scatter is the 1-element one.
        src = _flat(g, src) if is_value(src) else src
        return _as_0d(g, scatter(g, _flat(g, self), 0, _flat(g, index), src, reduce))
    dim = normalize_dim(int(constant_value(dim)), require_rank(g, self))
    index = cast(g, g.value(index), INT64)
    if isinstance(src, (ir.Value, torch.Tensor)) and g.rank(src) != 0:  # a tensor (also a constant one), not a value
        updates = cast(g, crop_to(g, src, index), g.dtype(self))
    else:
        updates = expand_to_shape_value(g, g.value(src, None) if is_value(src) else scalar_of(g, src, self),
                                        shape_of(g, index))
        updates = cast(g, updates, g.dtype(self))
    if reduce is None:
        require_opset(g, 9, "scatter needs Scatter")
        return scatter_elements(g, self, dim, index, updates)
    reduction = {"add": "add", "multiply": "mul"}[str(constant_value(reduce))]
    if reduction == "add":
        return scatter_add_elements(g, self, dim, index, updates)
    require_opset(g, 16, "scatter with reduce='multiply' needs ScatterElements reduction")
    return scatter_elements(g, self, dim, index, updates, reduction)


@symbolic("aten::scatter_add", "aten::scatter_add_")
def scatter_add(g, self, dim, index, src):
    """scatter_add: ScatterElements reduction 'add' from opset 16; the index==j summation below."""
    if require_rank(g, self) == 0:  # as the 1-element scatter (ONNX's scatters need rank >= 1)
        return _as_0d(g, scatter_add(g, _flat(g, self), 0, _flat(g, index), _flat(g, src)))
    dim = normalize_dim(int(constant_value(dim)), require_rank(g, self))
    index = cast(g, g.value(index), INT64)
    return scatter_add_elements(g, self, dim, index, cast(g, crop_to(g, src, index), g.dtype(self)))


@symbolic("aten::scatter_reduce", "aten::scatter_reduce_")
def scatter_reduce(g, self, dim, index, src, reduce, include_self=True):
    """scatter_reduce 'sum' / 'prod' / 'amax' / 'amin' (include_self either way); 'mean' needs ONNX 18."""
    reduce = str(constant_value(reduce))
    include_self = True if include_self is None else bool(constant_value(include_self))
    if reduce in ("amax", "amin") and g.dtype(self) == BOOL and bool_extremes_as_uint8(g):
        # Max/Min take no bools (ScatterElements max/min do from 18, where ONNX Runtime refuses them): 'amax' is any
        # and 'amin' all, computed on uint8 and cast back.
        uint8 = dtypes.onnx_from_torch(torch.uint8)
        result = scatter_reduce(g, cast(g, self, uint8), dim, index, cast(g, src, uint8), reduce, include_self)
        return cast(g, result, BOOL)
    if require_rank(g, self) == 0:
        # ONNX's scatters need rank >= 1: a 0-d scatter is the 1-element one.
        self, index, src = (_flat(g, v) for v in (self, index, src))
        return _as_0d(g, scatter_reduce(g, self, 0, index, src, reduce, include_self))
    dim = normalize_dim(int(constant_value(dim)), require_rank(g, self))
    index = cast(g, g.value(index), INT64)
    updates = cast(g, crop_to(g, src, index), g.dtype(self))
    if reduce in ("amax", "amin"):
        require_extreme_scatter(g, g.dtype(self))
        if not include_self:  # the hit positions start from the other extreme, so only the updates count there
            self = _fill_hits(g, self, dim, index, reduce)
        return scatter_extreme_elements(g, self, dim, index, updates, largest=reduce == "amax")
    if reduce not in ("sum", "prod"):
        raise unsupported(g.op_kind, g.opset,
                          f"scatter_reduce '{reduce}' has no ONNX form up to opset 16 (ScatterElements reduces by "
                          "max/min from 18; a mean divides by counts that no scatter before 18 gives)")
    if reduce == "prod":
        require_opset(g, 16, "scatter_reduce 'prod' needs ScatterElements reduction")
    if not include_self:
        require_opset(g, 9, "scatter_reduce with include_self=False needs Scatter")
        neutral = scalar_of(g, 0 if reduce == "sum" else 1, self)
        self = scatter_elements(g, self, dim, index, expand_to_shape_value(g, neutral, shape_of(g, index)))
    if reduce == "prod":
        return scatter_elements(g, self, dim, index, updates, "mul")
    return scatter_add_elements(g, self, dim, index, updates)


def _fill_hits(g, self, dim: int, index, reduce: str):
    """``self`` with every position an index hits set to the extreme that loses to any update (-inf for amax)."""
    require_opset(g, 9, "scatter_reduce with include_self=False needs Scatter")
    numbers = dtypes.numpy_from_onnx(g.dtype(self))
    if dtypes.is_float(g.dtype(self)):
        extreme = -np.inf if reduce == "amax" else np.inf
    else:
        extreme = np.iinfo(numbers).min if reduce == "amax" else np.iinfo(numbers).max
    fill = g.const(np.array(extreme, dtype=numbers))
    return scatter_elements(g, self, dim, index, expand_to_shape_value(g, fill, shape_of(g, index)))


# -- index_add / index_copy / index_fill --------------------------------------------------------------------------
def _index_along(g, index, dim: int, rank: int, shape):
    """A 1-D ``index`` laid along ``dim`` and broadcast to ``shape`` (the updates' shape)."""
    laid = reshape_to(g, index, [-1 if axis == dim else 1 for axis in range(rank)])
    return expand_to_shape_value(g, laid, shape)


def _index_add_front(g, self, dim, index, source, alpha):
    """index_add's operands with ``dim`` moved to the front: (front, flat int64 index, scaled source, perm)."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    index = cast(g, reshape_to(g, g.value(index), [-1]), INT64)
    source = cast(g, g.value(source), g.dtype(self))
    if rank == 0:
        self, source, rank = _flat(g, self), _flat(g, source), 1
    if alpha is not None and constant_value(alpha) != 1:
        source = g.op("Mul", source, scalar_of(g, alpha, self))
    perm = [dim] + [i for i in range(rank) if i != dim]
    front, front_source = transpose_perm(g, self, perm), transpose_perm(g, source, perm)
    return front, index, front_source, perm


@symbolic("aten::index_add", "aten::index_add_")
def index_add_by_one_hot(g, self, dim, index, source, alpha=None):
    """index_add(dim, index, source, alpha) below opset 16: a one-hot row sum over the rows of the front layout."""
    front, index, front_source, perm = _index_add_front(g, self, dim, index, source, alpha)
    summed = add_rows(g, reshape_to(g, front, [0, -1]), index, reshape_to(g, front_source, [0, -1]))
    out = transpose_perm(g, reshape_like(g, summed, front), inverse_permutation(perm))
    return _as_0d(g, out) if require_rank(g, self) == 0 else out


@symbolic("aten::index_add", "aten::index_add_", since=16)
def index_add(g, self, dim, index, source, alpha=None):
    """index_add(dim, index, source, alpha): ScatterND reduction 'add' at the index rows of the front layout."""
    front, index, front_source, perm = _index_add_front(g, self, dim, index, source, alpha)
    out = g.op("ScatterND", front, unsqueeze(g, index, [1]), front_source, reduction_s="add")
    out = transpose_perm(g, out, inverse_permutation(perm))
    return _as_0d(g, out) if require_rank(g, self) == 0 else out


@symbolic("aten::index_copy", "aten::index_copy_", since=9)
def index_copy(g, self, dim, index, source):
    """index_copy(dim, index, source): Scatter/ScatterElements with the index laid along dim."""
    rank = require_rank(g, self)
    if rank == 0:  # as the 1-element copy (ONNX's scatters need rank >= 1)
        return _as_0d(g, index_copy(g, _flat(g, self), 0, index, _flat(g, source)))
    dim = normalize_dim(int(constant_value(dim)), rank)
    source = cast(g, g.value(source), g.dtype(self))
    index = cast(g, reshape_to(g, g.value(index), [-1]), INT64)
    return scatter_elements(g, self, dim, _index_along(g, index, dim, rank, shape_of(g, source)), source)


# TensorScatter (24) writes an update into a fixed buffer along one axis at a per-batch-row start: a KV-cache write
# (transformers' static cache copies a step's key into its buffer with index_copy_(2, position, key)). It states an
# index_copy exactly when the index is one position (the same start for every row, a run of one) on an axis past the
# batch; a longer index could be any positions, not a run, so it keeps the scatter.
TENSOR_SCATTER_OPSET = 24


def _one_position(g, index, source, axis: int) -> bool:
    """Whether an index_copy writes one position: its index holds one, or its source is one long on the axis
    (index_copy takes as many indices as the source has positions there)."""
    if g.dims(index) in ([1], []):
        return True
    source_dims = g.dims(source)
    return source_dims is not None and len(source_dims) > axis and source_dims[axis] == 1


@symbolic("aten::index_copy", "aten::index_copy_", since=TENSOR_SCATTER_OPSET)
def index_copy_tensor_scatter(g, self, dim, index, source):
    """index_copy of one position along an axis past the batch: TensorScatter, the index as every row's start."""
    rank = require_rank(g, self)
    axis = normalize_dim(int(constant_value(dim)), rank) if rank else 0
    if rank < 2 or axis == 0 or not _one_position(g, index, source, axis) or g.dtype(source) != g.dtype(self):
        return index_copy(g, self, dim, index, source)
    start = cast(g, reshape_to(g, g.value(index), [1]), INT64)
    starts = g.op("Expand", start, slice_op(g, shape_of(g, self), [0], [0], [1]))
    out = g.op("TensorScatter", self, source, starts, axis_i=axis)
    out.dtype, out.shape = g.dtype(self), g.dims(self)
    return out


@symbolic("aten::index_reduce", "aten::index_reduce_")
def index_reduce(g, self, dim, index, source, reduce, include_self=True):
    """index_reduce(dim, index, source, reduce, include_self): scatter_reduce with the index laid along dim and
    broadcast to source's shape, so 'amax'/'amin' are ScatterElements max/min from opset 18 (the index == j
    reduction below, from 9, integers 12) and 'prod' ScatterElements 'mul' (16). 'mean' is refused: ONNX has no
    scatter that counts, and torch's integer mean rounds down."""
    reduce_name = str(constant_value(reduce))
    if reduce_name not in ("prod", "amax", "amin"):
        raise unsupported(g.op_kind, g.opset, f"index_reduce '{reduce_name}' has no exact ONNX form (ScatterElements "
                                                  "reduces by add, mul, max and min only)")
    rank = require_rank(g, self)
    if rank == 0:  # as the 1-element reduce (ONNX's scatters need rank >= 1)
        return _as_0d(g, index_reduce(g, _flat(g, self), 0, index, _flat(g, source), reduce, include_self))
    dim = normalize_dim(int(constant_value(dim)), rank)
    source = cast(g, g.value(source), g.dtype(self))
    index = cast(g, reshape_to(g, g.value(index), [-1]), INT64)
    laid = typed(_index_along(g, index, dim, rank, shape_of(g, source)), known_dims(g, source))
    return scatter_reduce(g, self, dim, laid, source, reduce_name, include_self)


@symbolic("aten::index_fill", "aten::index_fill_", since=9)
def index_fill(g, self, dim, index, value):
    """index_fill(dim, index, value): scatter of the broadcast value at the indexed slices."""
    rank = require_rank(g, self)
    if rank == 0:  # as the 1-element fill (ONNX's scatters need rank >= 1)
        return _as_0d(g, index_fill(g, _flat(g, self), 0, index, value))
    dim = normalize_dim(int(constant_value(dim)), rank)
    index = cast(g, reshape_to(g, g.value(index), [-1]), INT64)
    shape = dims_or_sizes(g, self)
    shape[dim] = dim_size(g, index, 0)
    fill = cast(g, g.value(value), g.dtype(self)) if is_value(value) else scalar_of(g, value, self)
    updates = expand_to(g, reshape_to(g, fill, []), shape)
    indices = _index_along(g, index, dim, rank, to_int64_list_value(g, shape))
    return scatter_elements(g, self, dim, indices, updates)


# -- masks ------------------------------------------------------------------------------------------------------
@symbolic("aten::masked_select", since=9)
def masked_select(g, self, mask):
    """masked_select(mask): input and mask broadcast together and flattened, then Compress."""
    self, mask = broadcast_pair(g, g.value(self), cast(g, g.value(mask), BOOL))
    return g.op("Compress", _flat(g, self), _flat(g, mask), axis_i=0)


@symbolic("aten::masked_scatter", "aten::masked_scatter_", since=11)
def masked_scatter(g, self, mask, source):
    """masked_scatter(mask, source): ScatterND of the first nnz source values at NonZero(mask)."""
    self, mask = broadcast_pair(g, g.value(self), cast(g, g.value(mask), BOOL))
    positions = g.op("Transpose", g.op("NonZero", mask), perm_i=[1, 0])
    count = slice_op(g, g.op("Shape", positions), [0], [0], [1])
    updates = g.op("Slice", reshape_to(g, cast(g, source, g.dtype(self)), [-1]), g.const([0], torch.int64), count)
    return g.op("ScatterND", self, positions, updates)


@symbolic("aten::nonzero", "aten::argwhere", since=9)
def nonzero(g, self):
    """nonzero/argwhere: NonZero transposed to [nnz, rank]."""
    return g.op("Transpose", g.op("NonZero", nonzero_input(g, self)), perm_i=[1, 0])


@symbolic("aten::nonzero_numpy", since=9)
def nonzero_numpy(g, self):
    return nonzero_vectors(g, self)


# -- one_hot ----------------------------------------------------------------------------------------------------
@symbolic("aten::one_hot")
def one_hot_by_equal(g, self, num_classes):
    """F.one_hot before OneHot (opset 9): each index compared with 0..num_classes-1 (num_classes given)."""
    if not is_constant(num_classes):
        require_opset(g, 9, "one_hot with num_classes computed at run time needs OneHot")
    num_classes = int(constant_value(num_classes))
    self = cast(g, self, INT64)
    if num_classes < 0:
        require_opset(g, 9, "one_hot with num_classes=-1 needs OneHot")
    hits = g.op("Equal", unsqueeze(g, self, [require_rank(g, self)]), g.const(np.arange(num_classes, dtype=np.int64)))
    return cast(g, hits, INT64)


@symbolic("aten::one_hot", since=9)
def one_hot(g, self, num_classes):
    """F.one_hot: OneHot of depth num_classes, or the largest index + 1 for num_classes=-1 (a 0-d index as a
    1-element one: OneHot's indices need rank >= 1). A num_classes computed at run time is OneHot's depth input
    as it is, or the largest index + 1 where it is negative."""
    self = cast(g, self, INT64)
    if require_rank(g, self) == 0:
        return squeeze(g, one_hot(g, _flat(g, self), num_classes), [0])

    def top():
        """The largest index + 1 (1 element): the depth for num_classes=-1."""
        return g.op("Add", reduce_op(g, "ReduceMax", reshape_to(g, self, [-1]), [0], keepdims=True),
                    g.const([1], torch.int64))

    if not is_constant(num_classes):
        given = reshape(g, cast(g, num_classes, INT64), [1])
        negative = cast(g, g.op("Less", given, g.const([0], torch.int64)), INT64)
        # depth = given, or top where given < 0: given + negative * (top - given)
        depth = reshape(g, g.op("Add", given, g.op("Mul", negative, g.op("Sub", top(), given))), [])
    elif int(constant_value(num_classes)) < 0:
        depth = top()
    else:
        depth = g.const([int(constant_value(num_classes))], torch.int64)
    return g.op("OneHot", self, depth, g.const([0, 1], torch.int64), axis_i=-1)


# -- bucketize, take ------------------------------------------------------------------------------------------------
@symbolic("aten::bucketize")
def bucketize(g, self, boundaries, out_int32=False, right=False):
    """bucketize(x, boundaries, out_int32, right): how many boundaries are not at or above x (not above it with
    right), from comparing every element with every boundary; put that way round, NaN lands past the last
    boundary, as in PyTorch."""
    right, out_int32 = bool(constant_value(right)), bool(constant_value(out_int32))
    if is_value(self) and require_rank(g, boundaries) != 1:
        raise unsupported(g.op_kind, g.opset, "boundaries must be 1-D")
    x = unsqueeze(g, self, [require_rank(g, self)])
    boundaries = cast(g, boundaries, g.dtype(self))
    at_or_above = less(g, x, boundaries) if right else less_equal(g, x, boundaries)
    below = g.op("Not", at_or_above)
    counts = reduce_op(g, "ReduceSum", cast(g, below, INT64), [require_rank(g, self)], keepdims=False)
    return cast(g, counts, dtypes.onnx_from_torch(torch.int32) if out_int32 else INT64)


@symbolic("aten::take")
def take_shifting_negatives(g, self, index):
    """take(self, index) before opset 11, where Gather rejects negative indices: those are shifted by the element
    count first."""
    flat = reshape(g, self, [-1])
    index = cast(g, index, INT64)
    shifted = g.op("Add", index, cast(g, dim_size(g, flat, 0), INT64))
    return g.op("Gather", flat, where_select(g, less(g, index, g.const(0, INT64)), shifted, index), axis_i=0)


@symbolic("aten::take", since=11)
def take(g, self, index):
    """take(self, index): the flattened input gathered at ``index`` (negative indices count from the end)."""
    return g.op("Gather", reshape(g, self, [-1]), cast(g, index, INT64), axis_i=0)
