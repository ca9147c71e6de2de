"""Pooling: max, average and their adaptive and global forms."""

from __future__ import annotations

import functools
import math
import re

from exporter.lowering.core import (
    INT64,
    reduce_op,
    require_rank,
    slice_op,
    squeeze,
    unsqueeze,
)
from exporter.lowering.shape import pad_op
from exporter.registry import parse_args, symbolic, unsupported


def _spatial(g, input):
    return require_rank(g, input) - 2


def _batched(pool_symbolic):
    """PyTorch pools an unbatched input ([C, *spatial]) as a batch of one; ONNX's pooling ops need the batch axis,
    so such an input gets one and every output loses it again. The op's name says how many axes are spatial."""

    @functools.wraps(pool_symbolic)
    def pool(g, input, *args):
        spatial = int(re.search(r"pool(\d)d", g.node.kind()).group(1))
        if require_rank(g, input) != spatial + 1:
            return pool_symbolic(g, input, *args)
        outputs = pool_symbolic(g, unsqueeze(g, input, [0]), *args)
        if isinstance(outputs, tuple):
            return tuple(None if output is None else squeeze(g, output, [0]) for output in outputs)
        return squeeze(g, outputs, [0])

    return pool


def _expand(values, count, default=None):
    values = list(values) if values else list(default or [])
    return values * count if len(values) == 1 else values


def _ceil_mode_pads(g, input, kernel, stride, pads, dilation):
    """Extra end padding that makes floor-mode pooling produce ceil-mode output sizes (opsets < 10)."""
    dims = g.dims(input)
    if dims is None or any(d is None for d in dims[2:]):
        raise unsupported(g.node.kind(), g.opset, "ceil_mode=True with dynamic spatial sizes needs opset >= 10")
    spatial = dims[2:]
    extra = []
    for size, k, s, p, d in zip(spatial, kernel, stride, pads, dilation):
        effective = d * (k - 1) + 1
        ceil_out = math.ceil((size + 2 * p - effective) / s) + 1
        if (ceil_out - 1) * s >= size + p:
            ceil_out -= 1
        # The least end padding whose floor-mode count reaches ceil_out (more could make a pad >= the kernel,
        # which ONNX Runtime rejects).
        extra.append(max(0, (ceil_out - 1) * s + effective - (size + 2 * p)))
    return extra


def _onnx_ceil_keeps_extra_window(g, input, kernel, stride, padding, dilation) -> bool:
    """ONNX's ceil-mode output size, ceil((size + 2 * pad - effective) / stride) + 1, keeps a last window that starts
    inside the end padding, which PyTorch drops; ONNX's shape inference then disagrees with PyTorch's sizes. True
    when the static sizes hit that case (end padding then gives PyTorch's sizes exactly)."""
    dims = g.dims(input)
    if dims is None or any(d is None for d in dims[2:]):
        return False
    for size, k, s, p, d in zip(dims[2:], kernel, stride, padding, dilation):
        onnx_out = math.ceil((size + 2 * p - (d * (k - 1) + 1)) / s) + 1
        if (onnx_out - 1) * s >= size + p:
            return True
    return False


def _pool(g, op_type, input, kernel, stride, padding, dilation, ceil_mode, **extra_attrs):
    spatial = _spatial(g, input)
    kernel = _expand(kernel, spatial)
    stride = _expand(stride, spatial, kernel)
    padding = _expand(padding, spatial, [0])
    dilation = _expand(dilation, spatial, [1])
    pads = padding + padding
    attrs = dict(kernel_shape_i=kernel, strides_i=stride, **extra_attrs)
    if any(d != 1 for d in dilation):
        if g.opset < 10:
            raise unsupported(g.node.kind(), g.opset, "dilated pooling needs opset >= 10")
        attrs["dilations_i"] = dilation
    if ceil_mode:
        if g.opset >= 10 and not _onnx_ceil_keeps_extra_window(g, input, kernel, stride, padding, dilation):
            attrs["ceil_mode_i"] = 1
        else:
            extra = _ceil_mode_pads(g, input, kernel, stride, padding, dilation)
            pads = padding + [p + e for p, e in zip(padding, extra)]
            if any(pad >= k for pad, k in zip(pads[spatial:], kernel)):
                raise unsupported(g.node.kind(), g.opset, "ceil_mode=True here needs end padding as large as the "
                                                          "kernel, which ONNX Runtime rejects")
    return g.op(op_type, input, pads_i=pads, **attrs)


@symbolic("aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d")
@parse_args("v", "is", "is", "is", "is", "b")
@_batched
def max_pool(g, input, kernel_size, stride, padding, dilation, ceil_mode):
    return _pool(g, "MaxPool", input, kernel_size, stride, padding, dilation, ceil_mode)


@symbolic("aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d")
@parse_args("v", "is", "is", "is", "b", "b", "none")
@_batched
def avg_pool(g, input, kernel_size, stride, padding, ceil_mode, count_include_pad=True, divisor_override=None):
    if _has_divisor(g):
        raise unsupported(g.node.kind(), g.opset, "divisor_override has no ONNX equivalent")
    if ceil_mode and (g.opset < 10 or _avg_ceil_keeps_extra_window(g, input, kernel_size, stride, padding)):
        return _avg_pool_ceil_by_padding(g, input, kernel_size, stride, padding, count_include_pad)
    return _pool(g, "AveragePool", input, kernel_size, stride, padding, [1], ceil_mode,
                 count_include_pad_i=int(count_include_pad))


