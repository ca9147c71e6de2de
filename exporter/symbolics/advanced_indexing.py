"""Advanced indexing: ``x[indices]`` read and written with tensor indices, bool masks and slices between them
(``aten::index``, ``aten::index_put``). Indexed dims move to the front, their indices become one linear index over
the merged dims, and writes scatter into that layout (ScatterND from opset 11; below, a one-hot row sum that adds
duplicate indices as PyTorch's accumulate does)."""

from __future__ import annotations

import numpy as np
import torch

from exporter import dtypes
from exporter.dtypes import BOOL, INT64
from exporter.lowering.core import (
    cast,
    constant_value,
    require_opset,
    require_rank,
    shape_of,
    to_int64_list_value,
    unsqueeze,
)
from exporter.lowering.indexing import add_rows, gather_at, wrap_negative
from exporter.lowering.shape import (
    broadcast_shape,
    dims_or_sizes,
    expand_to_shape_value,
    inverse_permutation,
    reshape_like,
    reshape_to,
    transpose_perm,
    typed,
)
from exporter.registry import symbolic


def _is_mask(g, x) -> bool:
    return g.dtype(x) in (BOOL, dtypes.onnx_from_torch(torch.uint8))


def _mask_to_indices(g, mask) -> list:
    """A boolean mask as one int64 index vector per mask dim (NonZero, opset 9)."""
    _require_mask_indexing(g)
    rows = g.op("NonZero", cast(g, mask, BOOL))
    rows_of = [g.op("Gather", rows, g.const(i, torch.int64), axis_i=0) for i in range(require_rank(g, mask))]
    return [typed(r, (None,)) for r in rows_of]


def _require_mask_indexing(g):
    require_opset(g, 9, "boolean-mask indexing needs NonZero")


def _expand_index_list(g, self, indices: list) -> list:
    """The index list with masks replaced by their per-dim index vectors, and trailing Nones dropped."""
    expanded = []
    for index in indices:
        if index is not None and _is_mask(g, index):
            expanded.extend(_mask_to_indices(g, index))
        else:
            expanded.append(None if index is None else cast(g, g.value(index), INT64))
    while expanded and expanded[-1] is None:
        expanded.pop()
    return expanded


def _indexed_dims_first(g, self, indices: list):
    """Transpose the indexed dims of ``self`` to the front when torch would put the result dims there.

    Returns (tensor, index tensors, position of the first indexed dim, permutation applied).
    """
    rank = require_rank(g, self)
    positions = [i for i, index in enumerate(indices) if index is not None]
    tensors = [indices[i] for i in positions]
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    if adjacent:
        return self, tensors, positions[0], list(range(rank))
    perm = positions + [i for i in range(rank) if i not in positions]
    return transpose_perm(g, self, perm), tensors, 0, perm


def _linear_index(g, self, first: int, tensors: list):
    """One index into the merged dims first..first+k-1 of ``self`` from k broadcastable index tensors."""
    sizes = dims_or_sizes(g, self)[first : first + len(tensors)]
    linear = None
    for index, size in zip(tensors, sizes, strict=True):  # more index tensors than dims would be a bug
        index = wrap_negative(g, index, size)
        if linear is None:
            linear = index
        else:
            scaled = g.op("Mul", linear, g.value(size, torch.int64))
            linear = typed(g.op("Add", scaled, index), broadcast_shape(g.shape(linear), g.shape(index)))
    return linear


def _merge_dims(g, self, first: int, count: int):
    if count == 1:
        return self
    rest = dims_or_sizes(g, self)[first + count :]
    return reshape_to(g, self, [0] * first + [-1] + rest)


@symbolic("aten::index", "aten::_unsafe_index")
def index(g, self, indices):
    """Advanced indexing x[i, j, mask, ...]: Gather (one tensor), Compress (one mask), or a Gather of
    linearized indices (several)."""
    indices = list(indices)
    present = [i for i in indices if i is not None]
    if len(present) == 1 and _is_mask(g, present[0]):
        return _select_by_mask(g, self, indices.index(present[0]), present[0])
    indices = _expand_index_list(g, self, indices)
    moved, tensors, first, _ = _indexed_dims_first(g, self, indices)
    if len(tensors) == 1:
        return gather_at(g, moved, cast(g, tensors[0], INT64), first)
    linear = _linear_index(g, moved, first, tensors)
    return g.op("Gather", _merge_dims(g, moved, first, len(tensors)), linear, axis_i=first)


def _select_by_mask(g, self, position: int, mask):
    """``self[..., mask]``: the masked dims merged into one, then Compress along it (opset 9)."""
    _require_mask_indexing(g)
    merged = _merge_dims(g, self, position, require_rank(g, mask))
    return g.op("Compress", merged, reshape_to(g, cast(g, mask, BOOL), [-1]), axis_i=position)


