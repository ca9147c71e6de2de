"""Scan building blocks for the emulations of cumsum below opset 11 (CumSum arrives there) and of cumprod (no ONNX
op at any opset): the element type each op of the emulation computes in at the target opset, and Pad in its
attribute form (before opset 11) or input form (from 11)."""

from __future__ import annotations

import numpy as np

from exporter import dtypes
from exporter.dtypes import DOUBLE


def matmul_type(g, dtype: int) -> int:
    """The type a sum by MatMul runs in: MatMul takes integers from opset 9; before, double (exact up to 2**53)."""
    return DOUBLE if g.opset < 9 and not dtypes.is_float(dtype) else dtype


def pad_type(g, dtype: int) -> int:
    """The type a value is padded in: Pad takes integers from opset 11; before, double."""
    return dtype if g.opset >= 11 or dtypes.is_float(dtype) else DOUBLE


def pad_front(g, x, axis: int, rank: int, count: int, value):
    """``x`` with ``count`` entries of ``value`` prepended along ``axis`` (Pad: attributes before 11)."""
    pads = [0] * (2 * rank)
    pads[axis] = count
    if g.opset >= 11:
        return g.op("Pad", x, g.const(pads), g.const(np.array(value), x.dtype))
    return g.op("Pad", x, pads_i=pads, value_f=float(value))
