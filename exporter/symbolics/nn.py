"""Neural-network layers: convolution, batch normalization, linear, dropout."""

from __future__ import annotations

import torch
from onnx import TensorProto

from exporter import dtypes
from exporter.lowering.core import (
    cast,
    constant_value,
    require_rank,
    scalar_like,
    slice_op,
    unsqueeze,
)
from exporter.lowering.normalization import normalize_batch
from exporter.lowering.reductions import vector_norm
from exporter.lowering.shape import pad_op
from exporter.registry import REGISTRY, parse_args, symbolic, unsupported


def _conv(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    rank = require_rank(g, weight, "weight")
    spatial = rank - 2
    pads = _same_pads(g, weight, _expand(dilation, spatial)) if padding == "same" else None
    if padding == "valid":
        padding = [0] * spatial
    attrs = dict(
        strides_i=_expand(stride, spatial),
        pads_i=pads or _expand(padding, spatial) * 2,
        dilations_i=_expand(dilation, spatial),
        group_i=groups,
        kernel_shape_i=list(weight.shape[2:]) if weight.shape and all(isinstance(k, int) for k in weight.shape[2:]) else None,
    )
    inputs = [input, weight] + ([bias] if bias is not None else [])
    if transposed:
        output_padding = _expand(output_padding, spatial)
        windows = zip(output_padding, attrs["strides_i"], attrs["dilations_i"], strict=True)
        if any(o >= max(s, d) for o, s, d in windows):
            return _conv_transpose_large_output_padding(g, input, weight, bias, attrs, output_padding)
        if any(output_padding):
            attrs["output_padding_i"] = output_padding
        return g.op("ConvTranspose", *inputs, **attrs)
    return g.op("Conv", *inputs, **attrs)


def _conv_transpose_large_output_padding(g, input, weight, bias, attrs, output_padding):
    """A transposed convolution whose output padding is not below its stride or dilation (PyTorch's quantized
    ConvTranspose accepts it; ONNX's ConvTranspose requires it below both). Output padding only appends positions at
    the end, and past the full transposed convolution no input contributes: so the end pad shrinks by it first, the
    rest is appended as zeros (Pad), and the bias is added after."""
    spatial = len(output_padding)
    pads = list(attrs["pads_i"])
    kept, appended = [], []
    windows = zip(output_padding, attrs["strides_i"], attrs["dilations_i"], strict=True)
    for axis, (extra, stride, dilation) in enumerate(windows):
        if extra < max(stride, dilation):
            kept.append(extra)
            appended.append(0)
            continue
        end = pads[spatial + axis]
        pads[spatial + axis] = max(end - extra, 0)
        kept.append(0)
        appended.append(max(extra - end, 0))
    attrs = dict(attrs, pads_i=pads)
    if any(kept):
        attrs["output_padding_i"] = kept
    out = g.op("ConvTranspose", input, weight, **attrs)
    out.shape = (None,) * (spatial + 2)
    if any(appended):
        torch_pads = [p for axis in reversed(range(spatial)) for p in (0, appended[axis])]
        out = pad_op(g, out, torch_pads, "constant")
    if bias is not None:
        out = g.op("Add", out, unsqueeze(g, bias, list(range(1, spatial + 1))))
    return out


def _same_pads(g, weight, dilation):
    """ONNX pads for padding='same' (stride 1): dilation * (kernel - 1) in all, the odd one at the end as PyTorch
    does. Explicit pads rather than auto_pad: ONNX Runtime rejects auto_pad SAME with dilation."""
    kernel = list(weight.shape[2:]) if weight.shape else None
    if kernel is None or any(not isinstance(k, int) for k in kernel):
        raise unsupported(g.op_kind, g.opset, "padding='same' needs a static kernel size")
    totals = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
    return [t // 2 for t in totals] + [t - t // 2 for t in totals]


def _expand(values, count):
    values = list(values) if isinstance(values, (list, tuple)) else [values]
    return values * count if len(values) == 1 else values


@symbolic("aten::_convolution")
@parse_args("v", "v", "v", "is", "is", "is", "b", "is", "i")
def convolution_internal(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, *flags):
    return _conv(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@symbolic("aten::convolution")
@parse_args("v", "v", "v", "is", "is", "is", "b", "is", "i")
def convolution(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    return _conv(g, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@symbolic("aten::conv1d", "aten::conv2d", "aten::conv3d")
def conv_nd(g, input, weight, bias, stride, padding, dilation, groups):
    padding = constant_value(padding)
    return _conv(g, input, weight, bias, constant_value(stride), padding, constant_value(dilation), False, [0],
                 int(constant_value(groups)))


@symbolic("aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d")
def conv_transpose_nd(g, input, weight, bias, stride, padding, output_padding, groups, dilation):
    return _conv(g, input, weight, bias, constant_value(stride), constant_value(padding), constant_value(dilation),
                 True, constant_value(output_padding), int(constant_value(groups)))


@symbolic("aten::linear")
def linear(g, input, weight, bias=None):
    if g.rank(input) == 2 and bias is not None:
        return g.op("Gemm", input, weight, bias, transB_i=1)
    out = g.op("MatMul", input, g.op("Transpose", weight, perm_i=[1, 0]))
    if bias is not None:
        out = g.op("Add", out, bias)
    return out


@symbolic("aten::dropout", "aten::dropout_", "aten::feature_dropout", "aten::feature_dropout_", "aten::alpha_dropout",
          "aten::alpha_dropout_", "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_")
@parse_args("v", "f", "b")
def dropout(g, input, p, train):
    """The identity unless the call itself trains (``train``: nn.Dropout records it in a training export,
    F.dropout(training=True) always). Then, as PyTorch: p = 1 gives zeros; otherwise each element (each channel,
    [N, C, 1, ...], for the feature_ forms) is kept with probability 1 - p, plain dropout scaling the kept ones by
    1 / (1 - p), alpha dropout setting the dropped ones to SELU's negative saturation and re-normalizing. The mask
    is drawn with RandomUniformLike."""
    trivial = _trivial_dropout(g, input, p, train)
    if trivial is not None:
        return trivial
    kind = g.op_kind.rstrip("_")
    keep = _keep_mask(g, input, p, per_channel=kind.startswith("aten::feature"))
    if "alpha" not in kind:
        return g.op("Mul", g.op("Mul", input, keep), scalar_like(g, 1.0 / (1.0 - p), input))
    # a * (x if kept else -alpha) + alpha * a * p, with alpha = SELU's scale * alpha, in PyTorch's order of operations
    # so that the dropped value is the same number.
    alpha = 1.7580993408473766
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    shift = g.op("Add", g.op("Mul", g.op("Sub", keep, scalar_like(g, 1.0, keep)), scalar_like(g, alpha * a, input)),
                 scalar_like(g, alpha * a * p, input))
    return g.op("Add", g.op("Mul", input, g.op("Mul", keep, scalar_like(g, a, input))), shift)


@symbolic("aten::dropout", "aten::dropout_", since=12)
@parse_args("v", "f", "b")
def dropout_training_mode(g, input, p, train):
    """Plain dropout as ONNX's Dropout with ``training_mode`` (opset 12); the other forms keep their own mask. Its
    keep mask is read and applied (x * mask * 1 / (1 - p)): ONNX Runtime 1.31's graph optimizations delete a Dropout
    whose mask is unread between Softmax and MatMul (measured: softmax(x) -> dropout -> matmul ran undropped)."""
    trivial = _trivial_dropout(g, input, p, train)
    if trivial is not None:
        return trivial
    _, keep = g.op("Dropout", input, g.const(p, g.dtype(input)), g.const(True), outputs=2)
    keep.dtype, keep.shape = TensorProto.BOOL, g.shape(input)
    out = g.op("Mul", g.op("Mul", input, cast(g, keep, g.dtype(input))), scalar_like(g, 1.0 / (1.0 - p), input))
    out.dtype, out.shape = g.dtype(input), g.shape(input)
    return out


def _trivial_dropout(g, input, p, train):
    """The result of a dropout that draws no mask (not training, p = 0: the input; p = 1: zeros), else None."""
    if not train or p == 0:
        return input
    if p == 1:
        return g.op("Mul", input, scalar_like(g, 0.0, input))
    return None


def _keep_mask(g, input, p, per_channel):
    """1.0 where an element (or a whole channel) is kept, with probability 1 - p, else 0.0; input's dtype."""
    shape_source = input
    if per_channel:
        rank = require_rank(g, input)
        if rank < 3:
            raise unsupported(g.op_kind, g.opset, "feature dropout needs an input with spatial axes")
        spatial = list(range(2, rank))
        shape_source = slice_op(g, input, spatial, [0] * len(spatial), [1] * len(spatial))
    uniform = g.op("RandomUniformLike", shape_source, low_f=0.0, high_f=1.0)
    uniform.dtype = g.dtype(input)
    kept = g.op("Not", g.op("Less", uniform, scalar_like(g, p, input)))
    return cast(g, kept, g.dtype(input))


# -- convolution forms: padding by name, time-batch-channel layout; weight normalization -----------------------------
@symbolic("aten::_convolution_mode")
@parse_args("v", "v", "v", "is", "s", "is", "i")
def convolution_mode(g, input, weight, bias, stride, padding, dilation, groups):
    """conv with padding="same" or "valid" (what conv1d/2d/3d record for a string padding)."""
    return _conv(g, input, weight, bias, stride, padding, dilation, False, [0], groups)


@symbolic("aten::conv_tbc")
@parse_args("v", "v", "v", "i")
def conv_tbc(g, self, weight, bias, pad):
    """conv_tbc(input [time, batch, in], weight [kernel, in, out], bias [out], pad): a 1-d convolution over time
    in time-batch-channel layout, i.e. Conv on [batch, in, time] with the weight as [out, in, kernel]."""
    conv_input = g.op("Transpose", self, perm_i=[1, 2, 0])
    conv_weight = g.op("Transpose", weight, perm_i=[2, 1, 0])
    kernel = weight.shape[0] if weight.shape and isinstance(weight.shape[0], int) else None
    output = g.op("Conv", conv_input, conv_weight, bias, pads_i=[pad, pad], strides_i=[1], dilations_i=[1],
                  **({"kernel_shape_i": [kernel]} if kernel is not None else {}))
    return g.op("Transpose", output, perm_i=[2, 0, 1])


@symbolic("aten::_weight_norm")
@parse_args("v", "v", "i")
def weight_norm(g, v, magnitude, dim):
    """_weight_norm(v, g, dim) = v * g / ||v||, the norm taken over every dim but ``dim`` (over all when -1)."""
    rank = require_rank(g, v, "weight")
    axes = None if dim == -1 else [a for a in range(rank) if a != dim % rank]
    norm = vector_norm(g, v, 2, axes, True, None)
    return g.op("Mul", v, g.op("Div", magnitude, norm))


@symbolic("aten::batch_norm")
@parse_args("v", "v", "v", "v", "v", "b", "f", "f", "b")
def batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return normalize_batch(g, input, weight, bias, running_mean, running_var, training, momentum, eps)


@symbolic("aten::native_batch_norm")
@parse_args("v", "v", "v", "v", "v", "b", "f", "f")
def native_batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """batch_norm as torch.export's programs hold it: (output, save_mean, save_invstd). The saved statistics serve
    the backward pass: empty in eval mode, as PyTorch returns them; the batch's statistics in training mode, which
    are not computed (an error where the model reads them)."""
    out = normalize_batch(g, input, weight, bias, running_mean, running_var, training, momentum, eps)
    if not training:
        empty = g.const(torch.empty(0, dtype=dtypes.torch_from_onnx(g.dtype(input) or TensorProto.FLOAT)))
        return out, empty, empty
    if g.output_used(1) or g.output_used(2):
        raise unsupported(g.op_kind, g.opset, "the saved batch statistics of a training-mode batch norm")
    return out, None, None


@symbolic("aten::_native_batch_norm_legit")
def batch_norm_legit(g, input, weight, bias, *args):
    """torch.export's batch_norm with its own statistics: (output, save_mean, save_invstd). The ``no_stats``
    overload has no running statistics; the default one updates them in place, which an ONNX model cannot hold."""
    if g.overload == "no_stats":
        return native_batch_norm(g, input, weight, bias, None, None, *args)
    return native_batch_norm(g, input, weight, bias, *args)


@symbolic("aten::_native_batch_norm_legit_functional")
def batch_norm_functional(g, input, weight, bias, running_mean, running_var, training, momentum, eps):
    """Training-mode batch_norm of torch.export's functional programs: (output, save_mean, save_invstd, updated
    running_mean, updated running_var). The updated statistics go back into the model's buffers, which an ONNX model
    has none of: the ONNX model returns the output only, as a training-mode TorchScript export does."""
    out, _, _ = native_batch_norm(g, input, weight, bias, running_mean, running_var, training, momentum, eps)
    return out, None, None, running_mean, running_var


@symbolic("aten::native_dropout")
def native_dropout(g, input, p, train):
    """dropout as torch.export's programs hold it: (output, mask); the mask serves the backward pass only."""
    return REGISTRY.lookup("aten::dropout", g.opset)(g, input, p, train), None


@symbolic("aten::_native_batch_norm_legit_no_training")
@parse_args("v", "v", "v", "v", "v", "f", "f")
def batch_norm_inference(g, input, weight, bias, running_mean, running_var, momentum, eps):
    """The functional eval-mode batch_norm of torch.export's programs: (output, save_mean, save_invstd) as
    :func:`native_batch_norm`."""
    return native_batch_norm(g, input, weight, bias, running_mean, running_var, False, momentum, eps)
