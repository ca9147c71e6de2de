"""Shape building blocks: size arithmetic on ints or int64 graph values, known dims, broadcasting, reshapes and
expands (Expand: opset 8), splits (Split takes its sizes as an attribute before opset 13, as an input from 13),
zeroing outside a mask (Where: opset 9), permutations, index ranges (Range: opset 11, a constant before) and
their comparisons (Less on int64: opset 9), padding (Pad takes its pads as an attribute before opset 11, as inputs
from 11; circular padding from Slices and Concat, Pad-19 mode 'wrap' from 19)."""

from __future__ import annotations

import operator

import numpy as np
import torch
from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import FLOAT, INT64
from exporter.errors import SymbolicValueError
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
    to_int64_list_value,
    unsqueeze,
)
from exporter.lowering.runtime import CIRCULAR_PAD_BFLOAT16_BY_SLICES, applies
from exporter.registry import unsupported

INT64_MAX = 2**63 - 1


# -- integer arithmetic on sizes that are Python ints or 0-d int64 graph values --------------------------------
_SIZE_OPS = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "Div": operator.floordiv}


def size_arith(g, op_type: str, a, b):
    """``a <op> b`` for sizes: folded in Python when both are ints, else an int64 node (Add, Sub, Mul, Div)."""
    if not is_value(a) and not is_value(b):
        a, b = int(constant_value(a)), int(constant_value(b))
        return _SIZE_OPS[op_type](a, b)
    out = g.op(op_type, cast(g, a, INT64), cast(g, b, INT64))
    out.shape = ()
    return out


def known_dims(g, x) -> list:
    """Per-dim sizes that may be baked in (ints), None elsewhere; only the rank is needed when shape inference
    of a dynamic export knows nothing about ``x``."""
    dims = g.dims(x)
    return list(dims) if dims is not None else [None] * require_rank(g, x)


def dims_or_sizes(g, x) -> list:
    """Per-dim sizes of ``x``: ints where static, 0-d int64 values where not."""
    dims = known_dims(g, x)
    return [d if d is not None else dim_size(g, x, i) for i, d in enumerate(dims)]


