"""Normalization building blocks: standardizing over axes, and batch normalization with running or batch
statistics (BatchNormalization's ``spatial`` attribute before opset 9; training-mode outputs from 14)."""

from __future__ import annotations

import numpy as np
import torch

from exporter.lowering.core import (
    is_value,
    reduce_op,
    require_rank,
    reshape,
    scalar_like,
)
from exporter.lowering.runtime import BATCH_NORM_TRAINING_DECOMPOSED, applies
from exporter.registry import unsupported


def standardize(g, x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` with the biased variance; also returns (mean, rstd)."""
    mean = reduce_op(g, "ReduceMean", x, axes, True)
    centered = g.op("Sub", x, mean)
    # Pow(d, 2), not Mul(d, d): the form ONNX Runtime's LayerNormalization fusion recognises.
    variance = reduce_op(g, "ReduceMean", g.op("Pow", centered, scalar_like(g, 2, x)), axes, True)
    std = g.op("Sqrt", g.op("Add", variance, scalar_like(g, eps, x)))
    return g.op("Div", centered, std), mean, std


def normalize_batch(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """BatchNormalization with running statistics, or the batch's own statistics where the call or the export
    trains (the running-statistics update is dropped in an eval export)."""
    channels = _channels(g, input, running_mean, weight)
    if weight is None:
        weight = g.const(torch.ones(channels), g.dtype(input))
    if bias is None:
        bias = g.const(torch.zeros(channels), g.dtype(input))
    if running_mean is None or running_var is None:
        return _batch_norm_from_batch_statistics(g, input, weight, bias, eps)
    if training and g.training:
        return _batch_norm_training(g, input, weight, bias, running_mean, running_var, momentum, eps)
    if training:
        # The call itself asks for batch statistics (F.batch_norm(..., training=True)): PyTorch normalizes with
        # them whatever the export mode; only the running-statistics update is dropped in an eval export.
        return _batch_norm_from_batch_statistics(g, input, weight, bias, eps)
    attrs = {"epsilon_f": eps}
    if g.opset < 9:
        attrs["spatial_i"] = 1
    out = g.op("BatchNormalization", input, weight, bias, running_mean, running_var, **attrs)
    out.shape = g.shape(input)
    return out


def _channels(g, input, *candidates):
    for c in candidates:
        if c is not None and c.shape:
            return c.shape[0]
    if input.shape and isinstance(input.shape[1], int):
        return input.shape[1]
    raise unsupported(g.op_kind, g.opset, "the channel count is not known")


def _batch_norm_from_batch_statistics(g, input, weight, bias, eps):
    """Normalize with the batch's own statistics (track_running_stats=False)."""
    rank = require_rank(g, input)
    axes = [0] + list(range(2, rank))

    mean = reduce_op(g, "ReduceMean", input, axes, True)
    centered = g.op("Sub", input, mean)
    var = reduce_op(g, "ReduceMean", g.op("Mul", centered, centered), axes, True)
    denom = g.op("Sqrt", g.op("Add", var, scalar_like(g, eps, input)))
    shape = [1, -1] + [1] * (rank - 2)

    scale = reshape(g, weight, shape)
    shift = reshape(g, bias, shape)
    return g.op("Add", g.op("Mul", g.op("Div", centered, denom), scale), shift)


def _batch_norm_training(g, input, weight, bias, running_mean, running_var, momentum, eps):
    if g.opset < 9:
        raise unsupported(g.op_kind, g.opset, "batch norm in training mode needs opset >= 9")
    if g.opset >= 14 and not (_untrained(running_mean, running_var) and applies(g, BATCH_NORM_TRAINING_DECOMPOSED)):
        out, mean, var = g.op("BatchNormalization", input, weight, bias, running_mean, running_var,
                              epsilon_f=eps, momentum_f=1 - momentum, training_mode_i=1, outputs=3)
        # A node of several outputs gets no inferred types: the normalized tensor is the input's, the running
        # statistics keep theirs (a scripted graph records none of these).
        out.dtype, out.shape = g.dtype(input), g.shape(input)
        mean.dtype, var.dtype = g.dtype(running_mean), g.dtype(running_var)
        return out
    return _batch_norm_from_batch_statistics(g, input, weight, bias, eps)


def _untrained(running_mean, running_var) -> bool:
    """Whether the running statistics are known to be those of a layer that has not been trained: a mean of all zeros
    or a variance of all ones (where ONNX Runtime's optimizations miscompute training-mode BatchNormalization)."""
    mean, var = (s.const if is_value(s) else s for s in (running_mean, running_var))  # a tensor: a constant's own
    return (mean is not None and not np.any(mean)) or (var is not None and bool(np.all(np.asarray(var) == 1)))
