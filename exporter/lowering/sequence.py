"""Sequence building blocks (ONNX sequence types and ops: opset 11): lists of tensors as sequences, their length
and items, splitting into and concatenating from sequences."""

from __future__ import annotations

import torch

from exporter import ir
from exporter.dtypes import INT64
from exporter.errors import SymbolicValueError
from exporter.lowering.core import cast, constant_value, is_value, normalize_dim, to_int64_list_value, unsqueeze
from exporter.registry import unsupported

SEQUENCE_OPSET = 11


def has_sequences(g) -> bool:
    """Whether the target opset has sequence values and their operators (SequenceConstruct, SplitToSequence, ...)."""
    return g.opset >= SEQUENCE_OPSET


def require_sequences(g, what: str) -> None:
    """Raise the unsupported-operator error for ``what`` below the opset that introduced sequences."""
    if g.opset < SEQUENCE_OPSET:
        kind = g.op_kind if g.node is not None else "sequence"
        raise unsupported(kind, g.opset, f"{what} needs ONNX sequences: needs opset >= {SEQUENCE_OPSET}")


def as_sequence(g, items) -> ir.Value:
    """``items`` (a Python list of tensors, or already a sequence) as an ONNX sequence value."""
    if is_value(items) and items.kind == ir.SEQUENCE:
        return items
    require_sequences(g, "a list that changes length at run time")
    if is_value(items):
        raise SymbolicValueError("expected a list of tensors, got a tensor")
    if not items:
        # The element type (None: not known yet) is settled by whoever first inserts into it, or by the Loop that
        # carries it (symbolics.loop._settle_empty_sequences); float if nothing ever does.
        return sequence_value(g.op("SequenceEmpty", dtype_i=torch_float()), None, ir.NO_ITEMS)
    values = [g.value(item) for item in items]
    dtype = values[0].dtype
    values = [cast(g, v, dtype) for v in values]
    return sequence_value(g.op("SequenceConstruct", *values), dtype, _items_shape(values))


def is_list(x) -> bool:
    """A list of values: a Python list known at export time, or an ONNX sequence."""
    return isinstance(x, (list, tuple)) or (is_value(x) and x.kind == ir.SEQUENCE)


def insert_into_sequence(g, sequence: ir.Value, element, position=None) -> ir.Value:
    """SequenceInsert of ``element`` (cast to the sequence's element type) at ``position`` (None: at the end).

    A sequence whose element type is not known yet (an empty list, or a loop body's input carrying one) learns it
    from the first tensor inserted into it, and so does an empty list's SequenceEmpty.
    """
    element = g.value(element)
    producer = sequence.producer
    empty = producer if producer is not None and producer.op_type == "SequenceEmpty" else None
    if sequence.dtype is None or (empty is not None and sequence.dtype != element.dtype):
        if empty is not None:
            empty.attrs["dtype"] = element.dtype
        sequence.dtype = element.dtype
    inputs = [sequence, cast(g, element, sequence.dtype)] + ([] if position is None else [position])
    return sequence_value(g.op("SequenceInsert", *inputs), sequence.dtype,
                          ir.join_elem_shapes(sequence.elem_shape, element.shape))


def is_list_tensor(g, x, position: int = 0) -> bool:
    """Whether ``x``, the argument at ``position`` of the node being converted, is a TorchScript list held as a
    1-d int64 tensor: an int list with items known only at run time (``x.shape`` of a tensor with dynamic dims).
    Only the node's TorchScript type tells it from a tensor."""
    return (is_value(x) and x.kind == ir.TENSOR and g.node is not None
            and g.input_type(position).endswith("[]"))


def list_concat(g, items, other):
    """``items + other`` of two lists: a Python list at export time when both are known; Concat where an int list
    is a 1-d tensor (sizes known only at run time); else the items of a known ``other`` inserted one by one into
    the sequence ``items`` (opset 11)."""
    if isinstance(items, (list, tuple)) and isinstance(other, (list, tuple)):
        return list(items) + list(other)
    if any(is_value(x) and x.kind == ir.TENSOR for x in (items, other)):
        parts = [to_int64_list_value(g, x) for x in (items, other)]
        out = g.op("Concat", *parts, axis_i=0)
        lengths = [p.shape[0] for p in parts if p.shape and isinstance(p.shape[0], int)]
        out.dtype, out.shape = INT64, (sum(lengths) if len(lengths) == len(parts) else None,)
        return out
    if not isinstance(other, (list, tuple)):
        kind = g.op_kind if g.node is not None else "list concatenation"
        raise unsupported(kind, g.opset, "concatenating two lists whose lengths are both known only at run time")
    sequence = as_sequence(g, items)
    for element in other:
        sequence = insert_into_sequence(g, sequence, element)
    return sequence


