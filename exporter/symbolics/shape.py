"""Shape manipulation: size, view/reshape, flatten, expand/repeat, squeeze/unsqueeze, transposes, splitting and
joining, flips and rolls, padding, pixel/channel shuffles, sliding windows, meshgrid, tril/triu and diagonals.

Static shapes are baked in as constants; in dynamic exports sizes are computed in the graph (Shape/Gather),
except the dims that ``g.dims`` proves static. Ops that appeared late in ONNX (Expand 8, Trilu 14, circular
padding) are emulated with older ops where the shapes allow it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from exporter.dtypes import INT64
from exporter import dtypes, ir
from exporter.errors import SymbolicValueError
from exporter.lowering.comparison import equal, less, select
from exporter.lowering.core import (
    cast, constant_value, dim_size, is_constant, is_value, normalize_dim, promote_all, require_opset, require_rank,
    reshape, shape_of, slice_op, squeeze, to_int64_list_value, unsqueeze,
)
from exporter.lowering.indexing import gather_at, repeat_indices
from exporter.lowering.runtime import DEPTH_TO_SPACE_INTEGERS, applies
from exporter.lowering.sequence import (
    concat_from_sequence,
    require_sequences,
    split_to_sequence,
)
from exporter.lowering.shape import (
    INT64_MAX,
    arange_indices,
    circular_pad,
    dims_or_sizes,
    expand_to,
    expand_to_shape_value,
    known_dims,
    pad_op,
    reshape_to,
    size_arith,
    split_sizes,
    squeeze_where_one,
    transpose_perm,
    unsqueeze_at,
    zero_outside,
)
from exporter.registry import parse_args, symbolic, unsupported


def traced_dim(g, dim: int, input_index: int = 0) -> int | None:
    """The size the trace recorded for ``dim`` of the node's input (the example's size, even if dynamic)."""

    shape = g.input_layout(input_index)[0]
    return shape[dim] if shape is not None and isinstance(shape[dim], int) else None


def list_output_count(g) -> int | None:
    """How many tensors the list returned by the current node holds, read from its ListUnpack consumer."""
    return g.list_output_length(0)


# -- size queries ---------------------------------------------------------------------------------------------
@symbolic("aten::size")
def size(g, self, dim=None):
    """``x.size()`` / ``x.size(dim)``: Python ints where static, Shape/Gather values where not."""
    if dim is None:
        return shape_of(g, self)
    if is_value(dim) and not is_constant(dim):
        # A dim computed at run time (``x.size(i + 2)`` in scripted interpolate's loop): picked from the shape.
        out = gather_at(g, g.op("Shape", g.value(self)), cast(g, dim, INT64), 0)
        out.dtype, out.shape, out.is_number = INT64, (), True
        return out
    return dim_size(g, self, int(constant_value(dim)))


@symbolic("aten::_shape_as_tensor")
def shape_as_tensor(g, self):
    """``torch._shape_as_tensor(x)``: the shape as a 1-D int64 tensor (Shape, or a constant where static)."""
    return g.value(shape_of(g, self), torch.int64)


@symbolic("aten::numel")
def numel(g, self):
    """Element count: an int for static shapes, else ONNX Size."""
    dims = g.static_dims(self)
    if dims is not None:
        return int(np.prod(dims, dtype=np.int64))
    out = g.op("Size", self)
    out.shape, out.is_number = (), True
    return out


@symbolic("aten::dim")
def dim(g, self):
    """The rank, always known at export time."""
    return require_rank(g, self)


# -- reshaping --------------------------------------------------------------------------------------------------
@symbolic("aten::view", "aten::reshape", "aten::_reshape_alias")
def view(g, self, size, *unused):
    """view/reshape: ONNX Reshape (-1 inferred; list entries may be run-time sizes)."""
    return reshape(g, self, size)


@symbolic("aten::view_as", "aten::reshape_as")
def view_as(g, self, other):
    """view_as/reshape_as: Reshape to the other tensor's shape."""
    return reshape(g, self, shape_of(g, other))


@symbolic("aten::flatten")
@parse_args("v", "i", "i")
def flatten(g, input, start_dim, end_dim):
    """flatten(start, end): Reshape (Flatten when it is exactly axis 1 in a dynamic-shape export: exact for any sizes,
    so no shape inference is run to learn whether they are known)."""
    rank = require_rank(g, input)
    if rank == 0:
        return reshape(g, input, [1])
    start, end = normalize_dim(start_dim, rank), normalize_dim(end_dim, rank)
    if start == end:
        return input
    if end == rank - 1 and start == 1 and not g.static_shapes:
        return g.op("Flatten", input, axis_i=1)
    dims = g.static_dims(input)
    if dims is not None:
        # The product, not -1: Reshape cannot infer a -1 next to a zero-size dim (say, no detections).
        return reshape(g, input, dims[:start] + [math.prod(dims[start : end + 1])] + dims[end + 1 :])
    # Reshape's 0 copies the input dim at the same index, which holds for every dim before ``start``.
    sizes = dims_or_sizes(g, input)
    return reshape(g, input, [0] * start + [-1] + sizes[end + 1 :])


@symbolic("aten::unflatten")
def unflatten(g, self, dim, sizes):
    """unflatten(dim, sizes): Reshape, copying the leading dims with Reshape's 0."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    sizes = sizes if isinstance(sizes, list) else constant_value(sizes)
    dims = g.static_dims(self)
    if dims is not None:
        return reshape(g, self, dims[:dim] + list(sizes) + dims[dim + 1 :])
    after = dims_or_sizes(g, self)[dim + 1 :]
    return reshape(g, self, [0] * dim + list(sizes) + after)


@symbolic("aten::expand")
def expand(g, self, size, implicit=None):
    """expand(size): Expand (Tile below opset 8); -1 keeps a dim."""
    return expand_to(g, self, list(size) if isinstance(size, (list, tuple)) else constant_value(size))


@symbolic("aten::expand_as")
def expand_as(g, self, other):
    """expand_as(other): broadcast to the other tensor's shape."""
    return expand_to_shape_value(g, self, shape_of(g, other))