# -- writes -----------------------------------------------------------------------------------------------------
def _broadcast_indices(g, tensors: list) -> list:
    """Index tensors broadcast to one shape (adding zeros of the others' shapes: exact for integers)."""
    if len(tensors) == 1:
        return tensors
    zero = None
    for t in tensors:
        scaled = g.op("Mul", t, g.const(0, torch.int64))
        zero = scaled if zero is None else g.op("Add", zero, scaled)
    shape = broadcast_shape(*[g.shape(t) for t in tensors])
    return [typed(g.op("Add", t, zero), shape) for t in tensors]


_INDEX_PUTS = ("aten::index_put", "aten::index_put_", "aten::_unsafe_index_put")


@symbolic(*_INDEX_PUTS, refuses=True)
@symbolic(*_INDEX_PUTS, since=9)
def index_put(g, self, indices, values, accumulate=False):
    """index_put(indices, values, accumulate): Where for a mask and one value, ScatterND otherwise;
    accumulate sums duplicates. Every form needs opset 9 at least: below it, registered as a refusal, it raises
    the error naming the opset the form needs (9 for a mask, 11 for index tensors)."""
    accumulate = bool(constant_value(accumulate)) if accumulate is not None else False
    indices = list(indices)
    present = [i for i in indices if i is not None]
    values = cast(g, g.value(values), g.dtype(self))
    if len(present) == 1 and _is_mask(g, present[0]) and indices.index(present[0]) == 0 and _is_single(g, values):
        require_opset(g, 9, "index_put with a mask needs Where")
        return _put_scalar_by_mask(g, self, present[0], values, accumulate)
    require_opset(g, 11, "index_put with index tensors needs ScatterND")
    indices = _expand_index_list(g, self, indices)
    moved, tensors, first, perm = _indexed_dims_first(g, self, indices)
    tensors = _broadcast_indices(g, tensors)
    sizes = dims_or_sizes(g, moved)
    tensors = [wrap_negative(g, t, sizes[first + k]) for k, t in enumerate(tensors)]
    front = transpose_perm(g, moved, _front_perm(require_rank(g, moved), first, len(tensors)))
    updates = _values_for_front(g, moved, values, first, len(tensors), tensors[0])
    if accumulate:
        out = _accumulate_front(g, front, tensors, updates)
    else:
        stacked = g.op("Concat", *[unsqueeze(g, t, [-1]) for t in tensors], axis_i=-1)
        out = g.op("ScatterND", front, stacked, updates)
    back = inverse_permutation(_front_perm(require_rank(g, moved), first, len(tensors)))
    return transpose_perm(g, transpose_perm(g, out, back), inverse_permutation(perm))


def _is_single(g, values) -> bool:
    dims = g.dims(values)  # None when unknown: then not provably a single value
    return dims is not None and all(d == 1 for d in dims)


def _put_scalar_by_mask(g, self, mask, value, accumulate: bool):
    """``self[mask] = v`` (or ``+= v``) for a single value v: a Where over the mask (opset 9)."""
    extra = require_rank(g, self) - require_rank(g, mask)
    mask = cast(g, mask, BOOL)
    if extra:
        mask = unsqueeze(g, mask, list(range(require_rank(g, mask), require_rank(g, mask) + extra)))
    value = reshape_to(g, value, [])
    if accumulate:
        zero = g.const(np.zeros((), dtype=dtypes.numpy_from_onnx(g.dtype(self))))
        return g.op("Add", self, g.op("Where", mask, value, zero))
    return g.op("Where", mask, value, self)


def _front_perm(rank: int, first: int, count: int) -> list[int]:
    return list(range(first, first + count)) + [i for i in range(rank) if not first <= i < first + count]


def _values_for_front(g, moved, values, first: int, count: int, index):
    """``values`` broadcast to torch's result layout (dims before, index dims, dims after), index dims then moved
    to the front to match ScatterND's updates layout."""
    sizes = dims_or_sizes(g, moved)
    before, after = sizes[:first], sizes[first + count :]
    index_rank = require_rank(g, index)
    index_shape = shape_of(g, index)
    if isinstance(index_shape, list):
        target = before + index_shape + after
    else:
        parts = ([to_int64_list_value(g, before)] if before else []) + [index_shape]
        parts += [to_int64_list_value(g, after)] if after else []
        target = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis_i=0)
        target = typed(target, [len(before) + index_rank + len(after)])
    expanded = expand_to_shape_value(g, values, target)
    return transpose_perm(g, expanded, _front_perm(len(before) + index_rank + len(after), first, index_rank))


def _accumulate_front(g, front, tensors: list, updates):
    """``front[idx...] += updates`` with the indexed dims leading: merged rows, then the one-hot row sum."""
    count = len(tensors)
    rank = require_rank(g, front)
    linear = _linear_index(g, front, 0, tensors)
    if rank > count:
        rows = reshape_to(g, _merge_dims(g, front, 0, count), [0, -1])
    else:
        rows = reshape_to(g, front, [-1, 1])
    flat_updates = reshape_to(g, updates, [-1, dims_or_sizes(g, rows)[1]])
    summed = add_rows(g, rows, linear, flat_updates)
    return reshape_like(g, summed, front)
