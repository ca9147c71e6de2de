"""Rearrangements of a tensor's elements: narrow, flips and rolls, padding, pixel/channel shuffles, sliding windows
(unfold, im2col, col2im), meshgrid, tril/triu, diagonals and as_strided.

Static shapes are baked in as constants; in dynamic exports sizes are computed in the graph (Shape/Gather),
except the dims that ``g.dims`` proves static. Ops that appeared late in ONNX (Trilu 14, circular padding, Col2Im 18)
are emulated with older ops where the shapes allow it.
"""

from __future__ import annotations

import numpy as np
import torch

from exporter import dtypes
from exporter.dtypes import INT64
from exporter.errors import SymbolicValueError
from exporter.lowering.comparison import equal, less, select
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    normalize_dim,
    require_opset,
    require_rank,
    reshape,
    shape_of,
    slice_op,
    squeeze,
    unsqueeze,
)
from exporter.lowering.runtime import DEPTH_TO_SPACE_INTEGERS, applies
from exporter.lowering.shape import (
    INT64_MAX,
    arange_indices,
    circular_pad,
    dims_or_sizes,
    expand_to,
    known_dims,
    pad_op,
    reshape_to,
    size_arith,
    split_at,
    traced_dim,
    transpose_perm,
    zero_outside,
)
from exporter.registry import parse_args, symbolic, unsupported


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
    for shift, d in zip(shifts, dims, strict=True):
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
    for t, axis in zip(sizes, axes, strict=True):
        grid[axis] = t
    outputs = []
    for t, axis in zip(tensors, axes, strict=True):
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
    target = [_broadcast_size(g, list(sizes)) for sizes in zip(*aligned, strict=True)]
    return [expand_to(g, t, target) for t in tensors]


_ATLEAST_SHAPES: dict[int, dict[int, list[int | None]]] = {  # rank of the input -> where its dims go in the result (None: a new dim of size 1)
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
    """as_strided(size, stride, storage_offset): element [i, j, ...] is storage[offset + i*stride0 + ...], the offset
    from the storage's start. The graph holds the input's elements, not its storage: a Gather of the flattened input,
    each storage position read from the element the recorded sizes and strides put there (a non-contiguous view's
    own layout where shapes are static: Longformer's sliding-window chunks). Refused where that is not known: no
    recorded strides, a layout dynamic axes change, a position outside the input, an explicit offset where the
    input's own is unknown. Sizes, strides and offset are constants (the positions are precomputed)."""
    sizes, strides = g.input_layout(0)
    if sizes is None or strides is None or None in sizes or None in strides:
        raise unsupported(g.op_kind, g.opset, "as_strided of a tensor whose strides the capture did not record "
                                              "(its storage order is not known)")
    if not all(is_constant(v) for v in (size, stride, storage_offset)):
        raise unsupported(g.op_kind, g.opset, "as_strided with sizes, strides or offset known only at run time")
    sizes, strides = [int(n) for n in sizes], [int(s) for s in strides]
    size, stride = [int(s) for s in constant_value(size)], [int(s) for s in constant_value(stride)]
    start = 0  # from the input's own first element
    if constant_value(storage_offset) is not None:
        own = _storage_offset(g, self)
        if own is None:
            raise unsupported(g.op_kind, g.opset, "as_strided with a storage offset, of a tensor whose own offset "
                                                  "in its storage is not known (a view of another tensor)")
        start = int(constant_value(storage_offset)) - own
    positions = np.full(size, start, dtype=np.int64)
    for axis, (length, step) in enumerate(zip(size, stride, strict=True)):
        positions += (np.arange(length, dtype=np.int64) * step).reshape([-1] + [1] * (len(size) - axis - 1))
    if not g.static_shapes and not (strides == _contiguous_strides(sizes) and _contiguous_at_any_size(g, self)):
        raise unsupported(g.op_kind, g.opset, "as_strided in an export with dynamic axes, of a tensor whose layout may "
                                              "change with the sizes (only a graph input or a contiguous() result is "
                                              "known to stay contiguous)")
    elements = _element_at(sizes, strides, positions, unbounded=not g.static_shapes)
    if elements is None:
        raise unsupported(g.op_kind, g.opset, "as_strided reading storage outside its input (a view of a larger "
                                              "tensor): the graph holds the input's elements only")
    return g.op("Gather", reshape(g, self, [-1]), g.const(elements), axis_i=0)


def _is_caller_input(g, x) -> bool:
    """Whether ``x`` is one of the caller's inputs of the main graph (not a parameter, nor a subgraph's input)."""
    return (is_value(x) and x.producer is None and not x.is_param and x.const is None and g.graph.parent is None
            and any(v is x for v in g.graph.inputs))


def _contiguous_at_any_size(g, self) -> bool:
    """Whether the input is contiguous whatever its sizes: a caller's input (ONNX Runtime is fed contiguous arrays,
    and the trace runs on a copy of each) or what ``contiguous()`` returns."""
    return _is_caller_input(g, self) or g.input_producer(0)[0] == "aten::contiguous"


def _storage_offset(g, self) -> int | None:
    """Where the input starts in its storage: what the capture recorded, else 0 for one of the caller's inputs (the
    trace runs on a copy of each, as ONNX Runtime is fed arrays of their own); None where unknown."""
    recorded = g.input_storage_offset(0)
    if recorded is not None:
        return recorded
    return 0 if _is_caller_input(g, self) else None


def _element_at(sizes: list[int], strides: list[int], positions: np.ndarray, unbounded: bool) -> np.ndarray | None:
    """The flat index of the input element at each storage position (relative to the input's first element), for an
    input of these sizes and strides; None where a position holds none of its elements. ``unbounded``: a contiguous
    input whose length is known only at run time, whose flat indices the positions are as they stand."""
    if unbounded:
        return positions if not positions.size or positions.min() >= 0 else None
    count = int(np.prod(sizes))
    if count == 0:
        return positions if not positions.size else None
    if strides == _contiguous_strides(sizes):
        return positions if not positions.size or (positions.min() >= 0 and positions.max() < count) else None
    held = np.zeros(sizes, dtype=np.int64)  # the storage position of each element, in element order
    for axis, (length, step) in enumerate(zip(sizes, strides, strict=True)):
        held += (np.arange(length, dtype=np.int64) * step).reshape([-1] + [1] * (len(sizes) - axis - 1))
    held = held.reshape(-1)
    order = np.argsort(held, kind="stable")  # elements sharing a position (a stride of 0) hold the same value
    where = np.searchsorted(held[order], positions).clip(max=count - 1)
    found = held[order][where] == positions
    return order[where] if bool(found.all()) else None


def _contiguous_strides(sizes) -> list[int]:
    strides: list[int] = []
    step = 1
    for length in reversed(list(sizes)):
        strides.insert(0, step)
        step *= max(int(length), 1)
    return strides
