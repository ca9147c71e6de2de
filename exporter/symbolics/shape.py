"""Shape manipulation: size, view/reshape, flatten, expand/repeat, squeeze/unsqueeze, transposes, splitting and
joining (rearrangements of the elements themselves are ``rearrange.py``'s).

Static shapes are baked in as constants; in dynamic exports sizes are computed in the graph (Shape/Gather),
except the dims that ``g.dims`` proves static. Ops that appeared late in ONNX (Expand 8, Trilu 14, circular
padding) are emulated with older ops where the shapes allow it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from exporter import dtypes, ir
from exporter.dtypes import INT64
from exporter.errors import SymbolicValueError
from exporter.lowering.comparison import less, select
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    normalize_dim,
    promote_all,
    require_opset,
    require_rank,
    reshape,
    shape_of,
    squeeze,
    to_int64_list_value,
    unsqueeze,
)
from exporter.lowering.indexing import gather_at, repeat_indices
from exporter.lowering.sequence import (
    concat_from_sequence,
    require_sequences,
    split_to_sequence,
)
from exporter.lowering.shape import (
    dims_or_sizes,
    expand_to,
    expand_to_shape_value,
    known_dims,
    list_output_count,
    size_arith,
    split_at,
    split_sizes,
    squeeze_where_one,
    traced_dim,
    transpose_perm,
    unsqueeze_at,
)
from exporter.registry import parse_args, symbolic, unsupported


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
    """view/reshape: ONNX Reshape (-1 inferred; list entries may be run-time sizes); view(dtype) (a type where the
    size list goes: a ScalarType code) reinterprets the bits."""
    if _is_scalar_type(size):
        return _view_as_type(g, self, dtypes.onnx_from_torch(dtypes.torch_dtype_from_code(int(constant_value(size)))))
    return reshape(g, self, size)


def _is_scalar_type(size) -> bool:
    """Whether view's second argument is view.dtype's ScalarType code rather than a size list: a plain int, as
    torch.export's ``aten.view.dtype`` arrives. TorchScript never holds view.dtype: its tracer cannot record it (an
    internal assert) and scripted code compiles ``x.view(torch.int32)`` to a view of size [3]."""
    return isinstance(size, int)


def _view_as_type(g, self, target: int):
    """view(dtype): BitCast-26, which keeps the shape, so only between types of one element size (PyTorch scales the
    last dimension otherwise); there is no ONNX op that reinterprets bits below opset 26."""
    source = g.dtype(self)
    if source == target:
        return self
    require_opset(g, 26, "view(dtype) reinterprets bits, which takes ONNX's BitCast")
    if source is None or _item_size(source) != _item_size(target):
        raise unsupported(g.op_kind, g.opset, "view(dtype) between types of different element sizes changes the "
                                              "last dimension, which BitCast (same-width types only) cannot")
    out = g.op("BitCast", self, to_i=target)
    out.dtype, out.shape = target, g.shape(self)
    return out


def _item_size(elem_type: int) -> int:
    return dtypes.torch_from_onnx(elem_type).itemsize


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


@symbolic("aten::expand", "aten::broadcast_to")
def expand(g, self, size, implicit=None):
    """expand(size), broadcast_to(size): Expand (Tile below opset 8); -1 keeps a dim."""
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
        count: ir.Value | int = reshape(g, repeats, [])
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
    for s, d in zip(source, destination, strict=True):
        perm[d] = s
    rest = iter(i for i in range(rank) if i not in source)
    perm = [p if p != -1 else next(rest) for p in perm]
    return transpose_perm(g, self, perm)


# -- splitting --------------------------------------------------------------------------------------------------
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
        step: ir.Value | int = split_size
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
