"""Tensors of one value in a given shape: constants when the shape is known, ConstantOfShape (opset 9) or an
Expand (opset 8) of a scalar when it is computed."""

from __future__ import annotations

import numpy as np

from exporter import dtypes
from exporter.errors import SymbolicValueError
from exporter.lowering.core import (
    cast,
    constant_value,
    is_value,
    reshape,
    to_int64_list_value,
)
from exporter.lowering.shape import typed


def filled(g, shape, fill, dtype: int):
    """A tensor of ``shape`` (Python list of ints/values, or 1-D int64 value) filled with ``fill`` (scalar or value)."""
    static = isinstance(shape, list) and all(not is_value(s) for s in shape)
    shape_value = to_int64_list_value(g, shape)
    if isinstance(shape, list):
        known: list[int | None] | None = [None if is_value(s) else int(constant_value(s)) for s in shape]
    else:
        # The rank is the shape value's length where that is known (a slice of a shape may have a run-time length).
        length = shape_value.shape[0] if shape_value.shape else None
        known = [None] * length if isinstance(length, int) else None
    if not is_value(fill):
        scalar = np.array(constant_value(fill), dtype=dtypes.numpy_from_onnx(dtype))
        if g.opset >= 9:
            return typed(g.op("ConstantOfShape", shape_value, value_t=scalar.reshape(1)), known)
        if static:  # before ConstantOfShape (opset 9) a filled tensor of known shape is a constant
            return g.const(np.full([int(constant_value(s)) for s in shape], scalar))
        fill = g.const(scalar)
    fill = cast(g, fill, dtype)
    if g.opset >= 8:
        return typed(g.op("Expand", fill, shape_value), known)
    # Expand is opset 8: tile a 1x...x1 tensor by the wanted shape instead.
    if known is None:
        raise SymbolicValueError("filling a tensor of unknown rank needs Expand: needs opset >= 8")
    return typed(g.op("Tile", reshape(g, fill, [1] * len(known)), shape_value), known)
