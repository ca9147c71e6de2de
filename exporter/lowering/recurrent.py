"""Building blocks of the recurrent layers' packed-sequence forms."""

from __future__ import annotations

from exporter.dtypes import INT64
from exporter.lowering.core import cast, is_constant, slice_op
from exporter.lowering.shape import arange_indices


def first_steps(g, data, count):
    """``data[:count]`` along the time axis 0: Slice, whose bounds are inputs from opset 10; before, attributes
    take only a constant ``count``, and a run-time one becomes a Gather of steps 0..count-1."""
    if g.opset >= 10 or is_constant(count):
        return slice_op(g, data, [0], [0], [count])
    return g.op("Gather", data, arange_indices(g, cast(g, count, INT64)), axis_i=0)
