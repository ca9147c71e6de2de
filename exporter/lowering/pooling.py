"""Pooling building blocks: MaxPool and AveragePool windows with PyTorch's padding, dilation and ceil mode.

``dilations`` and ``ceil_mode`` are attributes from opset 10. Before, ceil mode is extra end padding that gives
PyTorch's output sizes in floor mode. ONNX's ceil rule keeps a last window that starts inside the end padding, which
PyTorch drops: max pooling slices it off, average pooling (whose divisor the padding changes) pads instead.
"""

from __future__ import annotations

import math

from exporter.lowering.core import (
    dim_size,
    is_value,
    require_opset,
    require_rank,
    slice_op,
)
from exporter.lowering.shape import pad_op, size_arith
from exporter.registry import unsupported

ATTRIBUTES_OPSET = 10  # dilations, ceil_mode


def per_axis(values, count, default=None) -> list:
    """A pooling argument (one value for every spatial axis, or one each; empty: ``default``) as one per axis."""
    values = list(values) if values else list(default or [])
    return values * count if len(values) == 1 else values


def pool(g, op_type, input, kernel, stride, padding, dilation, ceil_mode, **extra_attrs):
    """``op_type`` (MaxPool, AveragePool) over PyTorch's window arguments; ``extra_attrs`` go to the op (``outputs=2``:
    MaxPool's values and indices, both returned)."""
    kernel, stride, padding = _window(g, input, kernel, stride, padding)
    dilation = per_axis(dilation, len(kernel), [1])
    pads = padding + padding
    attrs = dict(kernel_shape_i=kernel, strides_i=stride, **extra_attrs)
    if any(d != 1 for d in dilation):
        require_opset(g, ATTRIBUTES_OPSET, "dilated pooling")
        attrs["dilations_i"] = dilation
    if not ceil_mode:
        return g.op(op_type, input, pads_i=pads, **attrs)
    if g.opset < ATTRIBUTES_OPSET:
        extra = _ceil_mode_pads(g, input, kernel, stride, padding, dilation)
        return g.op(op_type, input, pads_i=padding + [p + e for p, e in zip(padding, extra, strict=True)], **attrs)
    pooled = g.op(op_type, input, pads_i=pads, ceil_mode_i=1, **attrs)
    return _drop_windows_starting_in_end_padding(g, input, pooled, kernel, stride, padding, dilation)


def _drop_windows_starting_in_end_padding(g, input, pooled, kernel, stride, padding, dilation):
    """ONNX's ceil-mode count, ceil((size + 2 * pad - effective) / stride) + 1, keeps a last window that starts inside
    the end padding; PyTorch keeps only windows that start before it: ceil((size + pad) / stride) of them. Slicing
    every output to that count (Slice clamps, so it is a no-op where ONNX has no extra window) drops exactly that
    window. Extra end padding would do the same, but with dilation it can reach the kernel size, which ONNX Runtime
    rejects ("Pad should be smaller than kernel"); slicing also works for run-time sizes."""
    dims = g.dims(input)
    axes, ends = [], []
    for axis, (k, s, p, d) in enumerate(zip(kernel, stride, padding, dilation, strict=True), start=2):
        effective = d * (k - 1) + 1
        if p + s <= effective:
            continue  # the last window always starts before the end padding
        size = dims[axis] if dims is not None and dims[axis] is not None else dim_size(g, input, axis)
        end = size_arith(g, "Div", size_arith(g, "Add", size, p + s - 1), s)
        if not is_value(end) and end >= math.ceil((size + 2 * p - effective) / s) + 1:
            continue
        axes.append(axis)
        ends.append(end)
    if not axes:
        return pooled
    outputs = pooled if isinstance(pooled, tuple) else (pooled,)
    sliced = tuple(slice_op(g, out, axes, [0] * len(axes), ends) for out in outputs)
    return sliced if isinstance(pooled, tuple) else sliced[0]


