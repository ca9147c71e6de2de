"""Resize building blocks: nearest upsampling by integer factors (Upsample-7 takes its scales as an attribute,
Upsample-9 as an input, Resize-10 replaces it) and the unused optional inputs of Resize (empty tensors at opsets
11-12, where Resize requires them; left out from opset 13)."""

from __future__ import annotations

import numpy as np

from exporter import ir


def upsample_by_integer_factors(g, input, factors: list[int]) -> ir.Value:
    """Nearest upsampling of the spatial axes (those after batch and channel) by integer ``factors``, opsets 7-10."""
    scales = [1.0, 1.0] + [float(f) for f in factors]
    if g.opset < 9:
        return g.op("Upsample", input, mode_s="nearest", scales_f=scales)
    op_type = "Upsample" if g.opset == 9 else "Resize"
    return g.op(op_type, input, g.const(np.array(scales, dtype=np.float32)), mode_s="nearest")


def unused_resize_inputs(g) -> tuple:
    """Resize's ``roi`` and, for a resize to ``sizes``, its ``scales``: empty tensors before opset 13, None (left
    out) from 13."""
    empty = g.const(np.zeros(0, dtype=np.float32))
    return (empty, empty) if g.opset < 13 else (None, None)