@symbolic("aten::repeat")
def repeat(g, self, repeats):
    """repeat(repeats): Tile, after adding leading dims when repeats is longer than the rank."""
    repeats = list(repeats) if isinstance(repeats, (list, tuple)) else constant_value(repeats)
    rank = require_rank(g, self)
    if len(repeats) > rank:
        self = unsqueeze(g, self, list(range(len(repeats) - rank)))
    if all(not is_value(r) and int(constant_value(r)) == 1 for r in repeats):
        return self
    return g.op("Tile", self, to_int64_list_value(g, repeats))


@symbolic("aten::tile")
def tile(g, self, dims):
    """tile(dims): repeat with dims padded by leading ones."""
    dims = list(dims) if isinstance(dims, (list, tuple)) else constant_value(dims)
    rank = require_rank(g, self)
    return repeat(g, self, [1] * (rank - len(dims)) + dims)


@symbolic("aten::repeat_interleave")
def repeat_interleave(g, self, repeats, dim=None, output_size=None):
    """repeat_interleave(repeats, dim): each slice along ``dim`` (of the flattened input when ``dim`` is None) repeated.

    One count for every slice: Unsqueeze after ``dim``, Tile, then merge the two dims. A constant count per slice:
    Gather with the repeated indices. Counts known only at run time, one per slice or one for all (a 1-d tensor
    of run-time length): Gather with the indices :func:`repeat_indices` computes (opset 9).
    ``repeat_interleave(repeats)`` (no input) is those indices themselves.
    """
    if g.input_count == 2:  # repeat_interleave(repeats, *, output_size): constant ones are folded
        return repeat_indices(g, reshape(g, self, [-1]))
    if dim is None or constant_value(dim) is None:
        self, dim = reshape(g, self, [-1]), 0
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    if is_value(repeats) and not is_constant(repeats):
        if g.rank(repeats) == 1 and g.static_dims(repeats) != [1]:
            # One count per slice, or one for all: a length-1 tensor broadcasts to the slices as in PyTorch.
            counts = g.op("Expand", cast(g, repeats, INT64), to_int64_list_value(g, [dim_size(g, self, dim)]))
            out = g.op("Gather", self, repeat_indices(g, counts), axis_i=dim)
            sizes = list(g.shape(self) or [None] * rank)
            g.set_type(out, g.dtype(self), tuple(sizes[:dim] + [None] + sizes[dim + 1 :]))
            return out
        if g.rank(repeats) not in (0, 1):
            raise unsupported("aten::repeat_interleave", g.opset, "repeats must be 0-d or 1-d")
        count = reshape(g, repeats, [])
    else:
        counts = np.asarray(constant_value(repeats), dtype=np.int64).reshape(-1)
        if counts.size > 1:
            indices = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
            return g.op("Gather", self, g.const(indices), axis_i=dim)
        count = int(counts[0])
    tiles = [1] * (dim + 1) + [count] + [1] * (rank - dim - 1)
    tiled = g.op("Tile", unsqueeze(g, self, [dim + 1]), to_int64_list_value(g, tiles))
    sizes = list(g.shape(self) or [None] * rank)
    g.set_type(tiled, g.dtype(self), tuple(sizes[: dim + 1] + [None if is_value(count) else count] + sizes[dim + 1 :]))
    return flatten(g, tiled, dim, dim + 1)


# -- squeeze / unsqueeze ----------------------------------------------------------------------------------------
@symbolic("aten::unsqueeze", "aten::unsqueeze_")
def unsqueeze_(g, self, dim):
    """unsqueeze(dim): Unsqueeze (axes attribute before 13, input from 13); a dim chosen at run time, a Reshape to
    the shape with a 1 inserted (opset 9)."""
    if not is_constant(dim):
        return unsqueeze_at(g, self, dim)
    dim = int(constant_value(dim))
    rank = g.rank(self)
    if dim < 0:
        dim = normalize_dim(dim, None if rank is None else rank + 1)
    return unsqueeze(g, self, [dim])


@symbolic("aten::squeeze", "aten::squeeze_")
def squeeze_(g, self, dim=None):
    """squeeze() / squeeze(dim) / squeeze(dims): Squeeze of the dims that are 1; a dim whose size or index is known
    only at run time is decided at run time (see ``squeeze_where_one``)."""
    rank = require_rank(g, self)
    dims_known = known_dims(g, self)
    if dim is None:
        if dims_known is not None and all(d is not None for d in dims_known):
            ones = [i for i, d in enumerate(dims_known) if d == 1]
            return squeeze(g, self, ones) if ones else self
        return squeeze(g, self)
    if rank == 0:
        return self  # dim 0 (or -1) of a 0-d tensor: nothing to squeeze
    wanted = constant_value(dim) if is_constant(dim) else dim
    wanted = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
    return squeeze_where_one(g, self, wanted)


@symbolic("aten::transpose", "aten::transpose_", "aten::swapaxes", "aten::swapdims")
@parse_args("v", "i", "i")
def transpose(g, self, dim0, dim1):
    """transpose/swapaxes/swapdims: Transpose swapping two dims."""
    rank = require_rank(g, self)
    if rank == 0:
        return self  # PyTorch lets a 0-d tensor swap dims 0/-1 with themselves
    perm = list(range(rank))
    dim0, dim1 = normalize_dim(dim0, rank), normalize_dim(dim1, rank)
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return transpose_perm(g, self, perm)


@symbolic("aten::permute")
@parse_args("v", "is")
def permute(g, self, dims):
    """permute(dims): Transpose."""
    rank = require_rank(g, self)
    return transpose_perm(g, self, [normalize_dim(d, rank) for d in dims])


@symbolic("aten::t", "aten::numpy_T")
def t(g, self):
    """t(): reverse the (at most 2) dims."""
    rank = require_rank(g, self)
    return transpose_perm(g, self, list(range(rank))[::-1])


