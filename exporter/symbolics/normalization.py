"""Normalization layers: layer norm, RMS norm, group norm and instance norm.

Layer norm is LayerNormalization from opset 17 and decomposed into ReduceMean/Sub/Mul/Sqrt below it; RMS norm is
RMSNormalization from opset 23 and decomposed into Pow/ReduceMean/Add/Sqrt/Div below it. Group norm is
GroupNormalization from opset 21 and decomposed below it: GroupNormalization-18 scales per group where PyTorch scales
per channel. Instance norm maps
to InstanceNormalization (float16/float/double; ONNX Runtime runs no double one). Half-precision inputs are
normalized in float32, as PyTorch's kernels do. Batch norm lives with the other layers in ``nn.py``.
"""

from __future__ import annotations

import numpy as np
import torch
from onnx import TensorProto

from exporter.dtypes import DOUBLE, onnx_from_torch, torch_from_onnx
from exporter.lowering.core import cast, reduce_op, require_rank, reshape, scalar_like, shape_of
from exporter.lowering.normalization import normalize_batch, standardize
from exporter.lowering.reductions import accumulation_type
from exporter.lowering.runtime import INSTANCE_NORM_DOUBLE_DECOMPOSED, applies
from exporter.registry import parse_args, symbolic

_INSTANCE_NORM_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE)


def _affine(g, x, weight, bias, shape=None):
    """x * weight + bias, with the parameters reshaped to ``shape`` when given and cast to x's type."""
    for param, op_type in ((weight, "Mul"), (bias, "Add")):
        if param is not None:
            param = cast(g, param, x.dtype)
            x = g.op(op_type, x, reshape(g, param, shape) if shape is not None else param)
    return x


@symbolic("aten::layer_norm")
@parse_args("v", "is", "v", "v", "f", "none")
def layer_norm(g, input, normalized_shape, weight, bias, eps, cudnn_enable=None):
    out, _, _ = _layer_norm(g, input, normalized_shape, weight, bias, eps)
    return out


@symbolic("aten::native_layer_norm")
@parse_args("v", "is", "v", "v", "f")
def native_layer_norm(g, input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd), the statistics with the normalized axes kept as size 1."""
    out, mean, std = _layer_norm(g, input, normalized_shape, weight, bias, eps)
    rstd = g.op("Reciprocal", std)
    return out, cast(g, mean, g.dtype(input)), cast(g, rstd, g.dtype(input))


def _layer_norm(g, input, normalized_shape, weight, bias, eps):
    rank = require_rank(g, input)
    axes = list(range(rank - len(normalized_shape), rank))
    x = cast(g, input, accumulation_type(g.dtype(input)))
    normalized, mean, std = standardize(g, x, axes, eps)
    return cast(g, _affine(g, normalized, weight, bias), g.dtype(input)), mean, std


@symbolic("aten::layer_norm", since=17)
@parse_args("v", "is", "v", "v", "f", "none")
def layer_normalization(g, input, normalized_shape, weight, bias, eps, cudnn_enable=None):
    out, _, _ = _layer_normalization(g, input, normalized_shape, weight, bias, eps)
    return out


@symbolic("aten::native_layer_norm", since=17)
@parse_args("v", "is", "v", "v", "f")
def native_layer_normalization(g, input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd): LayerNormalization's Mean and InvStdDev keep the normalized axes as size 1, as here."""
    out, mean, inv_std_dev = _layer_normalization(g, input, normalized_shape, weight, bias, eps)
    return out, cast(g, mean, g.dtype(input)), cast(g, inv_std_dev, g.dtype(input))


def _layer_normalization(g, input, normalized_shape, weight, bias, eps):
    """LayerNormalization-17 over the last len(normalized_shape) axes, its statistics in the type PyTorch
    accumulates in (``stash_type``: float32 for half types); a missing weight is a Scale of ones. Its statistics
    are float or bfloat16 only, so a double input, which PyTorch normalizes in double, stays decomposed."""
    dtype = g.dtype(input)
    if dtype == DOUBLE:
        out, mean, std = _layer_norm(g, input, normalized_shape, weight, bias, eps)
        return out, mean, g.op("Reciprocal", std)
    scale = g.const(np.ones(normalized_shape), dtype) if weight is None else cast(g, weight, dtype)
    bias = [] if bias is None else [cast(g, bias, dtype)]
    stash_type = accumulation_type(dtype)
    out, mean, inv_std_dev = g.op("LayerNormalization", input, scale, *bias, axis_i=-len(normalized_shape),
                                  epsilon_f=eps, stash_type_i=stash_type, outputs=3)
    out.dtype, mean.dtype, inv_std_dev.dtype = dtype, stash_type, stash_type
    return out, mean, inv_std_dev


@symbolic("aten::rms_norm")
@parse_args("v", "is", "v", "f")
def rms_norm(g, input, normalized_shape, weight, eps):
    """PyTorch's order: x / sqrt(mean(x², normalized axes) + eps) in the type it accumulates in (float32 for half
    types), cast back to the input's type, then times ``weight``."""
    dtype, stash = g.dtype(input), accumulation_type(g.dtype(input))
    rank = require_rank(g, input)
    x = cast(g, input, stash)
    mean_square = reduce_op(g, "ReduceMean", g.op("Pow", x, scalar_like(g, 2, x)),
                            list(range(rank - len(normalized_shape), rank)), True)
    rms = g.op("Sqrt", g.op("Add", mean_square, scalar_like(g, _rms_eps(eps, stash), x)))
    out = cast(g, g.op("Div", x, rms), dtype)
    if weight is None:
        return out
    promoted = _promoted(dtype, g.dtype(weight))
    return g.op("Mul", cast(g, out, promoted), cast(g, weight, promoted))


