"""Shape manipulation: size, view/reshape, flatten, cat, transpose, squeeze/unsqueeze."""

from __future__ import annotations

from exporter.registry import parse_args, symbolic
from exporter.symbolics._helpers import (
    constant_value,
    dim_size,
    is_value,
    normalize_dim,
    promote_all,
    require_rank,
    reshape,
    shape_of,
    slice_op,
    squeeze,
    to_int64_list_value,
    unsqueeze,
)


@symbolic("aten::size")
def size(g, self, dim=None):
    if dim is None:
        return shape_of(g, self)
    return dim_size(g, self, int(constant_value(dim)))


@symbolic("aten::view", "aten::reshape", "aten::_reshape_alias")
def view(g, self, size, *unused):
    return reshape(g, self, size)


@symbolic("aten::flatten")
@parse_args("v", "i", "i")
def flatten(g, input, start_dim, end_dim):
    rank = require_rank(g, input)
    if rank == 0:
        return reshape(g, input, [1])
    start, end = normalize_dim(start_dim, rank), normalize_dim(end_dim, rank)
    if start == end:
        return input
    if end == rank - 1 and start == 1 and g.static_dims(input) is None:
        return g.op("Flatten", input, axis_i=1)
    dims = g.static_dims(input)
    if dims is not None:
        new_shape = dims[:start] + [-1] + dims[end + 1 :]
        return reshape(g, input, new_shape)
    if end == rank - 1 and start == 0:
        return reshape(g, input, [-1])
    shape = g.op("Shape", input)
    parts = []
    if start > 0:
        parts.append(slice_op(g, shape, [0], [0], [start]))
    parts.append(g.const([-1]))
    if end + 1 < rank:
        parts.append(slice_op(g, shape, [0], [end + 1], [rank]))
    return g.op("Reshape", input, g.op("Concat", *parts, axis_i=0))


@symbolic("aten::cat", "aten::concat", "aten::concatenate")
def cat(g, tensors, dim):
    dim = int(constant_value(dim))
    if is_value(tensors):
        from exporter.symbolics.sequence import concat_from_sequence

        return concat_from_sequence(g, tensors, dim)
    tensors = [t for t in tensors if not _is_empty_1d(g, t)]
    if len(tensors) == 1:
        return tensors[0]
    _, values = promote_all(g, *tensors)
    rank = next((g.rank(t) for t in values if g.rank(t) is not None), None)
    return g.op("Concat", *values, axis_i=normalize_dim(dim, rank))


def _is_empty_1d(g, t) -> bool:
    shape = g.shape(t)
    return shape is not None and len(shape) == 1 and shape[0] == 0


@symbolic("aten::transpose", "aten::transpose_")
@parse_args("v", "i", "i")
def transpose(g, self, dim0, dim1):
    rank = require_rank(g, self)
    dim0, dim1 = normalize_dim(dim0, rank), normalize_dim(dim1, rank)
    if dim0 == dim1:
        return self
    perm = list(range(rank))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::permute")
@parse_args("v", "is")
def permute(g, self, dims):
    rank = require_rank(g, self)
    perm = [normalize_dim(d, rank) for d in dims]
    if perm == list(range(rank)):
        return self
    return g.op("Transpose", self, perm_i=perm)


@symbolic("aten::unsqueeze", "aten::unsqueeze_")
@parse_args("v", "i")
def unsqueeze_(g, self, dim):
    rank = g.rank(self)
    if dim < 0:
        dim = normalize_dim(dim, None if rank is None else rank + 1)
    return unsqueeze(g, self, [dim])


@symbolic("aten::squeeze", "aten::squeeze_")
def squeeze_(g, self, dim=None):
    if dim is None:
        return squeeze(g, self)
    dims = constant_value(dim)
    dims = dims if isinstance(dims, list) else [dims]
    rank = require_rank(g, self)
    dims = [normalize_dim(int(d), rank) for d in dims]
    shape = g.shape(self)
    known_ones = [d for d in dims if shape[d] == 1]
    if shape is not None and all(isinstance(shape[d], int) for d in dims):
        if not known_ones:
            return self
        return squeeze(g, self, known_ones)
    return squeeze(g, self, dims)