def sequence_length(g, sequence: ir.Value) -> ir.Value:
    """The number of tensors in a sequence, as an int64 number."""
    out = g.op("SequenceLength", sequence)
    out.dtype, out.shape, out.is_number = INT64, (), True
    return out


def unpack_sequence(g, sequence, count):
    """``a, b, c = seq`` with the count known from the unpacking: one SequenceAt per position."""
    require_sequences(g, "unpacking a list computed at run time")
    return [_at(g, sequence, g.const(i, torch.int64)) for i in range(count)]


def sequence_at(g, items, index):
    """``items[index]`` where the list or the index is only known at run time."""
    if isinstance(items, (list, tuple)) and not is_value(index):
        return items[int(constant_value(index))]
    if isinstance(items, (list, tuple)) and _same_known_shapes(g, items):
        return _gather_from_stack(g, items, index)
    require_sequences(g, "indexing a list at a position computed at run time")
    return _at(g, as_sequence(g, items), cast(g, index, INT64))


def concat_from_sequence(g, sequence, dim, new_axis: bool = False):
    """``torch.cat`` (or ``torch.stack`` with ``new_axis``) of a list whose length is known only at run time."""
    require_sequences(g, "concatenating a list computed at run time")
    out = g.op("ConcatFromSequence", sequence, axis_i=int(dim), new_axis_i=int(new_axis))
    out.dtype = sequence.dtype
    items = sequence.elem_shape
    if isinstance(items, tuple):  # the items' rank (and sizes other than along the axis)
        dims = list(items)
        if new_axis:
            dims.insert(normalize_dim(int(dim), len(dims) + 1), None)
        elif dims:
            dims[normalize_dim(int(dim), len(dims))] = None
        out.shape = tuple(dims)
    return out


def split_to_sequence(g, x, split_size, dim: int) -> ir.Value:
    """``torch.split(x, split_size, dim)`` into a sequence, for a split dim whose size is known only at run time.

    ONNX SplitToSequence with a scalar split makes equal pieces and a shorter last one, as torch.split does.
    """
    require_sequences(g, "splitting into a number of pieces known only at run time")
    rank = g.rank(x)
    out = g.op("SplitToSequence", x, cast(g, split_size, INT64), axis_i=normalize_dim(dim, rank))
    return sequence_value(out, g.dtype(x))


def sequence_value(value: ir.Value, dtype, elem_shape=None) -> ir.Value:
    """``value`` as a sequence of tensors of element type ``dtype`` whose items have ``elem_shape``
    (see ``ir.Value.elem_shape``; None: unknown)."""
    value.kind, value.dtype, value.shape, value.elem_shape = ir.SEQUENCE, dtype, None, elem_shape
    return value


def _items_shape(values) -> tuple | None:
    shape: tuple | str | None = ir.NO_ITEMS
    for value in values:
        shape = ir.join_elem_shapes(shape, value.shape)
    return shape if isinstance(shape, tuple) else None  # (a str is NO_ITEMS)


def torch_float() -> int:
    from onnx import TensorProto

    return TensorProto.FLOAT


def _at(g, sequence: ir.Value, index) -> ir.Value:
    out = g.op("SequenceAt", sequence, index)
    out.dtype = sequence.dtype
    if isinstance(sequence.elem_shape, tuple):
        out.shape = sequence.elem_shape
    return out


def _same_known_shapes(g, items) -> bool:
    shapes = [g.static_dims(item) if is_value(item) else None for item in items]
    dtypes = {g.dtype(item) for item in items}
    return shapes[0] is not None and all(s == shapes[0] for s in shapes) and len(dtypes) == 1


def _gather_from_stack(g, items, index) -> ir.Value:
    """Pick one of equally shaped tensors at a run-time position without sequences (any opset).

    The list is stacked twice so that a negative index (counted from the end, as Python does) becomes the
    non-negative ``index + len`` that Gather accepts at every opset.
    """

    stacked = g.op("Concat", *[unsqueeze(g, item, [0]) for item in list(items) * 2], axis_i=0)
    position = g.op("Add", cast(g, index, INT64), g.const(len(items), torch.int64))
    out = g.op("Gather", stacked, position, axis_i=0)
    out.shape = tuple(g.static_dims(items[0]))
    return out
