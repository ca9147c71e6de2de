"""Activation building blocks shared by families: whether an activation's ONNX op is emitted (it exists at the
target opset, and ONNX Runtime can run it on the type), overflow-free softplus and the (Log)Softmax form along any
axis (Softmax-1..12 flatten everything after ``axis``; from opset 13 it takes one axis)."""

from __future__ import annotations

import torch

from exporter import dtypes
from exporter.dtypes import DOUBLE, FLOAT
from exporter.lowering.arithmetic import clamp_value, typed_scalar
from exporter.lowering.comparison import equal, less
from exporter.lowering.core import cast, normalize_dim, reduce_op, require_rank, reshape, torch_dtype_arg
from exporter.lowering.runtime import ACTIVATIONS_DECOMPOSED_FOR_DOUBLE, applies
from exporter.registry import MAX_OPSET, MIN_OPSET

# Activations ONNX Runtime's CPU provider cannot compute in double (no kernel; Shrink's rounds through float32;
# Gelu-20 expands to Erf and, at opset 20, Mish to Softplus, which have no double kernel), with the opsets whose
# version of the op it does have a double kernel for (its double LeakyRelu is registered for LeakyRelu-16 at
# opsets 16-18 only).
_DOUBLE_KERNEL_OPSETS = {"Elu": (), "Selu": (), "Softsign": (), "HardSigmoid": (), "Softplus": (), "HardSwish": (),
                         "Shrink": (), "Gelu": (), "Mish": (), "LeakyRelu": range(16, 19),
                         "PRelu": range(16, MAX_OPSET + 1)}


def native_activation(g, op_type, x, since=MIN_OPSET):
    """Whether to emit ONNX ``op_type`` (which exists from opset ``since``) for ``x`` rather than the identity the
    ONNX spec gives for it: not before ``since``, nor for doubles ONNX Runtime cannot compute it on (a workaround)."""
    if g.opset < since:
        return False
    return not (g.dtype(x) == DOUBLE and _runtime_lacks_double(g, op_type)
                and applies(g, ACTIVATIONS_DECOMPOSED_FOR_DOUBLE))


def _runtime_lacks_double(g, op_type):
    return op_type in _DOUBLE_KERNEL_OPSETS and g.opset not in _DOUBLE_KERNEL_OPSETS[op_type]


def stable_softplus(g, x):
    if native_activation(g, "Softplus", x):
        return g.op("Softplus", x)
    # log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)), which never overflows.
    tail = g.op("Log", g.op("Add", typed_scalar(g, 1, x), g.op("Exp", g.op("Neg", g.op("Abs", x)))))
    return g.op("Add", g.op("Relu", x), tail)


# -- softmax --------------------------------------------------------------------------------------------------
def softmax_op(g, op_type, x, dim, dtype):
    requested = torch_dtype_arg(dtype)
    if requested is not None:
        x = cast(g, x, dtypes.onnx_from_torch(requested))
    elif not dtypes.is_float(g.dtype(x)):
        x = cast(g, x, g.output_dtype() or FLOAT)
    rank = require_rank(g, x)
    if rank == 0:
        # ONNX's Softmax needs rank >= 1: the single element is normalized as a 1-element vector.
        return reshape(g, softmax_op(g, op_type, reshape(g, x, [1]), 0, None), [])
    axis = normalize_dim(dim, rank)
    if g.opset >= 13 or axis == rank - 1:
        return g.op(op_type, x, axis_i=axis)
    # Before opset 13 Softmax flattens to 2-D around ``axis`` (normalizing over every later dim too):
    # move ``dim`` last, normalize there, move it back.
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = g.op("Transpose", x, perm_i=perm)
    return g.op("Transpose", g.op(op_type, moved, axis_i=rank - 1), perm_i=perm)


def times(g, x, factor):
    return x if factor == 1.0 else g.op("Mul", x, typed_scalar(g, factor, x))


def safe_softmax(g, scores, axis):
    """PyTorch's ``_safe_softmax``: softmax along ``axis``, except that a row whose every score is -inf gets 0
    rather than the NaN of exp(-inf) / 0; a row holding NaN stays NaN.

    float and double from opset 9: a row is fully masked exactly when its maximum is -inf, so one reduction finds
    those rows and one Where clears them after a plain Softmax (two passes over the scores besides the softmax, where
    the form below makes five: measured in ONNX Runtime, see docs/measurements/2026-12-07-inference.md). Before
    Where (opset 9), and for the half types (ONNX Runtime's CPU Where and ReduceMax kernels do not all take them),
    the scores are clamped to the lowest finite value of their type, which makes a fully masked row finite, so
    multiplying by 0 clears it.
    """
    rank = require_rank(g, scores)
    lowest = typed_scalar(g, float(torch.finfo(dtypes.torch_from_onnx(g.dtype(scores))).min), scores)
    if g.opset >= 9 and g.dtype(scores) in (dtypes.FLOAT, dtypes.DOUBLE):
        row_max = reduce_op(g, "ReduceMax", scores, [normalize_dim(axis, rank)], True)
        fully_masked = equal(g, row_max, typed_scalar(g, float("-inf"), scores))
        weights = softmax_op(g, "Softmax", scores, axis, None)
        return g.op("Where", fully_masked, typed_scalar(g, 0, scores), weights)
    masked = cast(g, less(g, scores, lowest), g.dtype(scores))  # 1 exactly where a score is -inf
    fully_masked = reduce_op(g, "ReduceMin", masked, [normalize_dim(axis, rank)], True)
    clamped = g.set_type(clamp_value(g, scores, lowest, None), dtype=g.dtype(scores), shape=g.shape(scores))
    weights = softmax_op(g, "Softmax", clamped, axis, None)
    return g.op("Mul", weights, g.op("Sub", typed_scalar(g, 1, scores), fully_masked))