def _avg_ceil_keeps_extra_window(g, input, kernel_size, stride, padding) -> bool:
    spatial = _spatial(g, input)
    kernel = _expand(kernel_size, spatial)
    return _onnx_ceil_keeps_extra_window(g, input, kernel, _expand(stride, spatial, kernel),
                                         _expand(padding, spatial, [0]), [1] * spatial)


def _avg_pool_ceil_by_padding(g, input, kernel_size, stride, padding, count_include_pad):
    """Ceil-mode average pooling before AveragePool had ``ceil_mode`` (opset 10), or where ONNX's ceil rule would
    keep a window PyTorch drops.

    The ceil-mode windows come from extra end padding (see ``_ceil_mode_pads``). PyTorch divides by the window's
    overlap with the input plus its declared padding, never the ceil overflow; so the overflow is padding that
    AveragePool must not count (count_include_pad=0), and a counted declared padding is made real zeros first.
    """
    spatial = _spatial(g, input)
    kernel = _expand(kernel_size, spatial)
    stride = _expand(stride, spatial, kernel)
    padding = _expand(padding, spatial, [0])
    extra = _ceil_mode_pads(g, input, kernel, stride, padding, [1] * spatial)
    if count_include_pad and any(padding):
        input = pad_op(g, input, [p for p in reversed(padding) for _ in (0, 1)], "constant")
        padding = [0] * spatial
    return g.op("AveragePool", input, kernel_shape_i=kernel, strides_i=stride, count_include_pad_i=0,
                pads_i=padding + [p + e for p, e in zip(padding, extra)])


def _has_divisor(g) -> bool:
    inputs = list(g.node.inputs())
    if len(inputs) < 7:
        return False
    return inputs[6].type().kind() != "NoneType"


def _adaptive(g, op_type, global_op, input, output_size):
    spatial = _spatial(g, input)
    output_size = _expand(output_size, spatial)
    if all(o == 1 for o in output_size):
        return g.op(global_op, input)
    dims = g.dims(input)
    if dims is not None and all(isinstance(d, int) for d in dims[2:]) and any(
            d % o for d, o in zip(dims[2:], output_size)):
        return _adaptive_by_windows(g, _ADAPTIVE_REDUCTIONS[op_type], input, dims[2:], output_size)
    kernel = _adaptive_kernel(g, input, output_size)
    return g.op(op_type, input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * spatial))


_ADAPTIVE_REDUCTIONS = {"AveragePool": "ReduceMean", "MaxPool": "ReduceMax"}


def _adaptive_by_windows(g, reduction, input, sizes, output_size):
    """Adaptive pooling where the sizes do not divide: output i of an axis of size n pools the input's
    [floor(i * n / out), ceil((i + 1) * n / out)), windows of unequal sizes. A window is a box, and max and mean over
    a box are separable (every row of a box has as many elements), so each axis is pooled in turn: one Slice and one
    reduction per output position, concatenated."""
    for axis, (size, out) in enumerate(zip(sizes, output_size), start=2):
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
        raise unsupported(g.node.kind(), g.opset, "adaptive pooling to a size other than 1 needs static spatial sizes")
    sizes = dims[2:]
    if any(s % o for s, o in zip(sizes, output_size)):
        raise unsupported(g.node.kind(), g.opset, "adaptive pooling needs input sizes divisible by the output sizes")
    return [s // o for s, o in zip(sizes, output_size)]


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
    if not list(g.node.outputs())[1].uses():
        return _adaptive(g, "MaxPool", "GlobalMaxPool", input, output_size), None
    if g.opset < 8:
        raise unsupported(g.node.kind(), g.opset, "the indices of adaptive max pooling: needs opset >= 8")
    spatial = _spatial(g, input)
    kernel = _adaptive_kernel(g, input, _expand(output_size, spatial))
    values, indices = g.op("MaxPool", input, kernel_shape_i=kernel, strides_i=kernel, pads_i=[0] * (2 * spatial),
                           outputs=2)
    return values, _indices_within_planes(g, input, values, indices)


@symbolic("aten::max_pool1d_with_indices", "aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices",
          since=8)
@parse_args("v", "is", "is", "is", "is", "b")
@_batched
def max_pool_with_indices(g, input, kernel_size, stride, padding, dilation, ceil_mode):
    """(values, indices) of max pooling, from MaxPool's Indices output (opset 8)."""
    values, indices = _pool(g, "MaxPool", input, kernel_size, stride, padding, dilation, ceil_mode, outputs=2)
    return values, _indices_within_planes(g, input, values, indices)


def _indices_within_planes(g, input, values, indices):
    """MaxPool's Indices count over the whole N x C x spatial tensor, PyTorch's within each (n, c) plane: subtract
    each plane's first flat index, which a 1x..x1 MaxPool of the input gives."""
    spatial = _spatial(g, input)
    _, positions = g.op("MaxPool", input, kernel_shape_i=[1] * spatial, strides_i=[1] * spatial, outputs=2)
    plane_starts = slice_op(g, positions, list(range(2, 2 + spatial)), [0] * spatial, [1] * spatial)
    values.dtype, indices.dtype = g.dtype(input), INT64
    return g.op("Sub", indices, plane_starts)