@symbolic("aten::movedim", "aten::moveaxis")
def movedim(g, self, source, destination):
    """movedim/moveaxis(source, destination): Transpose; other dims keep their order."""
    rank = require_rank(g, self)
    source, destination = constant_value(source), constant_value(destination)
    source = [normalize_dim(int(s), rank) for s in (source if isinstance(source, list) else [source])]
    destination = destination if isinstance(destination, list) else [destination]
    destination = [normalize_dim(int(d), rank) for d in destination]
    perm = [-1] * rank
    for s, d in zip(source, destination):
        perm[d] = s
    rest = iter(i for i in range(rank) if i not in source)
    perm = [p if p != -1 else next(rest) for p in perm]
    return transpose_perm(g, self, perm)


# -- splitting --------------------------------------------------------------------------------------------------
def split_at(g, x, dim: int, starts: list) -> list:
    """Pieces of ``x`` between consecutive ``starts`` along ``dim`` (the last one runs to the end), via Slice."""
    ends = list(starts[1:]) + [INT64_MAX]
    return [slice_op(g, x, [dim], [s], [e]) for s, e in zip(starts, ends)]


@symbolic("aten::split", "aten::split_with_sizes", "aten::unsafe_split", "aten::unsafe_split_with_sizes")
def split(g, self, split_size, dim=0):
    """split(split_size | sizes, dim): Split for static sizes, Slices for run-time sizes, a sequence for a
    run-time count."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    if not isinstance(split_size, list) and not is_value(split_size):
        split_size = constant_value(split_size)
    n = known_dims(g, self)[dim]
    if isinstance(split_size, list):
        if any(is_value(s) for s in split_size):
            starts = [0]
            for s in split_size[:-1]:
                starts.append(size_arith(g, "Add", starts[-1], s))
            return split_at(g, self, dim, starts)
        return split_sizes(g, self, dim, [int(s) for s in split_size]) if n is not None else split_at(
            g, self, dim, list(np.cumsum([0] + [int(s) for s in split_size[:-1]]))
        )
    if is_value(split_size):  # a size computed at run time (torch.export's chunk of a dynamic axis)
        step = split_size
    else:
        step = int(split_size)
        if n is not None:
            return split_sizes(g, self, dim, [min(step, n - i) for i in range(0, n, step)] or [0])
    count = list_output_count(g)
    if count is None:
        return split_to_sequence(g, self, step, dim)
    return split_at(g, self, dim, [size_arith(g, "Mul", step, i) for i in range(count)])


@symbolic("aten::chunk", "aten::unsafe_chunk")
def chunk_by_traced_size(g, self, chunks, dim):
    """chunk(chunks, dim) before opset 10, where Slice takes constant bounds only: a dim that shape inference could
    not prove static is split by the size the trace recorded, so a different size at run time fails loudly in
    Split. A piece count computed at run time needs Slice's input bounds (opset 10)."""
    if not is_constant(chunks):
        require_opset(g, 10, "chunk into a number of pieces computed at run time needs Slice with input bounds")
    chunks, dim = int(constant_value(chunks)), int(constant_value(dim))
    dim = normalize_dim(dim, require_rank(g, self))
    n = known_dims(g, self)[dim]
    return _chunk(g, self, chunks, dim, traced_dim(g, dim) if n is None else n)


@symbolic("aten::chunk", "aten::unsafe_chunk", since=10)
def chunk(g, self, chunks, dim):
    """chunk(chunks, dim) from opset 10: a dim of run-time size, or a piece count computed at run time, is cut at
    run-time bounds (Slice inputs)."""
    chunks = int(constant_value(chunks)) if is_constant(chunks) else cast(g, reshape(g, chunks, []), INT64)
    dim = normalize_dim(int(constant_value(dim)), require_rank(g, self))
    return _chunk(g, self, chunks, dim, known_dims(g, self)[dim])