def broadcast_shape(*shapes) -> tuple | None:
    """numpy broadcasting of shapes whose dims may be None (unknown); None when a rank is unknown."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out: list[int | None] = []
    for dims in zip(*padded, strict=True):
        known = {d for d in dims if isinstance(d, int) and d != 1}
        if any(not isinstance(d, int) for d in dims) and not known:
            out.append(None)
        else:
            out.append(known.pop() if known else 1)
    return tuple(out)


def typed(value, shape):
    """Record ``shape`` on a freshly built value (its rank is what later symbolics need)."""
    value.shape = None if shape is None else tuple(shape)
    return value


def reshape_to(g, x, sizes: list):
    """Reshape to ``sizes`` (ints, -1, 0 or 0-d values), resolving -1 and 0 when ``x``'s shape is static, so the
    result keeps a fully known shape (the static-shape emulations below opset 11 need it)."""
    dims = g.static_dims(x)
    if dims is not None and all(not is_value(s) for s in sizes):
        sizes = [dims[i] if int(constant_value(s)) == 0 else int(constant_value(s)) for i, s in enumerate(sizes)]
        emitted = list(sizes)
        if -1 in sizes:
            inferred = sizes.index(-1)
            known = int(np.prod([s for s in sizes if s != -1], dtype=np.int64))
            sizes[inferred] = int(np.prod(dims, dtype=np.int64)) // known if known else 0
            if sizes[inferred]:  # a 0 stays -1: Reshape reads a 0 as "copy the input's dim" (an empty tensor's)
                emitted[inferred] = sizes[inferred]
        return typed(reshape(g, x, emitted), sizes)
    return typed(reshape(g, x, sizes), [s if not is_value(s) and int(constant_value(s)) > 0 else None for s in sizes])


def reshape_like(g, x, like):
    """``x`` reshaped to ``like``'s shape (read at run time), with ``like``'s known shape recorded."""
    return typed(reshape(g, x, shape_of(g, like)), g.shape(like))


# -- broadcasting and repetition --------------------------------------------------------------------------------
def expand_to(g, x, target: list):
    """Broadcast ``x`` to ``target`` (ints, -1 meaning "keep", or 0-d values): Expand from opset 8, Tile below."""
    x = g.value(x)
    rank = require_rank(g, x)
    lead = len(target) - rank
    known = [None if is_value(t) else int(constant_value(t)) for t in target]
    own_dims = [None] * lead + (known_dims(g, x) or [None] * rank)
    result_shape = [o if k == -1 else k for k, o in zip(known, own_dims, strict=True)]
    if g.opset >= 8:
        # Expand broadcasts both ways, so a 1 keeps the input's dim, just like torch's -1.
        wanted = [1 if k == -1 else t if k is not None else _minus_one_as_one(g, t)
                  for k, t in zip(known, target, strict=True)]
        return typed(g.op("Expand", x, to_int64_list_value(g, wanted)), result_shape)
    if lead > 0:
        x = unsqueeze(g, x, list(range(lead)))
    own = [1] * lead + dims_or_sizes(g, x)[lead:]
    repeats = []
    for want, have in zip(target, own, strict=True):
        if not is_value(want) and int(constant_value(want)) == -1:
            repeats.append(1)
        elif not is_value(have) and have == 1 and not is_value(want):
            repeats.append(want)
        elif not is_value(have) and not is_value(want) and int(constant_value(want)) == have:
            repeats.append(1)  # also an empty axis kept empty (0 // 0)
        elif is_value(want):  # a run-time -1 keeps the dim: repeat once
            keep = _is_minus_one(g, want)
            ratio = size_arith(g, "Div", want, have)
            repeats.append(g.op("Add", g.op("Mul", ratio, g.op("Sub", g.const(1, torch.int64), keep)), keep))
        else:
            repeats.append(size_arith(g, "Div", want, have))
    return typed(g.op("Tile", x, to_int64_list_value(g, repeats)), result_shape)


def _is_minus_one(g, size):
    """1 where the run-time size ``size`` (0-d) is -1 (torch's "keep this dim"), else 0, as int64."""
    size = cast(g, size, INT64)
    out = cast(g, g.op("Equal", size, g.const(-1, torch.int64)), INT64)
    out.shape = size.shape
    return out


def _minus_one_as_one(g, size):
    """A run-time expand size with torch's -1 ("keep") turned into Expand's 1 (which keeps a dim): size + 2 * (size ==
    -1)."""
    out = g.op("Add", cast(g, size, INT64), g.op("Mul", _is_minus_one(g, size), g.const(2, torch.int64)))
    out.shape = g.value(size).shape
    return out


def broadcast_pair(g, a, b) -> tuple:
    """``a`` and ``b`` both expanded to the shape they broadcast to: constant shapes where both are static, else
    Expand by each other's shape (Expand broadcasts both ways: opset 8)."""
    a_dims, b_dims = g.static_dims(a), g.static_dims(b)
    if a_dims is not None and b_dims is not None:
        target = [int(d) for d in np.broadcast_shapes(tuple(a_dims), tuple(b_dims))]
        return (a if a_dims == target else expand_to(g, a, target)), (b if b_dims == target else expand_to(g, b, target))
    require_opset(g, 8, "broadcasting two tensors of run-time shapes needs Expand")
    shape = broadcast_shape(g.shape(a), g.shape(b))
    a = typed(g.op("Expand", a, g.op("Shape", b)), shape)
    return a, typed(g.op("Expand", b, g.op("Shape", a)), shape)


def expand_to_shape_value(g, x, shape):
    """Broadcast ``x`` to ``shape``, a Python list or a 1-D int64 value (e.g. another tensor's Shape)."""
    if isinstance(shape, list):
        return expand_to(g, x, shape)
    target_rank = shape.shape[0]
    result_shape = broadcast_shape(known_dims(g, x), [None] * target_rank) if g.rank(x) is not None else None
    if g.opset >= 8:
        return typed(g.op("Expand", x, shape), result_shape)
    x = g.value(x)
    lead = target_rank - require_rank(g, x)
    if lead > 0:
        x = unsqueeze(g, x, list(range(lead)))
    return typed(g.op("Tile", x, g.op("Div", shape, g.op("Shape", x))), result_shape)


# -- splitting --------------------------------------------------------------------------------------------------
def split_sizes(g, x, dim: int, sizes: list[int]) -> list:
    """Split ``x`` along ``dim`` into pieces of static ``sizes`` (ONNX Split: attribute before 13, input from 13)."""
    if len(sizes) == 1:
        return [x]
    if g.opset >= 13:
        pieces = g.op("Split", x, g.const(sizes, torch.int64), axis_i=dim, outputs=len(sizes))
    else:
        pieces = g.op("Split", x, axis_i=dim, split_i=sizes, outputs=len(sizes))
    for piece in pieces:
        piece.dtype = g.dtype(x)
    return list(pieces)


def split_halves(g, x, dim: int) -> list:
    """Split ``x`` along ``dim`` (of any length, even) into two equal halves: Split with no sizes before opset 18,
    where the output count says how many; from 18 the count is the ``num_outputs`` attribute."""
    count = {"num_outputs_i": 2} if g.opset >= 18 else {}
    return list(g.op("Split", x, axis_i=dim, outputs=2, **count))


# -- masking ----------------------------------------------------------------------------------------------------
def zero_outside(g, x, mask):
    """``x`` where the boolean ``mask`` holds and zero elsewhere: And for bools; Where from opset 9, before it a
    product with the 0/1 mask (the same values for finite inputs)."""
    elem = g.dtype(x)
    if elem == dtypes.onnx_from_torch(torch.bool):
        return g.op("And", x, mask)
    if g.opset >= 9:
        zero = g.const(np.zeros((), dtype=dtypes.numpy_from_onnx(elem)))
        return g.op("Where", mask, x, zero)
    return g.op("Mul", x, cast(g, mask, elem))


# -- transposes -------------------------------------------------------------------------------------------------
def transpose_perm(g, x, perm: list[int]):
    """Transpose by ``perm``, skipping the identity permutation."""
    if perm == list(range(len(perm))):
        return x
    out = g.op("Transpose", x, perm_i=perm)
    if g.shape(x) is not None:
        out.shape = tuple(g.shape(x)[p] for p in perm)
    return out


def inverse_permutation(perm: list[int]) -> list[int]:
    """The permutation that undoes ``perm``."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def arange_indices(g, count) -> object:
    """0, 1, ..., count-1 as int64: a constant when ``count`` is an int; Range from 11; NonZero of ones at 9-10."""
    if not is_value(count):
        return g.const(np.arange(int(count), dtype=np.int64))
    count = unsqueeze(g, cast(g, count, INT64), [0]) if count.rank in (0, None) else count
    if g.opset >= 11:
        return g.op("Range", g.const(0, torch.int64), squeeze(g, count, [0]), g.const(1, torch.int64))
    if g.opset >= 9:
        ones = g.op("ConstantOfShape", count, value_t=np.array([1], dtype=np.int64))
        return squeeze(g, g.op("NonZero", ones), [0])
    raise unsupported(g.op_kind, g.opset, "a run-time index range needs ConstantOfShape/NonZero: needs opset >= 9")


def position_compare_type(g) -> int:
    """The type in which int64 positions are compared with Less/Greater: int64 from opset 9, float before (Less-7
    and Greater-7 take floating types only; exact below 2**24)."""
    return INT64 if g.opset >= 9 else FLOAT


def pad_op(g, x, pad: list, mode: str, value=None):
    """ONNX Pad: ``pads``/``value`` attributes before opset 11, inputs from 11; circular: ``circular_pad``."""
    rank = require_rank(g, x)
    if mode == "circular":
        return circular_pad(g, x, pad, rank)
    if mode not in _PAD_MODES:
        raise SymbolicValueError(f"padding mode {mode!r} has no ONNX equivalent")
    whole = is_value(pad) and not is_constant(pad)  # the list itself computed at run time (a list input)
    pads = None if whole else _onnx_pads(list(pad if isinstance(pad, (list, tuple)) else constant_value(pad)), rank)
    if g.opset >= 11:
        # Pad takes bool from opset 13: before, bool pads as uint8.
        work = cast(g, x, TensorProto.UINT8) if g.dtype(x) == TensorProto.BOOL and g.opset < 13 else x
        inputs = [work, _run_time_onnx_pads(g, pad, rank) if pads is None else to_int64_list_value(g, pads)]
        if mode == "constant" and value is not None and constant_value(value) not in (0, 0.0):
            inputs.append(g.const(np.array(constant_value(value)), g.dtype(work)))
        out = g.op("Pad", *inputs, mode_s=_PAD_MODES[mode])
        return out if work is x else cast(g, out, TensorProto.BOOL)
    if pads is None or not all(is_constant(p) for p in pads):
        if pads is not None and mode == "constant" and g.opset >= 9:
            return _pad_by_concat(g, x, pads, 0.0 if value is None else constant_value(value))
        # (worded so that callers matching PyTorch's exporter's message for this case keep working)
        lowest = 9 if pads is not None and mode == "constant" else 11
        raise unsupported(g.op_kind, g.opset, "Unsupported: ONNX export of Pad with sizes computed at run time. "
                          "The sizes of the padding must be constant before Pad takes them as an input: "
                          f"needs opset >= {lowest}")
    pads = [int(constant_value(p)) for p in pads]
    # Pad before 11 is defined on floating types only: compute in double and cast back.
    original = g.dtype(x)
    work = x if dtypes.is_float(original) else cast(g, x, dtypes.onnx_from_torch(torch.float64))
    fill = float(constant_value(value)) if value is not None else 0.0
    out = g.op("Pad", work, pads_i=pads, mode_s=_PAD_MODES[mode], value_f=fill)
    return out if work is x else cast(g, out, original)


# -- padding ----------------------------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _onnx_pads(pad: list, rank: int) -> list:
    """torch's pad list (last dim first, (begin, end) pairs) as ONNX pads (all begins, then all ends)."""
    pairs = len(pad) // 2
    begins, ends = [0] * rank, [0] * rank
    for i in range(pairs):
        axis = rank - 1 - i
        begins[axis], ends[axis] = pad[2 * i], pad[2 * i + 1]
    return begins + ends


def _pad_by_concat(g, x, pads: list, fill):
    """Constant padding by sizes computed at run time before opset 11, where Pad takes its pads as an attribute.
    ``pads``: ONNX order (all begins, then all ends), ints and 0-d int64 values. Per padded axis: the positions kept
    (a negative size crops) gathered, then blocks of ``fill`` (ConstantOfShape, opset 9) of the positive sizes
    concatenated on either side. Any dtype, unlike Pad before 11 (floating types only)."""
    rank = len(pads) // 2
    pads = [int(constant_value(p)) if is_constant(p) else _as_size(g, p) for p in pads]
    out = x
    for axis in range(rank):
        begin, end = pads[axis], pads[axis + rank]
        if not is_value(begin) and not is_value(end) and begin == end == 0:
            continue
        out = _crop(g, out, axis, _positive_part(g, size_arith(g, "Sub", 0, begin)),
                    _positive_part(g, size_arith(g, "Sub", 0, end)))
        blocks = [_fill_block(g, out, axis, _positive_part(g, size), fill) for size in (begin, end)]
        out = g.op("Concat", blocks[0], out, blocks[1], axis_i=axis)
        out.shape = (None,) * rank
    return out


def _as_size(g, value):
    """A run-time size as a 0-d int64 value (a list item may come as a 1-element tensor)."""
    value = cast(g, value, INT64)
    return squeeze(g, value, [0]) if value.rank == 1 else value


def _positive_part(g, size):
    """max(size, 0) of an int or a 0-d int64 value (Max takes integers only from opset 12)."""
    if not is_value(size):
        return max(int(constant_value(size)), 0)
    zero = g.const(0, torch.int64)
    out = g.op("Where", g.op("Greater", size, zero), size, zero)
    out.shape = ()
    return out


def _crop(g, x, axis: int, start, stop_from_end):
    """``x`` without ``start`` positions at the beginning of ``axis`` and ``stop_from_end`` at its end (sizes
    computed at run time: a Gather of the positions kept, Slice taking run-time bounds only from opset 10)."""
    if not is_value(start) and not is_value(stop_from_end) and start == stop_from_end == 0:
        return x
    count = size_arith(g, "Sub", size_arith(g, "Sub", dim_size(g, x, axis), start), stop_from_end)
    kept = arange_indices(g, count)
    positions = kept if not is_value(start) and start == 0 else g.op("Add", kept, cast(g, start, INT64))
    out = g.op("Gather", x, positions, axis_i=axis)
    out.shape = (None,) * require_rank(g, x)
    return out


def _fill_block(g, x, axis: int, size, fill):
    """A block of ``fill`` shaped as ``x`` but ``size`` long along ``axis``."""
    sizes = dims_or_sizes(g, x)
    sizes[axis] = size
    scalar = np.array([fill], dtype=dtypes.numpy_from_onnx(g.dtype(x)))
    out = g.op("ConstantOfShape", to_int64_list_value(g, sizes), value_t=scalar)
    out.shape = (None,) * len(sizes)
    return out


def _run_time_onnx_pads(g, pad, rank: int):
    """:func:`_onnx_pads` of a pad list whose length is known only at run time (a 1-d tensor): zeros appended up to
    2 * rank items, the (begin, end) pairs put in dim order (they come last dim first), then all begins and all
    ends."""
    pad = cast(g, pad, INT64)
    missing = g.op("Sub", g.const([2 * rank], torch.int64), g.op("Shape", pad))
    zeros = g.op("ConstantOfShape", missing, value_t=torch.zeros(1, dtype=torch.int64))
    pairs = reshape(g, g.op("Concat", pad, zeros, axis_i=0), [rank, 2])
    in_dim_order = g.op("Gather", pairs, g.const(list(range(rank - 1, -1, -1)), torch.int64), axis_i=0)
    out = reshape(g, g.op("Transpose", in_dim_order, perm_i=[1, 0]), [2 * rank])
    out.dtype = INT64
    return out


def circular_pad(g, x, pad: list, rank: int):
    """torch's circular padding (``pad`` in torch's order, last dim first): negative pads crop first, and what wraps
    around comes from the cropped tensor. Pad-19 in mode 'wrap' from opset 19 (``_wrap_pad``); Slices and a Concat
    per axis before, and for bfloat16 (ONNX Runtime has no bfloat16 Pad-19)."""
    if not all(is_constant(p) for p in pad):
        raise SymbolicValueError("circular padding needs constant pad sizes")
    pad = [int(constant_value(p)) for p in pad]
    if g.opset >= 19 and not (g.dtype(x) == TensorProto.BFLOAT16 and applies(g, CIRCULAR_PAD_BFLOAT16_BY_SLICES)):
        return _wrap_pad(g, x, pad, rank)
    out = x
    for i in range(len(pad) // 2):
        axis = rank - 1 - i
        begin, end = pad[2 * i], pad[2 * i + 1]
        # Negative pads crop first; the wrapped-around parts come from the cropped tensor, as in torch.
        core = slice_op(g, out, [axis], [max(-begin, 0)], [end if end < 0 else INT64_MAX])
        parts = [core]
        if begin > 0:
            parts.insert(0, slice_op(g, core, [axis], [-begin], [INT64_MAX]))
        if end > 0:
            parts.append(slice_op(g, core, [axis], [0], [end]))
        out = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis_i=axis)
    return out


def _wrap_pad(g, x, pad: list, rank: int):
    """Circular padding as Pad-19 (data, pads; mode 'wrap'). Negative pads crop with a Slice first, and the Pad
    wraps the cropped tensor, as torch does (Pad-19 removes on negative pads too, and ONNX Runtime computes it so,
    but onnx.reference refuses negative 'wrap' pads)."""
    onnx_pads = _onnx_pads(pad, rank)
    begins, ends = onnx_pads[:rank], onnx_pads[rank:]
    dims = [None if d is None else d + min(begins[a], 0) + min(ends[a], 0) for a, d in enumerate(known_dims(g, x))]
    cropped = [axis for axis in range(rank) if begins[axis] < 0 or ends[axis] < 0]
    if cropped:
        x = typed(slice_op(g, x, cropped, [max(-begins[a], 0) for a in cropped],
                           [ends[a] if ends[a] < 0 else INT64_MAX for a in cropped]), dims)
    grown = [max(p, 0) for p in onnx_pads]
    if not any(grown):
        return x
    out = g.op("Pad", x, g.const(np.array(grown, dtype=np.int64)), mode_s="wrap")
    return typed(out, [None if d is None else d + grown[a] + grown[rank + a] for a, d in enumerate(dims)])


# -- squeeze/unsqueeze along dims known only at run time -----------------------------------------------------------
def squeeze_where_one(g, x, dims: list):
    """torch.squeeze(x, dims): drop each listed dim whose size is 1, keep the others (torch leaves a dim of another size
    alone, where ONNX Squeeze fails). ``dims`` holds ints or 0-d int64 values (a dim chosen at run time), negative
    counting from the end. Where every listed size is known at export time this is a Squeeze of the ones; where a
    size or a dim is known only at run time, the result's rank is too, and from opset 9 the result is a Reshape to
    the Shape with the squeezed entries dropped (Compress, opset 9). Below 9 a dim chosen at run time raises; a
    listed dim of run-time size takes Squeeze, right where that size is 1 at run time, as shapes are before
    Compress."""
    rank = require_rank(g, x)
    sizes = known_dims(g, x)
    static = [normalize_dim(int(constant_value(d)), rank) for d in dims if is_constant(d)]
    run_time = [d for d in dims if not is_constant(d)]
    if not run_time and (all(sizes[d] is not None for d in static) or g.opset < 9):
        axes = sorted({d for d in static if sizes[d] in (1, None)})
        return squeeze(g, x, axes) if axes else x
    require_opset(g, 9, "squeeze of a dim chosen at run time needs Compress")
    positions = g.const(np.arange(rank, dtype=np.int64))
    listed = g.const(np.isin(np.arange(rank), static))
    for d in run_time:
        d = cast(g, reshape(g, d, []), INT64)
        # a dim d in [-rank, rank) names position d or d + rank
        here = g.op("Or", g.op("Equal", positions, d), g.op("Equal", positions, g.op("Add", d, g.const(rank, torch.int64))))
        listed = g.op("Or", listed, here)
    shape = to_int64_list_value(g, shape_of(g, x))
    drop = g.op("And", listed, g.op("Equal", shape, g.const(np.ones(rank, dtype=np.int64))))
    out = g.op("Reshape", x, g.op("Compress", shape, g.op("Not", drop), axis_i=0))
    out.shape = None  # the rank is known only at run time
    return out


def unsqueeze_at(g, x, dim):
    """torch.unsqueeze(x, dim) for a ``dim`` chosen at run time (a 0-d int64 value, negative counting from the end of
    the result): a Reshape to the Shape with a 1 inserted, whose entries are gathered from Shape ++ [1] by position
    (Greater/Equal on int64: opset 9)."""
    rank = require_rank(g, x)
    require_opset(g, 9, "unsqueeze at a dim chosen at run time needs Greater on integers")
    d = cast(g, reshape(g, dim, []), INT64)
    out_rank = g.const(rank + 1, torch.int64)
    d = g.op("Add", d, g.op("Mul", out_rank, cast(g, g.op("Less", d, g.const(0, torch.int64)), INT64)))
    positions = g.const(np.arange(rank + 1, dtype=np.int64))
    after = cast(g, g.op("Greater", positions, d), INT64)
    at = cast(g, g.op("Equal", positions, d), INT64)
    # before d: position j; at d: the appended 1 (index rank); after d: j - 1
    index = g.op("Add", g.op("Sub", positions, after), g.op("Mul", at, g.op("Sub", g.const(rank, torch.int64), positions)))
    padded = g.op("Concat", to_int64_list_value(g, shape_of(g, x)), g.const(np.ones(1, dtype=np.int64)), axis_i=0)
    out = g.op("Reshape", x, g.op("Gather", padded, index, axis_i=0))
    out.shape = (None,) * (rank + 1)
    return out


# -- what the capture recorded, and cutting along a dim ---------------------------------------------------------
def traced_dim(g, dim: int, input_index: int = 0) -> int | None:
    """The size the trace recorded for ``dim`` of the node's input (the example's size, even if dynamic)."""

    shape = g.input_layout(input_index)[0]
    return shape[dim] if shape is not None and isinstance(shape[dim], int) else None


def list_output_count(g) -> int | None:
    """How many tensors the list returned by the current node holds, read from its ListUnpack consumer."""
    return g.list_output_length(0)


def split_at(g, x, dim: int, starts: list) -> list:
    """Pieces of ``x`` between consecutive ``starts`` along ``dim`` (the last one runs to the end), via Slice."""
    ends = list(starts[1:]) + [INT64_MAX]
    return [slice_op(g, x, [dim], [s], [e]) for s, e in zip(starts, ends, strict=True)]
