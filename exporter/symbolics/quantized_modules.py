"""The ``quantized::`` ops of PyTorch's quantized modules (torch.ao.nn.quantized, its fused ConvReLU/LinearReLU and
QFunctional) in QDQ form: the quantized inputs are dequantized, the float op computes, and the result is quantized
with the output scale and zero point the op was given.

Convolution and linear weights arrive packed (a TorchScript object holding the int8 weight, the float bias and the
convolution's geometry); they are unpacked here, at export time, into int8 constants behind a DequantizeLinear (see
``qdq.constant_weight``) and a float32 bias, which PyTorch's fbgemm/qnnpack kernels also add in float.
"""

from __future__ import annotations

from exporter.lowering.qdq import (
    QDQ_OPSET,
    QTensor,
    constant_weight,
    dequantize,
    is_float_weight,
    quantize,
    takes_quantized,
    with_float_bias,
)
from exporter.registry import REGISTRY, parse_args, symbolic


def _float(g, name: str, *args):
    """The float symbolic of ``name`` at this opset, applied to ``args``."""
    return REGISTRY.lookup(name, g.opset)(g, *args)


def _output(g, result, like: QTensor, scale, zero_point, relu: bool = False) -> QTensor:
    if relu:
        result = g.op("Relu", result)
    return quantize(g, result, scale, zero_point, like.integer_type)


def _convolution(g, qx, packed, scale, zero_point, relu: bool, spatial: int):
    weight, bias = packed.unpack()
    stride, padding, dilation = packed.stride(), packed.padding(), packed.dilation()
    transposed = bool(packed.transpose())
    output_padding = packed.output_padding() if transposed else [0] * len(stride)
    if spatial == 1:
        # 1-d convolutions are packed as 2-d ones over a unit height: weight [O, I, 1, K], stride [1, s], ...
        weight = weight.squeeze(2)
        stride, padding, dilation, output_padding = (v[1:] for v in (stride, padding, dilation, output_padding))
    w = constant_weight(g, weight)
    x = dequantize(g, qx)
    result = with_float_bias(g, lambda b: _float(g, "aten::convolution", x, w, b, stride, padding, dilation,
                                                 transposed, output_padding, packed.groups()),
                             bias, spatial, is_float_weight(g, weight))
    return _output(g, result, qx, scale, zero_point, relu)


def _register_convolutions():
    for name, spatial in (("conv1d", 1), ("conv2d", 2), ("conv3d", 3),
                          ("conv_transpose1d", 1), ("conv_transpose2d", 2), ("conv_transpose3d", 3)):
        for relu in (False, True):
            if relu and name.startswith("conv_transpose"):
                continue
            op = f"quantized::{name}_relu" if relu else f"quantized::{name}"

            def convolution(g, qx, packed, output_scale, output_zero_point, *, _relu=relu, _spatial=spatial):
                return _convolution(g, qx, packed, output_scale, output_zero_point, _relu, _spatial)

            symbolic(op, since=QDQ_OPSET)(takes_quantized(parse_args("v", "v", "f", "i")(convolution)))


_register_convolutions()


def _linear(g, qx, packed, scale, zero_point, relu: bool):
    import torch

    weight, bias = torch.ops.quantized.linear_unpack(packed)
    x = dequantize(g, qx)
    w = constant_weight(g, weight)
    result = with_float_bias(g, lambda b: _float(g, "aten::linear", x, w, b), bias, 0, is_float_weight(g, weight))
    return _output(g, result, qx, scale, zero_point, relu)


@symbolic("quantized::linear", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i):
    return _linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i, relu=False)


