"""Activation building blocks shared by families: overflow-free softplus and the (Log)Softmax form along any axis
(Softmax-1..12 flatten everything after ``axis``; from opset 13 it takes one axis)."""

from __future__ import annotations

import numpy as np

from exporter import dtypes
from exporter.lowering.core import (
    DOUBLE,
    FLOAT,
    cast,
    normalize_dim,
    output_dtype,
    require_rank,
    torch_dtype_arg,
)


def stable_softplus(g, x):
    if native_activation(g, x):
        return g.op("Softplus", x)
    # log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which never overflows.
    tail = g.op("Log", g.op("Add", activation_scalar(g, 1, x), g.op("Exp", g.op("Neg", g.op("Abs", x)))))
    return g.op("Add", g.op("Relu", x), tail)


# -- softmax --------------------------------------------------------------------------------------------------
def softmax_op(g, op_type, x, dim, dtype):
    if dtype is not None:
        x = cast(g, x, dtypes.onnx_from_torch(torch_dtype_arg(dtype)))
    elif not dtypes.is_float(g.dtype(x)):
        x = cast(g, x, output_dtype(g) or FLOAT)
    rank = require_rank(g, x)
    axis = normalize_dim(dim, rank)
    if g.opset >= 13 or axis == rank - 1:
        return g.op(op_type, x, axis_i=axis)
    # Before opset 13 Softmax flattens to 2-D around ``axis`` (normalizing over every later dim too):
    # move ``dim`` last, normalize there, move it back.
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = g.op("Transpose", x, perm_i=perm)
    return g.op("Transpose", g.op(op_type, moved, axis_i=rank - 1), perm_i=perm)


def activation_scalar(g, value, like):
    return g.const(np.array(value, dtype=dtypes.numpy_from_onnx(g.dtype(like))))


def native_activation(g, x, since=7):
    """True when the activation's ONNX op exists at this opset (``since``) and ONNX Runtime has a kernel for
    ``x``'s type (its CPU provider implements activations for float and float16, not double)."""
    return g.opset >= since and g.dtype(x) != DOUBLE


def times(g, x, factor):
    return x if factor == 1.0 else g.op("Mul", x, activation_scalar(g, factor, x))
