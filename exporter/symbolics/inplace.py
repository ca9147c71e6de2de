"""In-place assignment, once the mutation pass (exporter/mutation.py) has made it functional.

``data[1] = new_data`` arrives as ``v = select(data, 0, 1); v2 = copy_(v, new_data);
data2 = select_scatter(data, v2, 0, 1)``. ``copy_`` gives the new content of the view; ``select_scatter`` and
``slice_scatter`` write a view's new content back into its base:

* positions known at export time (a constant index or slice over a dim of known size) at every opset: the
  base and the new content are concatenated and one Gather with precomputed indices picks, per position,
  the old element or the new one;
* a slice with step 1 whose bounds or dim size are only known at run time: the untouched parts before and
  after the slice are cut out (Slice) and concatenated around the new content (run-time bounds need
  opset 10, where Slice takes its bounds as inputs);
* a single run-time index over a dim of known size, at every opset: the same Gather with indices computed in
  the graph.
"""

from __future__ import annotations

import numpy as np
import torch

from exporter.dtypes import INT64
from exporter.lowering.comparison import less
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
    unsqueeze,
)
from exporter.lowering.shape import arange_indices, expand_to_shape_value
from exporter.registry import symbolic

_INT64_MAX = 2**63 - 1


def _static(x) -> bool:
    return x is None or not is_value(x) or is_constant(x)


@symbolic("aten::copy_", "aten::copy")
def copy_(g, self, src, non_blocking=None):
    """``self.copy_(src)``: ``src`` cast to ``self``'s type and broadcast to its shape."""

    target = g.static_dims(self)
    src = g.value(src)
    if target is None and is_constant(src):
        # A trace records the broadcast of a constant to the view's traced shape (``x[:, n:] = torch.tensor([1, 2,
        # 3])`` expands the row to the traced size of ``x[:, n:]``), and the converter folds it. Where the view's
        # shape is known only at run time, broadcast the constant's distinct content instead: the same result at the
        # traced shape, and the assignment's meaning at the others.
        src = g.const(_distinct_content(src.const), src.dtype)
    value = cast(g, src, g.dtype(self))
    if target is not None and g.static_dims(value) == target:
        return value
    return expand_to_shape_value(g, value, shape_of(g, self))


def _distinct_content(array: np.ndarray) -> np.ndarray:
    """``array`` with every axis along which it repeats one slice reduced to size 1 (it broadcasts back to itself)."""
    for axis in range(array.ndim):
        if array.shape[axis] > 1 and np.array_equal(array, np.broadcast_to(array.take([0], axis=axis), array.shape)):
            array = array.take([0], axis=axis)
    return array


@symbolic("aten::set_")
def set_(g, self, source=None):
    """``self.set_(source)``: ``self`` becomes ``source`` (its storage, shape and strides; PyTorch requires the
    same dtype); ``self.set_()`` leaves an empty tensor of ``self``'s type."""
    if source is None:
        return g.const(np.zeros((0,), dtype=np.float32), g.dtype(self))
    return g.value(source)


