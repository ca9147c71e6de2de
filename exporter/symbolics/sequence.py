"""Lists of tensors whose length is only known at run time, as ONNX sequences (opset 11+).

A list built in straight-line code stays a Python list of graph values (its length is known at export time);
only a list that a loop grows, or one indexed at a position computed at run time, becomes an ONNX sequence.
The ``dtype`` of a sequence value is the element type of its tensors.
"""

from __future__ import annotations

from exporter.dtypes import INT64
from exporter.lowering.core import cast, constant_value, is_value
from exporter.lowering.numbers import extremum
from exporter.lowering.sequence import (
    as_sequence,
    insert_into_sequence,
    list_concat,
    require_sequences,
    sequence_at,
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
    return insert_into_sequence(g, items, element)


@symbolic("aten::extend")
def extend(g, items, other):
    """``list.extend(other)`` (made functional by the mutation pass: it returns the longer list)."""
    return list_concat(g, items, other)


@symbolic("aten::pop")
def pop(g, items, index=-1):
    """``x = list.pop(i)``: the item read here; the mutation pass follows it with ``aten::Delete`` (the shorter
    list). A known list at a known position at export time; else SequenceAt (opset 11), which counts a negative
    position from the end as Python does."""
    return sequence_at(g, items, index)


@symbolic("aten::Delete")
def delete(g, items, index):
    """``del list[i]`` and the removal half of ``list.pop(i)`` (made functional by the mutation pass: it returns
    the shorter list): a known list at a known position at export time; else SequenceErase (opset 11), which
    counts a negative position from the end as Python does."""
    if isinstance(items, (list, tuple)) and not is_value(index):
        updated = list(items)
        del updated[int(constant_value(index))]
        return updated
    require_sequences(g, "removing an item of a list computed at run time")
    sequence = as_sequence(g, items)
    return sequence_value(g.op("SequenceErase", sequence, cast(g, index, INT64)), sequence.dtype, sequence.elem_shape)


@symbolic("aten::insert")
def insert(g, items, index, element):
    """``list.insert(i, x)`` (made functional by the mutation pass: it returns the longer list): a known list at a
    known position at export time; else SequenceInsert (opset 11) at the position clamped to [-n, n], where
    Python's insert clamps it (SequenceInsert rejects positions outside)."""
    if isinstance(items, (list, tuple)) and not is_value(index):
        updated = list(items)
        updated.insert(int(constant_value(index)), element)
        return updated
    require_sequences(g, "inserting into a list computed at run time")
    sequence = as_sequence(g, items)
    length = sequence_length(g, sequence)
    position = extremum(g, "Max", [extremum(g, "Min", [index, length], INT64), g.op("Neg", length)], INT64)
    return insert_into_sequence(g, sequence, element, position)


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
    erased = sequence_value(g.op("SequenceErase", sequence, position), sequence.dtype, sequence.elem_shape)
    return insert_into_sequence(g, erased, element, position)


@symbolic("aten::list")
def list_copy(g, items):
    """``list(x)`` of a list: values are immutable here, so the copy is the list itself."""
    return list(items) if isinstance(items, (list, tuple)) else items