@symbolic("aten::rms_norm", since=23)
@parse_args("v", "is", "v", "f")
def rms_normalization(g, input, normalized_shape, weight, eps):
    """RMSNormalization-23 over the last len(normalized_shape) axes, in float32 for half types (``stash_type``), as
    PyTorch computes; a missing weight is a Scale of ones. A double input (which PyTorch normalizes in double, where
    the op's statistics are float) or a weight of another type (whose product PyTorch promotes) stays decomposed."""
    dtype = g.dtype(input)
    if dtype == DOUBLE or (weight is not None and g.dtype(weight) != dtype):
        return rms_norm.__wrapped__(g, input, normalized_shape, weight, eps)
    scale = g.const(np.ones(normalized_shape), dtype) if weight is None else weight
    out = g.op("RMSNormalization", input, scale, axis_i=-len(normalized_shape),
               epsilon_f=_rms_eps(eps, accumulation_type(dtype)), stash_type_i=accumulation_type(dtype))
    out.dtype, out.shape = dtype, g.shape(input)
    return out


def _rms_eps(eps, stash_type) -> float:
    """``eps``, or where the call gives none, PyTorch's default: the machine epsilon of the type it computes in (not
    RMSNormalization's default of 1e-5)."""
    return float(torch.finfo(torch_from_onnx(stash_type)).eps) if eps is None else eps


def _promoted(a: int, b: int) -> int:
    return onnx_from_torch(torch.promote_types(torch_from_onnx(a), torch_from_onnx(b)))


@symbolic("aten::group_norm")
@parse_args("v", "i", "v", "v", "f", "none")
def group_norm(g, input, num_groups, weight, bias, eps, cudnn_enabled=None):
    """Standardize each group of channels: view as [N, groups, -1], normalize the last axis, view back."""
    rank = require_rank(g, input)
    x = cast(g, input, accumulation_type(g.dtype(input)))
    grouped = reshape(g, x, [0, num_groups, -1])
    normalized, _, _ = standardize(g, grouped, [2], eps)
    normalized = reshape(g, normalized, shape_of(g, input))
    out = _affine(g, normalized, weight, bias, [-1] + [1] * (rank - 2))
    return cast(g, out, g.dtype(input))


@symbolic("aten::group_norm", since=21)
@parse_args("v", "i", "v", "v", "f", "none")
def group_normalization(g, input, num_groups, weight, bias, eps, cudnn_enabled=None):
    """GroupNormalization-21, which scales and shifts per channel as PyTorch does (its opset-18 version scaled per
    group), its statistics in float32 for half inputs (``stash_type``). Doubles (normalized in double by PyTorch) and
    an unknown channel count without a weight stay decomposed."""
    dtype, channels = g.dtype(input), _static_channels(g, input, weight, bias)
    if dtype == DOUBLE or channels is None:
        return group_norm.__wrapped__(g, input, num_groups, weight, bias, eps)
    scale = g.const(np.ones(channels), dtype) if weight is None else cast(g, weight, dtype)
    shift = g.const(np.zeros(channels), dtype) if bias is None else cast(g, bias, dtype)
    out = g.op("GroupNormalization", input, scale, shift, num_groups_i=num_groups, epsilon_f=eps,
               stash_type_i=accumulation_type(dtype))
    out.dtype, out.shape = dtype, g.shape(input)
    return out


@symbolic("aten::instance_norm")
@parse_args("v", "v", "v", "v", "v", "b", "f", "f", "none")
def instance_norm(g, input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn=None):
    if not use_input_stats:
        # Eval mode with tracked statistics: exactly batch norm on the running estimates.
        return normalize_batch(g, input, weight, bias, running_mean, running_var, False, momentum, eps)
    channels = _static_channels(g, input, weight, bias)
    if channels is not None and _instance_norm_op_takes(g, g.dtype(input)):
        scale = weight if weight is not None else g.const([1.0] * channels, g.dtype(input))
        shift = bias if bias is not None else g.const([0.0] * channels, g.dtype(input))
        return g.op("InstanceNormalization", input, cast(g, scale, g.dtype(input)), cast(g, shift, g.dtype(input)),
                    epsilon_f=eps)
    rank = require_rank(g, input)
    x = cast(g, input, accumulation_type(g.dtype(input)))
    normalized, _, _ = standardize(g, x, list(range(2, rank)), eps)
    return cast(g, _affine(g, normalized, weight, bias, [-1] + [1] * (rank - 2)), g.dtype(input))


def _instance_norm_op_takes(g, elem_type) -> bool:
    """InstanceNormalization's types, but for double where ONNX Runtime has no kernel: that is decomposed."""
    return elem_type in _INSTANCE_NORM_TYPES and not (
        elem_type == TensorProto.DOUBLE and applies(g, INSTANCE_NORM_DOUBLE_DECOMPOSED))


def _static_channels(g, input, weight, bias):
    for param in (weight, bias):
        if param is not None and param.shape and isinstance(param.shape[0], int):
            return param.shape[0]
    dims = g.dims(input)
    return dims[1] if dims is not None and len(dims) > 1 else None