@symbolic("quantized::linear_relu", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def linear_relu(g, X, W_prepack, Y_scale_i, Y_zero_point_i):
    return _linear(g, X, W_prepack, Y_scale_i, Y_zero_point_i, relu=True)


def _binary(g, op_type: str, qa, qb, scale, zero_point, relu: bool):
    result = g.op(op_type, dequantize(g, qa), dequantize(g, qb))
    return _output(g, result, qa, scale, zero_point, relu)


@symbolic("quantized::add", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def add(g, qa, qb, scale, zero_point):
    return _binary(g, "Add", qa, qb, scale, zero_point, relu=False)


@symbolic("quantized::add_relu", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def add_relu(g, qa, qb, scale, zero_point):
    return _binary(g, "Add", qa, qb, scale, zero_point, relu=True)


@symbolic("quantized::mul", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def mul(g, qa, qb, scale, zero_point):
    return _binary(g, "Mul", qa, qb, scale, zero_point, relu=False)


@symbolic("quantized::mul_relu", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "f", "i")
def mul_relu(g, qa, qb, scale, zero_point):
    return _binary(g, "Mul", qa, qb, scale, zero_point, relu=True)


def _cat(g, qx, dim, scale, zero_point, relu: bool):
    """cat(qx, dim, scale?, zero_point?): without an output scale the first input's quantization is kept."""
    first = qx[0]
    result = g.op("Concat", *(dequantize(g, q) for q in qx), axis_i=dim)
    if scale is None:
        return _output(g, result, first, first.scale, first.zero_point, relu)
    return _output(g, result, first, scale, zero_point, relu)


@symbolic("quantized::cat", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "i", "f", "i")
def cat(g, qx, dim, scale, zero_point):
    return _cat(g, qx, dim, scale, zero_point, relu=False)


@symbolic("quantized::cat_relu", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "i", "f", "i")
def cat_relu(g, qx, dim, scale, zero_point):
    return _cat(g, qx, dim, scale, zero_point, relu=True)


@symbolic("quantized::hardswish", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "f", "i")
def hardswish(g, input, output_scale, output_zero_point):
    return _output(g, _float(g, "aten::hardswish", dequantize(g, input)), input, output_scale, output_zero_point)


@symbolic("quantized::sigmoid", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "f", "i")
def sigmoid(g, qx, output_scale, output_zero_point):
    return _output(g, _float(g, "aten::sigmoid", dequantize(g, qx)), qx, output_scale, output_zero_point)


@symbolic("quantized::leaky_relu", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "f", "none", "f", "i")
def leaky_relu(g, qx, negative_slope, inplace, output_scale, output_zero_point):
    result = _float(g, "aten::leaky_relu", dequantize(g, qx), negative_slope)
    return _output(g, result, qx, output_scale, output_zero_point)


@symbolic("quantized::batch_norm", "quantized::batch_norm1d", "quantized::batch_norm2d", "quantized::batch_norm3d",
          since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "v", "v", "v", "f", "f", "i")
def batch_norm(g, qx, weight, bias, mean, var, eps, output_scale, output_zero_point):
    result = _float(g, "aten::batch_norm", dequantize(g, qx), weight, bias, mean, var, False, 0.0, eps, False)
    return _output(g, result, qx, output_scale, output_zero_point)


@symbolic("quantized::layer_norm", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "is", "v", "v", "f", "f", "i")
def layer_norm(g, input, normalized_shape, weight, bias, eps, output_scale, output_zero_point):
    result = _float(g, "aten::layer_norm", dequantize(g, input), normalized_shape, weight, bias, eps, False)
    return _output(g, result, input, output_scale, output_zero_point)


@symbolic("quantized::group_norm", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "i", "v", "v", "f", "f", "i")
def group_norm(g, input, num_groups, weight, bias, eps, output_scale, output_zero_point):
    result = _float(g, "aten::group_norm", dequantize(g, input), num_groups, weight, bias, eps, False)
    return _output(g, result, input, output_scale, output_zero_point)


@symbolic("quantized::instance_norm", since=QDQ_OPSET)
@takes_quantized
@parse_args("v", "v", "v", "f", "f", "i")
def instance_norm(g, input, weight, bias, eps, output_scale, output_zero_point):
    result = _float(g, "aten::instance_norm", dequantize(g, input), weight, bias, None, None, True, 0.0, eps, False)
    return _output(g, result, input, output_scale, output_zero_point)
