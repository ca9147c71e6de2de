"""Index building blocks: NonZero (opset 9) on every input type, one index vector per dim."""

from __future__ import annotations

import numpy as np
import torch

from exporter import dtypes
from exporter.lowering.core import (
    BOOL,
    INT64,
    constant_value,
    require_rank,
)


def scalar_of(g, value, like):
    return g.const(np.array(constant_value(value), dtype=dtypes.numpy_from_onnx(g.dtype(like))))


def nonzero_vectors(g, x):
    """``nonzero(as_tuple=True)`` and one-argument ``where``: one index vector per dim (NonZero: opset 9)."""
    rows = g.op("NonZero", nonzero_input(g, x))
    return [g.op("Gather", rows, g.const(i, torch.int64), axis_i=0) for i in range(max(require_rank(g, x), 1))]


def nonzero_input(g, x):
    supported = {BOOL, INT64, dtypes.onnx_from_torch(torch.int32), dtypes.onnx_from_torch(torch.float32),
                 dtypes.onnx_from_torch(torch.uint8), dtypes.onnx_from_torch(torch.float64)}
    x = g.value(x)
    return x if g.dtype(x) in supported else g.op("Not", g.op("Equal", x, scalar_of(g, 0, x)))