def _chunk(g, self, chunks, dim: int, n: int | None):
    """Pieces of ceil(n / chunks), like torch: Split when the dim's size ``n`` and ``chunks`` are known, Slices (or
    a sequence when the piece count is only known at run time) otherwise."""
    if n is not None and not is_value(chunks):
        step = -(-n // chunks)
        return split_sizes(g, self, dim, [min(step, n - i) for i in range(0, n, step)] or [0])
    # ceil(n / chunks) computed in the graph: (n + chunks - 1) // chunks.
    size = dim_size(g, self, dim) if n is None else n
    step = size_arith(g, "Div", size_arith(g, "Sub", size_arith(g, "Add", size, chunks), 1), chunks)
    count = list_output_count(g)
    if count is None:
        return split_to_sequence(g, self, step, dim)
    return split_at(g, self, dim, [size_arith(g, "Mul", step, i) for i in range(count)])


@symbolic("aten::tensor_split")
def tensor_split(g, self, indices_or_sections, dim=0):
    """tensor_split(sections | indices, dim): Slices at the section boundaries."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    if is_value(indices_or_sections) and not is_constant(indices_or_sections):
        return _tensor_split_at_run_time(g, self, indices_or_sections, dim)
    spec = constant_value(indices_or_sections)
    if isinstance(spec, list):
        return split_at(g, self, dim, [0] + [int(i) for i in spec])
    n = known_dims(g, self)[dim]
    if n is None:
        raise SymbolicValueError("tensor_split into sections needs the split dim to be static")
    sections = int(spec)
    sizes = [n // sections + (1 if i < n % sections else 0) for i in range(sections)]
    return split_at(g, self, dim, [int(s) for s in np.cumsum([0] + sizes[:-1])])


def _tensor_split_at_run_time(g, x, spec, dim: int) -> list:
    """tensor_split by a tensor known only at run time: a 1-D tensor of split points (Python slice bounds, so
    negative ones count from the end), or a 0-d section count s (the first n % s pieces one longer than n // s).
    The number of pieces is the traced one (the points' length + 1, or the list's unpacked length); the bounds are
    computed in the graph (Slice with run-time bounds: opset 10)."""
    require_opset(g, 10, "tensor_split at split points known only at run time needs Slice with run-time bounds")
    spec = cast(g, spec, INT64)
    rank = require_rank(g, spec, "tensor of split points")
    count = list_output_count(g)
    if rank == 1:
        points = known_dims(g, spec)[0]
        points = points if points is not None else (count - 1 if count is not None else None)
        if points is None:
            raise SymbolicValueError("tensor_split at a run-time tensor of split points needs their number")
        starts = [0] + [_element(g, spec, i) for i in range(points)]
        return split_at(g, x, dim, starts)
    if count is None:
        raise SymbolicValueError("tensor_split into a run-time number of sections needs the number of pieces")
    n = dim_size(g, x, dim)
    base = size_arith(g, "Div", n, spec)
    longer = size_arith(g, "Sub", n, size_arith(g, "Mul", base, spec))  # n % s pieces are base + 1 long
    starts = []
    for i in range(count):
        # start_i = i * base + min(i, n % s)
        i_value = g.const(i, torch.int64)
        extra = select(g, less(g, i_value, longer), i_value, longer)
        starts.append(size_arith(g, "Add", size_arith(g, "Mul", base, i), extra))
    return split_at(g, x, dim, starts)


def _element(g, vector, i: int):
    out = g.op("Gather", vector, g.const(i, torch.int64), axis_i=0)
    out.shape = ()
    return out


@symbolic("aten::unbind")
@parse_args("v", "i")
def unbind(g, self, dim):
    """unbind(dim): one Gather per index (a SplitToSequence when the count is only known at run time)."""
    rank = require_rank(g, self)
    dim = normalize_dim(dim, rank)
    n = known_dims(g, self)[dim]
    count = n if n is not None else list_output_count(g)
    if count is None:
        return _unbind_to_sequence(g, self, dim)
    return [g.op("Gather", self, g.const(i, torch.int64), axis_i=dim) for i in range(count)]


def _unbind_to_sequence(g, x, dim: int):
    """unbind into an ONNX sequence when the number of pieces is only known at run time (opset 11)."""

    require_sequences(g, "unbinding a dim whose size is known only at run time")
    out = g.op("SplitToSequence", x, axis_i=dim, keepdims_i=0)
    out.kind, out.dtype, out.shape = ir.SEQUENCE, g.dtype(x), None
    return out


# -- joining ----------------------------------------------------------------------------------------------------
@symbolic("aten::cat", "aten::concat", "aten::concatenate")
def cat(g, tensors, dim):
    """cat/concat/concatenate: Concat of the promoted inputs (empty 1-D tensors dropped, as torch does)."""
    dim = int(constant_value(dim))
    if is_value(tensors):

        return concat_from_sequence(g, tensors, dim)
    # Every input empty (say, no detections in the traced image): the result is the (first) empty tensor.
    tensors = [t for t in tensors if not _is_empty_1d(g, t)] or tensors[:1]
    if len(tensors) == 1:
        return tensors[0]
    _, values = promote_all(g, *tensors)
    rank = next((g.rank(t) for t in values if g.rank(t) is not None), None)
    return g.op("Concat", *values, axis_i=normalize_dim(dim, rank))


def _is_empty_1d(g, t) -> bool:
    shape = g.shape(t)
    return shape is not None and len(shape) == 1 and shape[0] == 0


@symbolic("aten::stack")
def stack(g, tensors, dim):
    """stack(tensors, dim): Unsqueeze each, then Concat."""
    if is_value(tensors) and tensors.kind == ir.SCANNED:  # already stacked on axis 0: move that axis to dim
        rank = len(tensors.shape) if tensors.shape is not None else require_rank(g, tensors)
        dim = normalize_dim(int(constant_value(dim)), rank)
        perm = [*range(1, dim + 1), 0, *range(dim + 1, rank)]
        return g.op("Identity", tensors) if dim == 0 else g.op("Transpose", tensors, perm_i=perm)
    if is_value(tensors):

        return concat_from_sequence(g, tensors, int(constant_value(dim)), new_axis=True)
    rank = require_rank(g, tensors[0])
    dim = normalize_dim(int(constant_value(dim)), rank + 1)
    _, values = promote_all(g, *tensors)
    pieces = [unsqueeze(g, t, [dim]) for t in values]
    return pieces[0] if len(pieces) == 1 else g.op("Concat", *pieces, axis_i=dim)


@symbolic("aten::hstack")
def hstack(g, tensors):
    """hstack: cat along dim 1 (dim 0 for 1-D inputs)."""
    tensors = [unsqueeze(g, t, [0]) if g.rank(t) == 0 else t for t in tensors]
    return cat(g, tensors, 0 if g.rank(tensors[0]) == 1 else 1)


@symbolic("aten::vstack", "aten::row_stack")
def vstack(g, tensors):
    """vstack/row_stack: cat along dim 0 after making inputs at least 2-D."""
    tensors = [reshape(g, t, [1, -1]) if (g.rank(t) or 0) < 2 else t for t in tensors]
    return cat(g, tensors, 0)


# -- slicing-based rearrangements -------------------------------------------------------------------------------
@symbolic("aten::narrow")
def narrow(g, self, dim, start, length):
    """narrow(dim, start, length): Slice."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    if not is_value(start) and int(constant_value(start)) < 0:
        start = size_arith(g, "Add", dim_size(g, self, dim), start)
    return slice_op(g, self, [dim], [start], [size_arith(g, "Add", start, length)])


@symbolic("aten::flip")
@parse_args("v", "is")
def flip_by_gather(g, self, dims):
    """flip(dims) before opset 10 (Slice-1 has no steps): Gather of the reversed positions."""
    out = self
    for d in _normalized_dims(g, self, dims):
        n = known_dims(g, self)[d]
        if n is not None:
            indices = g.const(np.arange(n - 1, -1, -1, dtype=np.int64))
        else:
            last = size_arith(g, "Sub", dim_size(g, self, d), 1)
            indices = g.op("Sub", unsqueeze(g, last, [0]), arange_indices(g, dim_size(g, self, d)))
        out = g.op("Gather", out, indices, axis_i=d)
    return out


@symbolic("aten::flip", since=10)
@parse_args("v", "is")
def flip(g, self, dims):
    """flip(dims) from opset 10: Slice with step -1."""
    count = len(dims)
    return slice_op(g, self, _normalized_dims(g, self, dims), [-1] * count, [-INT64_MAX] * count, [-1] * count)


def _normalized_dims(g, x, dims: list[int]) -> list[int]:
    rank = require_rank(g, x)
    return [normalize_dim(d, rank) for d in dims]


@symbolic("aten::roll")
@parse_args("v", "is", "is")
def roll(g, self, shifts, dims):
    """roll(shifts, dims): two Slices per static dim, joined in swapped order; a Gather of (i - shift) mod n for a
    dim of run-time size (opset 9), where the shift may exceed the size."""
    if not dims:
        flat = reshape_to(g, self, [-1])
        return reshape(g, roll(g, flat, shifts, [0]), shape_of(g, self))
    rank = require_rank(g, self)
    out = self
    for shift, d in zip(shifts, dims):
        d = normalize_dim(d, rank)
        n = known_dims(g, self)[d]
        if n is None:
            out = _roll_run_time_dim(g, out, shift, d)
            continue
        shift = shift % n if n else 0
        if shift == 0:
            continue
        # Rolling by s moves the last s entries to the front.
        head, tail = split_at(g, out, d, [0, -shift])
        out = g.op("Concat", tail, head, axis_i=d)
    return out


def _roll_run_time_dim(g, x, shift: int, dim: int):
    """Gather of positions (i - shift) mod n, computed as (i + n*|shift| - shift) mod n to stay non-negative
    (integer Div truncates, so it is a floor only for non-negative operands; Mod is opset 10)."""
    n = dim_size(g, x, dim)
    offset = size_arith(g, "Sub", size_arith(g, "Mul", n, abs(shift)), shift)
    shifted = g.op("Add", arange_indices(g, n), offset)
    wrapped = g.op("Sub", shifted, g.op("Mul", g.op("Div", shifted, n), n))
    return g.op("Gather", x, wrapped, axis_i=dim)


@symbolic("aten::pad")
def pad(g, input, pad, mode="constant", value=None):
    """F.pad (aten::pad): constant, reflect, replicate or circular padding."""
    return pad_op(g, input, pad, str(constant_value(mode)) if mode is not None else "constant", value)


@symbolic("aten::constant_pad_nd")
def constant_pad_nd(g, input, pad, value=0):
    """constant_pad_nd(pad, value): Pad in constant mode."""
    return pad_op(g, input, pad, "constant", value)


@symbolic("aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d")
def reflection_pad(g, input, padding):
    """reflection_pad{1,2,3}d: Pad in reflect mode."""
    return pad_op(g, input, padding if isinstance(padding, list) else constant_value(padding), "reflect")


@symbolic("aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d")
def replication_pad(g, input, padding):
    """replication_pad{1,2,3}d: Pad in edge mode."""
    return pad_op(g, input, padding if isinstance(padding, list) else constant_value(padding), "replicate")


@symbolic("aten::_pad_circular", "aten::pad_circular")
def pad_circular(g, input, padding):
    """_pad_circular: Pad-19 mode 'wrap'; before 19 (ONNX Pad has no wrap mode) Slices and a Concat."""
    return circular_pad(g, input, constant_value(padding), require_rank(g, input))


# -- shuffles ---------------------------------------------------------------------------------------------------
@symbolic("aten::pixel_shuffle")
@parse_args("v", "i")
def pixel_shuffle_by_reshapes(g, self, upscale_factor):
    """pixel_shuffle(r) before opset 11, whose DepthToSpace knows only the DCR order: Reshape/Transpose/Reshape."""
    _require_4d(g, self, "pixel_shuffle")
    return _shuffle_by_reshapes(g, self, upscale_factor)


@symbolic("aten::pixel_shuffle", since=11)
@parse_args("v", "i")
def pixel_shuffle(g, self, upscale_factor):
    """pixel_shuffle(r) from opset 11: DepthToSpace in CRD mode."""
    _require_4d(g, self, "pixel_shuffle")
    if not dtypes.is_float(g.dtype(self)) and applies(g, DEPTH_TO_SPACE_INTEGERS):
        return _shuffle_by_reshapes(g, self, upscale_factor)
    return g.op("DepthToSpace", self, blocksize_i=upscale_factor, mode_s="CRD")


def _require_4d(g, x, op: str) -> None:
    if require_rank(g, x) != 4:
        raise SymbolicValueError(f"{op} is exported for 4-D inputs only")


def _shuffle_by_reshapes(g, self, r: int):
    n, c, h, w = dims_or_sizes(g, self)
    c_out = size_arith(g, "Div", c, r * r)
    blocks = reshape(g, self, [n, c_out, r, r, h, w])
    moved = transpose_perm(g, blocks, [0, 1, 4, 2, 5, 3])
    return reshape(g, moved, [n, c_out, size_arith(g, "Mul", h, r), size_arith(g, "Mul", w, r)])


@symbolic("aten::pixel_unshuffle")
@parse_args("v", "i")
def pixel_unshuffle(g, self, downscale_factor):
    """pixel_unshuffle(r): Reshape/Transpose/Reshape (channel-major, unlike SpaceToDepth)."""
    r = downscale_factor
    _require_4d(g, self, "pixel_unshuffle")
    # SpaceToDepth orders output channels block-major; torch orders them channel-major, so reshape instead.
    n, c, h, w = dims_or_sizes(g, self)
    h_out, w_out = size_arith(g, "Div", h, r), size_arith(g, "Div", w, r)
    blocks = reshape(g, self, [n, c, h_out, r, w_out, r])
    moved = transpose_perm(g, blocks, [0, 1, 3, 5, 2, 4])
    return reshape(g, moved, [n, size_arith(g, "Mul", c, r * r), h_out, w_out])


@symbolic("aten::channel_shuffle", "aten::native_channel_shuffle")
@parse_args("v", "i")
def channel_shuffle(g, self, groups):
    """channel_shuffle(groups): Reshape to (N, g, C/g, rest), swap the group dims, Reshape back to the input shape.

    With a static channel count the reshapes copy or infer every other dim (0 and -1), and the final one reads
    the input's Shape, so ONNX shape inference still knows the channel count downstream in dynamic exports.
    """
    channels = known_dims(g, self)[1]
    if channels is not None:
        grouped = reshape_to(g, self, [0, groups, channels // groups, -1])
        swapped = transpose_perm(g, grouped, [0, 2, 1, 3])
        return reshape(g, swapped, shape_of(g, self))
    rank = require_rank(g, self)
    sizes = dims_or_sizes(g, self)
    per_group = size_arith(g, "Div", sizes[1], groups)
    grouped = reshape(g, self, [sizes[0], groups, per_group] + sizes[2:])
    swapped = transpose_perm(g, grouped, [0, 2, 1] + list(range(3, rank + 1)))
    return reshape(g, swapped, sizes)


# -- sliding windows --------------------------------------------------------------------------------------------
@symbolic("aten::unfold")
@parse_args("v", "i", "i", "i")
def unfold(g, self, dimension, size, step):
    """Tensor.unfold(dim, size, step): Gather of the window positions, window contents moved last."""
    rank = require_rank(g, self)
    if rank == 0:
        return reshape(g, self, [1])
    d = normalize_dim(dimension, rank)
    n = known_dims(g, self)[d]
    if n is None:
        raise SymbolicValueError("unfold needs the unfolded dim to be static")
    windows = (n - size) // step + 1
    indices = np.arange(windows)[:, None] * step + np.arange(size)[None, :]
    gathered = g.op("Gather", self, g.const(indices.astype(np.int64)), axis_i=d)
    # Gather gives [..., windows, size, ...]; torch puts the window contents last.
    perm = [i for i in range(rank + 1) if i != d + 1] + [d + 1]
    return transpose_perm(g, gathered, perm)


def _window_weight(channels: int, kernel: list[int], dtype: int) -> np.ndarray:
    """One-hot grouped-conv weight that copies each kernel tap of each channel to its own output channel."""
    kh, kw = kernel
    taps = kh * kw
    weight = np.zeros((channels * taps, 1, kh, kw), dtype=dtypes.numpy_from_onnx(dtype))
    for c in range(channels):
        for i in range(kh):
            for j in range(kw):
                weight[c * taps + i * kw + j, 0, i, j] = 1
    return weight


@symbolic("aten::im2col")
@parse_args("v", "is", "is", "is", "is")
def im2col(g, self, kernel_size, dilation, padding, stride):
    """im2col (F.unfold): a grouped Conv whose one-hot kernels copy every tap to its own channel. Where shape
    inference lost the channel count (ConvBERT's dynamic export at opsets 10-13) the captured size is taken: another
    count at run time fails loudly in the Conv (its groups would not match the input's channels)."""
    channels = known_dims(g, self)[1] if require_rank(g, self) == 4 else None
    channels = channels if channels is not None else traced_dim(g, 1)
    if require_rank(g, self) != 4 or channels is None:
        raise SymbolicValueError("im2col needs a 4-D input with a static channel count")
    weight = g.const(_window_weight(channels, kernel_size, g.dtype(self)))
    cols = g.op("Conv", self, weight, kernel_shape_i=kernel_size, dilations_i=dilation, strides_i=stride,
                pads_i=padding + padding, group_i=channels)
    return reshape(g, cols, [0, channels * kernel_size[0] * kernel_size[1], -1])


@symbolic("aten::col2im")
@parse_args("v", "is", "is", "is", "is", "is")
def col2im(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im (F.fold): the grouped ConvTranspose of im2col's one-hot kernels, which sums overlaps (Col2Im from 18).
    An unbatched input [C * kH * kW, L] folds as a batch of one."""
    if require_rank(g, self) == 2:
        return squeeze(g, col2im(g, unsqueeze(g, self, [0]), output_size, kernel_size, dilation, padding, stride), [0])
    taps = kernel_size[0] * kernel_size[1]
    dims = known_dims(g, self)
    if require_rank(g, self) != 3:
        raise SymbolicValueError("col2im needs a 2-D or 3-D input")
    if dims[1] is None:
        require_opset(g, 18, "col2im of a channel count known only at run time needs Col2Im")
    channels = dims[1] // taps
    span = [dilation[i] * (kernel_size[i] - 1) + 1 for i in range(2)]
    blocks = [(output_size[i] + 2 * padding[i] - span[i]) // stride[i] + 1 for i in range(2)]
    grid = reshape(g, self, [0, dims[1]] + blocks)
    weight = g.const(_window_weight(channels, kernel_size, g.dtype(self)))
    natural = [(blocks[i] - 1) * stride[i] + dilation[i] * (kernel_size[i] - 1) + 1 - 2 * padding[i] for i in range(2)]
    extra = [output_size[i] - natural[i] for i in range(2)]
    # Overlapping taps sum, exactly what ConvTranspose does; positions past the last block get no tap.
    return g.op("ConvTranspose", grid, weight, kernel_shape_i=kernel_size, dilations_i=dilation, strides_i=stride,
                pads_i=[padding[0], padding[1], padding[0] - extra[0], padding[1] - extra[1]], group_i=channels)


@symbolic("aten::col2im", since=18)
@parse_args("v", "is", "is", "is", "is", "is")
def col2im_18(g, self, output_size, kernel_size, dilation, padding, stride):
    """col2im (F.fold) as Col2Im-18 (input, image_shape, block_shape; dilations, pads, strides). PyTorch's columns
    [N, C * kH * kW, L] are Col2Im's layout (channel-major, the kernel's taps row-major, blocks row-major), and its
    symmetric padding is Col2Im's pads [pH, pW, pH, pW]; overlaps sum in both. The channel count may be dynamic here.
    An unbatched input [C * kH * kW, L] folds as a batch of one."""
    rank = require_rank(g, self)
    batched = self if rank == 3 else unsqueeze(g, self, [0])
    folded = g.op("Col2Im", batched, g.const(np.array(output_size, dtype=np.int64)),
                  g.const(np.array(kernel_size, dtype=np.int64)), dilations_i=dilation, pads_i=padding + padding,
                  strides_i=stride)
    return folded if rank == 3 else squeeze(g, folded, [0])


# -- grids, triangles, diagonals --------------------------------------------------------------------------------
@symbolic("aten::meshgrid")
def meshgrid(g, tensors, indexing=None):
    """meshgrid(tensors, indexing): each input reshaped along its grid axis and broadcast to the grid."""
    indexing = "ij" if indexing is None else str(constant_value(indexing))
    tensors = [reshape(g, t, [-1]) if g.rank(t) == 0 else t for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    sizes = [dim_size(g, t, 0) for t in tensors]
    grid = [None] * len(tensors)
    for t, axis in zip(sizes, axes):
        grid[axis] = t
    outputs = []
    for t, axis in zip(tensors, axes):
        shape = [1] * len(tensors)
        shape[axis] = -1
        outputs.append(expand_to(g, reshape(g, t, shape), grid))
    return outputs


def _triangle_mask(g, x, diagonal, upper: bool):
    """Boolean mask over the last two dims of ``x`` that keeps the lower (or upper) triangle: column - row compared
    with ``diagonal`` (an int, or a 0-d value computed at run time)."""
    dims = known_dims(g, x)
    rows, cols = dims[-2], dims[-1]
    if rows is not None and cols is not None:
        offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]
        if not is_value(diagonal):
            return g.const(offset >= diagonal if upper else offset <= diagonal)
        offset = g.const(offset.astype(np.int64))
    else:
        row_index = unsqueeze(g, arange_indices(g, dim_size(g, x, -2)), [1])
        col_index = unsqueeze(g, arange_indices(g, dim_size(g, x, -1)), [0])
        offset = g.op("Sub", col_index, row_index)
    if not is_value(diagonal):
        diagonal = g.const(diagonal, torch.int64)
    # upper: offset >= diagonal, i.e. not (offset < diagonal); lower: offset <= diagonal, i.e. not (diagonal < offset)
    below = less(g, offset, diagonal) if upper else less(g, diagonal, offset)
    return g.op("Not", below)


def _triangle_by_mask(g, self, diagonal, upper: bool):
    return zero_outside(g, self, _triangle_mask(g, self, _diagonal_offset(g, diagonal), upper))


def _trilu(g, self, diagonal, upper: bool):
    """Trilu (opset 14) takes its diagonal as an input: a run-time one too."""
    diagonal = _diagonal_offset(g, diagonal)
    diagonal = diagonal if is_value(diagonal) else g.const(diagonal, torch.int64)
    return g.op("Trilu", self, diagonal, upper_i=int(upper))


def _diagonal_offset(g, diagonal):
    """tril/triu's diagonal: an int, or a 0-d int64 value where it is computed at run time."""
    if diagonal is None:
        return 0
    if is_constant(diagonal):
        return int(constant_value(diagonal))
    return cast(g, reshape(g, diagonal, []), INT64)


@symbolic("aten::tril", "aten::tril_")
def tril_by_mask(g, self, diagonal=0):
    """tril(diagonal) before opset 14: the input with zeros outside a lower-triangle mask."""
    return _triangle_by_mask(g, self, diagonal, upper=False)


@symbolic("aten::tril", "aten::tril_", since=14)
def tril(g, self, diagonal=0):
    """tril(diagonal) from opset 14: Trilu."""
    return _trilu(g, self, diagonal, upper=False)


@symbolic("aten::triu", "aten::triu_")
def triu_by_mask(g, self, diagonal=0):
    """triu(diagonal) before opset 14: the input with zeros outside an upper-triangle mask."""
    return _triangle_by_mask(g, self, diagonal, upper=True)


@symbolic("aten::triu", "aten::triu_", since=14)
def triu(g, self, diagonal=0):
    """triu(diagonal) from opset 14: Trilu."""
    return _trilu(g, self, diagonal, upper=True)


@symbolic("aten::diagonal")
@parse_args("v", "i", "i", "i")
def diagonal(g, self, offset, dim1, dim2):
    """diagonal(offset, dim1, dim2): the two dims moved last and merged, then Gather of the diagonal positions
    (a strided Slice when their sizes are known only at run time)."""
    rank = require_rank(g, self)
    dim1, dim2 = normalize_dim(dim1, rank), normalize_dim(dim2, rank)
    perm = [i for i in range(rank) if i not in (dim1, dim2)] + [dim1, dim2]
    moved = transpose_perm(g, self, perm)
    rows, cols = known_dims(g, self)[dim1], known_dims(g, self)[dim2]
    if rows is None or cols is None:
        return _diagonal_at_run_time(g, moved, offset)
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    first_row, first_col = max(0, -offset), max(0, offset)
    flat_index = [(first_row + i) * cols + first_col + i for i in range(length)]
    merged = reshape(g, moved, [0] * (rank - 2) + [rows * cols])
    return g.op("Gather", merged, g.const(np.array(flat_index, dtype=np.int64)), axis_i=rank - 2)


def _diagonal_at_run_time(g, moved, offset: int):
    """The ``offset`` diagonal of the last two dims of ``moved``, sizes known only at run time: columns (offset > 0)
    or rows (offset < 0) sliced off so the diagonal starts at [0, 0], rows cut to at most the column count c, then
    every (c + 1)-th element of each flattened matrix, which are exactly its min(rows, c) diagonal elements (Slice
    with run-time bounds and steps: opset 10)."""
    require_opset(g, 10, "diagonal of dims whose sizes are known only at run time needs Slice with run-time steps")
    rank = require_rank(g, moved)
    row_axis, col_axis = rank - 2, rank - 1
    if offset:
        moved = slice_op(g, moved, [col_axis if offset > 0 else row_axis], [abs(offset)], [INT64_MAX])
    cols = dim_size(g, moved, col_axis)
    square = slice_op(g, moved, [row_axis], [0], [cols])
    rows = dim_size(g, square, row_axis)
    flat = reshape(g, square, dims_or_sizes(g, square)[:row_axis] + [size_arith(g, "Mul", rows, cols)])
    return slice_op(g, flat, [row_axis], [0], [INT64_MAX], [size_arith(g, "Add", cols, 1)])


@symbolic("aten::diag")
@parse_args("v", "i")
def diag(g, self, diagonal):
    """diag(x, k): diagonal of a matrix, or a matrix with a vector on its k-th diagonal (Gather from [v, 0])."""
    rank = require_rank(g, self)
    if rank == 2:
        return diagonal_(g, self, diagonal)
    n = known_dims(g, self)[0]
    if n is None:
        raise SymbolicValueError("diag of a vector needs its length to be static")
    size = n + abs(diagonal)
    # Gather from [v..., 0]: index n is the zero slot for every position off the diagonal.
    index = np.full((size, size), n, dtype=np.int64)
    for i in range(n):
        index[i + max(0, -diagonal), i + max(0, diagonal)] = i
    zero = g.const(np.zeros((1,), dtype=dtypes.numpy_from_onnx(g.dtype(self))))
    padded = g.op("Concat", self, zero, axis_i=0)
    return g.op("Gather", padded, g.const(index), axis_i=0)


def diagonal_(g, self, offset):
    """diagonal of dims 0 and 1 (torch.diag of a matrix)."""
    return diagonal(g, self, offset, 0, 1)


# -- broadcast_tensors, atleast_nd, _dim_arange --------------------------------------------------------------------
def _broadcast_size(g, sizes: list):
    """The broadcast of one dimension's sizes (ints, or 0-d values where only known at run time): a size that is
    not 1 wins; between run-time sizes, the one that is not 1."""
    known = [s for s in sizes if not is_value(s) and int(s) != 1]
    if known:
        return known[0]
    pending = [s for s in sizes if is_value(s)]
    if not pending:
        return 1
    result = pending[0]
    for other in pending[1:]:
        result = select(g, equal(g, result, g.const(1, torch.int64)), other, result)
    return result


@symbolic("aten::broadcast_tensors")
def broadcast_tensors(g, tensors):
    """broadcast_tensors(tensors): every tensor expanded to the shape they broadcast to together."""
    tensors = [g.value(t) for t in tensors]
    rank = max(require_rank(g, t) for t in tensors)
    aligned = [[1] * (rank - require_rank(g, t)) + dims_or_sizes(g, t) for t in tensors]
    target = [_broadcast_size(g, list(sizes)) for sizes in zip(*aligned)]
    return [expand_to(g, t, target) for t in tensors]


_ATLEAST_SHAPES = {  # rank of the input -> where its dims go in the result (None: a new dim of size 1)
    1: {0: [None]},
    2: {0: [None, None], 1: [None, 0]},
    3: {0: [None, None, None], 1: [None, 0, None], 2: [0, 1, None]},
}


def _atleast(g, x, rank: int):
    x = g.value(x)
    layout = _ATLEAST_SHAPES[rank].get(require_rank(g, x))
    if layout is None:
        return x
    if not any(axis is not None for axis in layout):
        return reshape(g, x, [1] * rank)
    return unsqueeze(g, x, [i for i, axis in enumerate(layout) if axis is None])


def _atleast_symbolic(rank: int):
    def atleast(g, self):
        """atleast_{rank}d(tensor or list of tensors): each viewed with at least ``rank`` dims (NumPy's layout)."""
        if isinstance(self, (list, tuple)):
            return [_atleast(g, t, rank) for t in self]
        return _atleast(g, self, rank)
    return atleast


for _rank in (1, 2, 3):
    symbolic(f"aten::atleast_{_rank}d")(_atleast_symbolic(_rank))


@symbolic("aten::as_strided")
def as_strided(g, self, size, stride, storage_offset=None):
    """as_strided(size, stride, storage_offset): element [i, j, ...] is storage[offset + i*stride0 + j*stride1 ...].
    The storage is the input's flattened elements only when the input is contiguous, which TorchScript's recorded
    strides must show; sizes, strides and offset must be constants (the element positions are precomputed)."""
    sizes, strides = g.input_layout(0)
    if sizes is None or strides is None or None in sizes or list(strides) != _contiguous_strides(sizes):
        raise unsupported(g.op_kind, g.opset, "as_strided of a tensor not known to be contiguous (its storage "
                                                  "order is not its element order)")
    if not all(is_constant(v) for v in (size, stride, storage_offset)):
        raise unsupported(g.op_kind, g.opset, "as_strided with sizes, strides or offset known only at run time")
    size, stride = [int(s) for s in constant_value(size)], [int(s) for s in constant_value(stride)]
    positions = np.full(size, int(constant_value(storage_offset) or 0), dtype=np.int64)
    for axis, (length, step) in enumerate(zip(size, stride)):
        positions += (np.arange(length, dtype=np.int64) * step).reshape([-1] + [1] * (len(size) - axis - 1))
    return g.op("Gather", reshape(g, self, [-1]), g.const(positions), axis_i=0)


def _contiguous_strides(sizes) -> list[int]:
    strides, step = [], 1
    for length in reversed(list(sizes)):
        strides.insert(0, step)
        step *= max(int(length), 1)
    return strides


@symbolic("aten::broadcast_to")
def broadcast_to(g, self, size):
    """broadcast_to(size): expand's semantics (-1 keeps a dim)."""
    return expand(g, self, size)
