"""Lists of tensors whose length is only known at run time, as ONNX sequences (opset 11+).

A list built in straight-line code stays a Python list of graph values (its length is known at export time);
only a list that a loop grows, or one indexed at a position computed at run time, becomes an ONNX sequence.
The ``dtype`` of a sequence value is the element type of its tensors.
"""

from __future__ import annotations

from exporter.lowering.core import INT64, cast, constant_value, is_value
from exporter.lowering.sequence import (
    as_sequence,
    require_sequences,
    sequence_length,
    sequence_value,
)
from exporter.registry import symbolic


@symbolic("aten::append")
def append(g, items, element):
    """``list.append``: a known list grows at export time; a sequence grows with SequenceInsert."""
    if isinstance(items, (list, tuple)):
        return list(items) + [element]
    require_sequences(g, "appending to a list computed at run time")
    element = g.value(element)
    if items.producer is not None and items.producer.op_type == "SequenceEmpty" and items.dtype != element.dtype:
        items.producer.attrs["dtype"] = element.dtype
        items.dtype = element.dtype
    out = g.op("SequenceInsert", items, cast(g, element, items.dtype))
    return sequence_value(out, items.dtype)


@symbolic("aten::_set_item")
def set_item(g, items, index, element):
    """``items[index] = element`` (made functional by the mutation pass): a known list at a known position
    changes at export time; otherwise SequenceErase then SequenceInsert at the position (opset 11)."""
    if isinstance(items, (list, tuple)) and not is_value(index):
        updated = list(items)
        updated[int(constant_value(index))] = element
        return updated
    require_sequences(g, "assigning into a list at a position computed at run time")
    sequence = as_sequence(g, items)
    length = sequence_length(g, sequence)
    # Python counts a negative index from the end; (index + n) mod n is that position, non-negative.
    position = g.op("Mod", g.op("Add", cast(g, index, INT64), length), length)
    erased = sequence_value(g.op("SequenceErase", sequence, position), sequence.dtype)
    out = g.op("SequenceInsert", erased, cast(g, element, sequence.dtype), position)
    return sequence_value(out, sequence.dtype)


@symbolic("aten::list")
def list_copy(g, items):
    """``list(x)`` of a list: values are immutable here, so the copy is the list itself."""
    return list(items) if isinstance(items, (list, tuple)) else items
