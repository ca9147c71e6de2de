"""Pooling: max, average and their adaptive and global forms."""

from __future__ import annotations

import functools
import re

from exporter.dtypes import INT64
from exporter.lowering.core import reduce_op, require_opset, require_rank, slice_op, squeeze, unsqueeze
from exporter.lowering.pooling import average_pool, per_axis, pool
from exporter.registry import parse_args, symbolic, unsupported


def _spatial(g, input):
    return require_rank(g, input) - 2


def _batched(pool_symbolic):
    """PyTorch pools an unbatched input ([C, *spatial]) as a batch of one; ONNX's pooling ops need the batch axis,
    so such an input gets one and every output loses it again. The op's name says how many axes are spatial."""

    @functools.wraps(pool_symbolic)
    def batched_pool(g, input, *args):
        named = re.search(r"pool(\d)d", g.op_kind)
        if named is None:
            raise ValueError(f"{g.op_kind} does not name its spatial axes (max_pool2d, ...)")
        spatial = int(named.group(1))
        if require_rank(g, input) != spatial + 1:
            return pool_symbolic(g, input, *args)
        outputs = pool_symbolic(g, unsqueeze(g, input, [0]), *args)
        if isinstance(outputs, tuple):
            return tuple(None if output is None else squeeze(g, output, [0]) for output in outputs)
        return squeeze(g, outputs, [0])

    return batched_pool


@symbolic("aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d")
@parse_args("v", "is", "is", "is", "is", "b")
@_batched
def max_pool(g, input, kernel_size, stride, padding, dilation, ceil_mode):
    return pool(g, "MaxPool", input, kernel_size, stride, padding, dilation, ceil_mode)


@symbolic("aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d")
@parse_args("v", "is", "is", "is", "b", "b", "none")
@_batched
def avg_pool(g, input, kernel_size, stride, padding, ceil_mode, count_include_pad=True, divisor_override=None):
    if _has_divisor(g):
        raise unsupported(g.op_kind, g.opset, "divisor_override has no ONNX equivalent")
    return average_pool(g, input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def _has_divisor(g) -> bool:
    return g.input_count >= 7 and g.input_type(6) != "NoneType"


def _adaptive(g, op_type, global_op, input, output_size):
    spatial = _spatial(g, input)
    output_size = per_axis(output_size, spatial)
    if all(o == 1 for o in output_size):
        return g.op(global_op, input)
    dims = g.dims(input)
    if dims is not None and all(isinstance(d, int) for d in dims[2:]) and any(
            d % o for d, o in zip(dims[2:], output_size, strict=True)):
        return _adaptive_by_windows(g, _ADAPTIVE_REDUCTIONS[op_type], input, dims[2:], output_size)
    kernel = _adaptive_kernel(g, input, output_size)
    return g.op(op_type, input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * spatial))


_ADAPTIVE_REDUCTIONS = {"AveragePool": "ReduceMean", "MaxPool": "ReduceMax"}


def _adaptive_by_windows(g, reduction, input, sizes, output_size):
    """Adaptive pooling where the sizes do not divide: output i of an axis of size n pools the input's
    [floor(i * n / out), ceil((i + 1) * n / out)), windows of unequal sizes. A window is a box, and max and mean over
    a box are separable (every row of a box has as many elements), so each axis is pooled in turn: one Slice and one
    reduction per output position, concatenated."""
    for axis, (size, out) in enumerate(zip(sizes, output_size, strict=True), start=2):
        if size == out:
            continue
        windows = [reduce_op(g, reduction, slice_op(g, input, [axis], [i * size // out], [-(-(i + 1) * size // out)]),
                             [axis], True) for i in range(out)]
        input = g.op("Concat", *windows, axis_i=axis)
    return input


def _adaptive_kernel(g, input, output_size):
    """The window (and stride) that pools the static spatial sizes down to ``output_size``: they must divide."""
    dims = g.dims(input)
    if dims is None or any(d is None for d in dims[2:]):
        raise unsupported(g.op_kind, g.opset, "adaptive pooling to a size other than 1 needs static spatial sizes")
    sizes = dims[2:]
    if any(s % o for s, o in zip(sizes, output_size, strict=True)):
        raise unsupported(g.op_kind, g.opset, "adaptive pooling needs input sizes divisible by the output sizes")
    return [s // o for s, o in zip(sizes, output_size, strict=True)]


@symbolic("aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d")
@parse_args("v", "is")
@_batched
def adaptive_avg_pool(g, input, output_size):
    return _adaptive(g, "AveragePool", "GlobalAveragePool", input, output_size)


@symbolic("aten::adaptive_max_pool1d", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d")
@parse_args("v", "is")
@_batched
def adaptive_max_pool(g, input, output_size):
    """(values, indices); the indices only where the model uses them: then the windows must be static, and MaxPool's
    Indices output (opset 8) is made per-plane as for max_pool_with_indices."""
    if not g.output_used(1):
        return _adaptive(g, "MaxPool", "GlobalMaxPool", input, output_size), None
    require_opset(g, 8, "the indices of adaptive max pooling")
    spatial = _spatial(g, input)
    kernel = _adaptive_kernel(g, input, per_axis(output_size, spatial))
    values, indices = g.op("MaxPool", input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * spatial),
                           outputs=2)
    return values, _indices_within_planes(g, input, values, indices)


@symbolic("aten::max_pool1d_with_indices", "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices",
          since=8)
@parse_args("v", "is", "is", "is", "is", "b")
@_batched
def max_pool_with_indices(g, input, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices) of max pooling, from MaxPool's Indices output (opset 8)."""
    values, indices = pool(g, "MaxPool", input, kernel_size, stride, padding, dilation, ceil_mode, outputs=2)
    return values, _indices_within_planes(g, input, values, indices)


def _indices_within_planes(g, input, values, indices):
    """MaxPool's Indices count over the whole N x C x spatial tensor, PyTorch's within each (n, c) plane: subtract
    each plane's first flat index, which a 1x..x1 MaxPool of the input gives."""
    spatial = _spatial(g, input)
    _, positions = g.op("MaxPool", input, kernel_shape_i=[1] * spatial, strides_i=[1] * spatial, outputs=2)
    plane_starts = slice_op(g, positions, list(range(2, 2 + spatial)), [0] * spatial, [1] * spatial)
    values.dtype, indices.dtype = g.dtype(input), INT64
    return g.op("Sub", indices, plane_starts)