def average_pool(g, input, kernel, stride, padding, ceil_mode, count_include_pad):
    """AveragePool with PyTorch's arguments (average pooling has no dilation)."""
    kernel, stride, padding = _window(g, input, kernel, stride, padding)
    undilated = [1] * len(kernel)
    if ceil_mode and (g.opset < ATTRIBUTES_OPSET or _onnx_ceil_keeps_extra_window(g, input, kernel, stride, padding,
                                                                                  undilated)):
        return _average_pool_ceil_by_padding(g, input, kernel, stride, padding, count_include_pad)
    return pool(g, "AveragePool", input, kernel, stride, padding, undilated, ceil_mode,
                count_include_pad_i=int(count_include_pad))


def _window(g, input, kernel, stride, padding):
    """(kernel, stride, padding), one per spatial axis."""
    spatial = require_rank(g, input) - 2
    kernel = per_axis(kernel, spatial)
    return kernel, per_axis(stride, spatial, kernel), per_axis(padding, spatial, [0])


def _average_pool_ceil_by_padding(g, input, kernel, stride, padding, count_include_pad):
    """Ceil-mode average pooling before AveragePool had ``ceil_mode`` (opset 10), or where ONNX's ceil rule would
    keep a window PyTorch drops.

    The ceil-mode windows come from extra end padding (see ``_ceil_mode_pads``). PyTorch divides by the window's
    overlap with the input plus its declared padding, never the ceil overflow; so the overflow is padding that
    AveragePool must not count (count_include_pad=0), and a counted declared padding is made real zeros first.
    """
    spatial = len(kernel)
    extra = _ceil_mode_pads(g, input, kernel, stride, padding, [1] * spatial)
    if count_include_pad and any(padding):
        input = pad_op(g, input, [p for p in reversed(padding) for _ in (0, 1)], "constant")
        padding = [0] * spatial
    return g.op("AveragePool", input, kernel_shape_i=kernel, strides_i=stride, count_include_pad_i=0,
                pads_i=padding + [p + e for p, e in zip(padding, extra, strict=True)])


def _ceil_mode_pads(g, input, kernel, stride, pads, dilation):
    """Extra end padding that makes floor-mode pooling produce ceil-mode output sizes."""
    dims = g.dims(input)
    if dims is None or any(d is None for d in dims[2:]):
        raise unsupported(g.op_kind, g.opset, "ceil_mode=True with dynamic spatial sizes needs opset >= 10")
    extra = []
    for size, k, s, p, d in zip(dims[2:], kernel, stride, pads, dilation, strict=True):
        effective = d * (k - 1) + 1
        ceil_out = math.ceil((size + 2 * p - effective) / s) + 1
        if (ceil_out - 1) * s >= size + p:
            ceil_out -= 1
        # The least end padding whose floor-mode count reaches ceil_out. With PyTorch's padding (at most half the
        # kernel) the end pad stays below the kernel, as ONNX Runtime requires of pooling pads.
        extra.append(max(0, (ceil_out - 1) * s + effective - (size + 2 * p)))
    return extra


def _onnx_ceil_keeps_extra_window(g, input, kernel, stride, padding, dilation) -> bool:
    """ONNX's ceil-mode output size, ceil((size + 2 * pad - effective) / stride) + 1, keeps a last window that starts
    inside the end padding, which PyTorch drops; ONNX's shape inference then disagrees with PyTorch's sizes. True
    when the static sizes hit that case (end padding then gives PyTorch's sizes exactly)."""
    dims = g.dims(input)
    if dims is None or any(d is None for d in dims[2:]):
        return False
    for size, k, s, p, d in zip(dims[2:], kernel, stride, padding, dilation, strict=True):
        onnx_out = math.ceil((size + 2 * p - (d * (k - 1) + 1)) / s) + 1
        if (onnx_out - 1) * s >= size + p:
            return True
    return False