@symbolic("aten::select_scatter")
def select_scatter(g, self, src, dim, index):
    """``self`` with ``self.select(dim, index)`` replaced by ``src``."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    src = unsqueeze(g, cast(g, g.value(src), g.dtype(self)), [dim])
    size = g.dims(self)[dim]
    if _static(index):
        index = int(constant_value(index))
        if size is not None:
            return _gather_scatter(g, self, src, dim, size, [index % size])
        before = slice_op(g, self, [dim], [0], [index])
        if index == -1:
            return g.op("Concat", before, src, axis_i=dim)
        after = slice_op(g, self, [dim], [index + 1], [_INT64_MAX])
        return g.op("Concat", before, src, after, axis_i=dim)
    if size is not None:
        return _gather_scatter_at(g, self, src, dim, size, index)
    require_opset(g, 10, "assignment at a position computed at run time")
    position = g.op("Mod", cast(g, index, INT64), g.value(dim_size(g, self, dim), INT64), fmod_i=0)
    after_start = g.op("Add", position, g.const(1, torch.int64))
    before = slice_op(g, self, [dim], [0], [position])
    after = slice_op(g, self, [dim], [after_start], [_INT64_MAX])
    return g.op("Concat", before, src, after, axis_i=dim)


@symbolic("aten::slice_scatter")
def slice_scatter(g, self, src, dim=0, start=None, end=None, step=1):
    """``self`` with ``self[start:end:step]`` along ``dim`` replaced by ``src``."""
    rank = require_rank(g, self)
    dim = normalize_dim(int(constant_value(dim)), rank)
    src = cast(g, g.value(src), g.dtype(self))
    step = 1 if step is None else int(constant_value(step)) if _static(step) else step
    size = g.dims(self)[dim]
    if size is not None and _static(start) and _static(end) and not is_value(step):
        bounds = slice(_optional_int(start), _optional_int(end), step)
        return _gather_scatter(g, self, src, dim, size, list(range(size))[bounds])
    if is_value(step) or step != 1:
        return _strided_scatter_at_run_time(g, self, src, dim, start, end, step)
    start = 0 if start is None else start
    end = _INT64_MAX if end is None else end
    pieces = [slice_op(g, self, [dim], [0], [start]), src]
    if not (_static(end) and int(constant_value(end)) >= _INT64_MAX):
        pieces.append(slice_op(g, self, [dim], [end], [_INT64_MAX]))
    return g.op("Concat", *pieces, axis_i=dim)


def _strided_scatter_at_run_time(g, self, src, dim: int, start, end, step):
    """``self[start:end:step] = src`` along ``dim`` where the positions are known only at run time (a run-time step,
    bounds or dim size): Gather over Concat(self, src) with, per position p, ``p`` or, where p is one of the slice's
    positions, ``n + (p - start) // step`` (n the dim size). The bounds are wrapped and clamped as torch does (a
    negative one counts from the end); integer math throughout, exact at every opset where the dim size is known,
    from opset 9 where it is not (a run-time index range)."""
    n = dim_size(g, self, dim)
    positions = arange_indices(g, n)
    n = cast(g, g.value(n), INT64)
    zero = g.const(0, torch.int64)

    def bound(value, default):
        value = g.const(default, torch.int64) if value is None else cast(g, g.value(value), INT64)
        value = reshape(g, value, [])
        wrapped = g.op("Add", value, g.op("Mul", n, cast(g, less(g, value, zero), INT64)))  # negative: from the end
        return g.op("Mul", wrapped, cast(g, g.op("Not", less(g, wrapped, zero)), INT64))  # still negative: 0

    first, stop = bound(start, 0), bound(end, _INT64_MAX)
    step = reshape(g, cast(g, g.value(step), INT64), [])
    offset = g.op("Sub", positions, first)
    quotient = g.op("Div", offset, step)
    on_step = g.op("Equal", g.op("Sub", offset, g.op("Mul", quotient, step)), zero)
    inside = g.op("And", g.op("Not", less(g, positions, first)), less(g, positions, stop))
    hit = cast(g, g.op("And", inside, on_step), INT64)
    order = g.op("Add", positions, g.op("Mul", hit, g.op("Sub", g.op("Add", n, quotient), positions)))
    out = g.op("Gather", g.op("Concat", g.value(self), src, axis_i=dim), order, axis_i=dim)
    out.shape = g.shape(self)
    return out


def _optional_int(x):
    return None if x is None else int(constant_value(x))


def _gather_scatter(g, self, src, dim: int, size: int, positions: list[int]):
    """Positions ``positions`` of ``self`` along ``dim`` taken from ``src``, the rest kept: Gather over Concat."""
    if not positions:
        return self
    order = np.arange(size, dtype=np.int64)
    order[positions] = size + np.arange(len(positions), dtype=np.int64)
    if list(order) == list(range(size, 2 * size)):
        return src
    joined = g.op("Concat", g.value(self), src, axis_i=dim)
    out = g.op("Gather", joined, g.const(order), axis_i=dim)
    out.shape = g.shape(self)
    return out


def _gather_scatter_at(g, self, src, dim: int, size: int, index):
    """One run-time position along a dim of known size, at every opset: Gather over Concat(self, src) with the
    index vector ``p + hit(p) * (size - p)``, which points the hit position at ``src`` (integer math is exact).

    Mod (opset 10) is not needed to wrap a negative index: each position matches both ``p`` and ``p - size``.
    """
    positions = np.arange(size, dtype=np.int64)
    index = cast(g, index, INT64)
    hit = g.op("Or", g.op("Equal", g.const(positions), index), g.op("Equal", g.const(positions - size), index))
    jump = g.op("Mul", cast(g, hit, INT64), g.const(size - positions))
    order = g.op("Add", g.const(positions), jump)
    out = g.op("Gather", g.op("Concat", g.value(self), src, axis_i=dim), order, axis_i=dim)
    out.shape = g.shape(self)
    return out
