"""Activations (Relu, LeakyRelu, Elu, Selu, Celu, HardSigmoid, HardSwish, Softplus, PRelu, Softmax, ...).

Each maps to its ONNX op where one exists at the target opset (several arrive late: Celu 12, HardSwish 14, Mish 18,
Gelu 20) and, as a runtime workaround, where ONNX Runtime's CPU provider has the kernel for the element type (most
activations lack double kernels); otherwise to the exact identity the ONNX spec itself gives for the op.
"""

from __future__ import annotations

import math

from exporter import dtypes
from exporter.dtypes import FLOAT
from exporter.lowering.activations import (
    native_activation,
    softmax_op,
    stable_softplus,
    times,
)
from exporter.lowering.arithmetic import (
    as_float,
    clamp_value,
    maximum_value,
    typed_scalar,
    unary_math,
)
from exporter.lowering.comparison import less, select
from exporter.lowering.core import cast, normalize_dim, require_opset, require_rank, reshape, unsqueeze
from exporter.lowering.shape import split_halves
from exporter.registry import parse_args, symbolic, unsupported


def _negative_part(g, x):
    """min(x, 0), from Relu, which every float type has at every opset."""
    return g.op("Neg", g.op("Relu", g.op("Neg", x)))


@symbolic("aten::relu", "aten::relu_")
def relu(g, self):
    if dtypes.is_float(g.dtype(self)):
        return g.op("Relu", self)
    return maximum_value(g, self, typed_scalar(g, 0, self))


@symbolic("aten::sigmoid", "aten::sigmoid_")
def sigmoid(g, self):
    return g.op("Sigmoid", as_float(g, self))


@symbolic("aten::tanh", "aten::tanh_")
def tanh(g, self):
    return g.op("Tanh", as_float(g, self))


@symbolic("aten::relu6", "aten::relu6_")
def relu6(g, self):
    return clamp_value(g, self, 0, 6)


@symbolic("aten::hardtanh", "aten::hardtanh_")
@parse_args("v", "f", "f")
def hardtanh(g, self, min_val=-1.0, max_val=1.0):
    return clamp_value(g, self, min_val, max_val)


@symbolic("aten::leaky_relu", "aten::leaky_relu_")
@parse_args("v", "f")
def leaky_relu(g, self, negative_slope=0.01):
    if native_activation(g, "LeakyRelu", self):
        return g.op("LeakyRelu", self, alpha_f=negative_slope)
    return g.op("Add", g.op("Relu", self), times(g, _negative_part(g, self), negative_slope))


@symbolic("aten::rrelu", "aten::rrelu_")
@parse_args("v", "f", "f", "b")
def rrelu(g, self, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if training:
        raise unsupported(g.op_kind, g.opset, "rrelu in training mode draws random slopes, which ONNX cannot reproduce")
    return leaky_relu(g, self, (lower + upper) / 2)


def _elu_formula(g, x, alpha, input_scale=1.0):
    # x for x > 0, alpha * (exp(x * input_scale) - 1) otherwise; min(x, 0) keeps exp from overflowing.
    negative = g.op("Sub", g.op("Exp", times(g, _negative_part(g, x), input_scale)), typed_scalar(g, 1, x))
    return g.op("Add", g.op("Relu", x), times(g, negative, alpha))


@symbolic("aten::elu", "aten::elu_")
@parse_args("v", "f", "f", "f")
def elu(g, self, alpha=1.0, scale=1.0, input_scale=1.0):
    if input_scale == 1.0 and native_activation(g, "Elu", self):
        return times(g, g.op("Elu", self, alpha_f=alpha), scale)
    return times(g, _elu_formula(g, self, alpha, input_scale), scale)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@symbolic("aten::selu", "aten::selu_")
def selu(g, self):
    if native_activation(g, "Selu", self):
        return g.op("Selu", self, alpha_f=_SELU_ALPHA, gamma_f=_SELU_SCALE)
    return times(g, _elu_formula(g, self, _SELU_ALPHA), _SELU_SCALE)


@symbolic("aten::celu", "aten::celu_")
@parse_args("v", "f")
def celu(g, self, alpha=1.0):
    if g.dtype(self) == FLOAT and native_activation(g, "Celu", self, since=12):  # Celu-12 takes float only
        return g.op("Celu", self, alpha_f=alpha)
    return _elu_formula(g, self, alpha, 1.0 / alpha)


def _tanh_gelu(g, x):
    # 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
    cube = g.op("Mul", x, g.op("Mul", x, x))
    inner = times(g, g.op("Add", x, times(g, cube, 0.044715)), math.sqrt(2.0 / math.pi))
    return g.op("Mul", times(g, x, 0.5), g.op("Add", typed_scalar(g, 1, x), g.op("Tanh", inner)))


@symbolic("aten::gelu", "aten::gelu_")
@parse_args("v", "s")
def gelu(g, self, approximate="none"):
    if native_activation(g, "Gelu", self, since=20):
        return g.op("Gelu", self, approximate_s=approximate)
    if approximate == "tanh":
        return _tanh_gelu(g, self)
    require_opset(g, 9, "exact gelu needs ONNX Erf")
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    # Div by sqrt(2), not Mul by its inverse: the form ONNX Runtime's Gelu fusion recognises.
    error = unary_math(g, "Erf", g.op("Div", self, typed_scalar(g, math.sqrt(2.0), self)))
    return g.op("Mul", times(g, self, 0.5), g.op("Add", typed_scalar(g, 1, self), error))


@symbolic("aten::silu", "aten::silu_")
def silu(g, self):
    return g.op("Mul", self, g.op("Sigmoid", self))


@symbolic("aten::mish", "aten::mish_")
def mish(g, self):
    if native_activation(g, "Mish", self, since=18):
        return g.op("Mish", self)
    return g.op("Mul", self, g.op("Tanh", stable_softplus(g, self)))


@symbolic("aten::log_sigmoid")
def log_sigmoid(g, self):
    return g.op("Neg", stable_softplus(g, g.op("Neg", self)))


@symbolic("aten::softsign")
def softsign(g, self):
    if native_activation(g, "Softsign", self):
        return g.op("Softsign", self)
    return g.op("Div", self, g.op("Add", typed_scalar(g, 1, self), g.op("Abs", self)))


def _hardsigmoid(g, x):
    if native_activation(g, "HardSigmoid", x):
        return g.op("HardSigmoid", x, alpha_f=1.0 / 6, beta_f=0.5)
    return clamp_value(g, g.op("Add", g.op("Div", x, typed_scalar(g, 6, x)), typed_scalar(g, 0.5, x)), 0, 1)


@symbolic("aten::hardsigmoid", "aten::hardsigmoid_")
def hardsigmoid(g, self):
    return _hardsigmoid(g, self)


@symbolic("aten::hardswish", "aten::hardswish_")
def hardswish(g, self):
    if native_activation(g, "HardSwish", self, since=14):
        return g.op("HardSwish", self)
    return g.op("Mul", self, _hardsigmoid(g, self))


@symbolic("aten::tanhshrink")
def tanhshrink(g, self):
    return g.op("Sub", self, g.op("Tanh", self))


@symbolic("aten::softshrink")
@parse_args("v", "f")
def softshrink(g, self, lambd=0.5):
    if native_activation(g, "Shrink", self, since=9):
        return g.op("Shrink", self, lambd_f=lambd, bias_f=lambd)
    # x - clamp(x, -lambd, lambd) is x - lambd above, x + lambd below and 0 in between.
    return g.op("Sub", self, clamp_value(g, self, -lambd, lambd))


@symbolic("aten::hardshrink")
@parse_args("v", "f")
def hardshrink(g, self, lambd=0.5):
    if native_activation(g, "Shrink", self, since=9):
        return g.op("Shrink", self, lambd_f=lambd, bias_f=0.0)
    outside = g.op("Or", less(g, typed_scalar(g, lambd, self), self), less(g, self, typed_scalar(g, -lambd, self)))
    return g.op("Mul", self, g.op("Cast", outside, to_i=g.dtype(self)))


@symbolic("aten::threshold", "aten::threshold_")
def threshold(g, self, threshold, value):
    dtype = g.dtype(self)
    above = less(g, cast(g, threshold, dtype), self)
    return select(g, above, self, cast(g, value, dtype))


@symbolic("aten::prelu", "aten::_prelu_kernel")
def prelu(g, self, weight):
    rank = require_rank(g, self)
    if rank >= 2 and g.rank(weight) == 1:
        # PyTorch's weight is per channel (dim 1); ONNX broadcasts the slope from the right.
        weight = unsqueeze(g, weight, list(range(1, rank - 1))) if rank > 2 else weight
    if rank == 0:
        weight = reshape(g, weight, [])  # a 0-d input keeps its shape (the single slope must not broadcast it up)
    if native_activation(g, "PRelu", self):
        return g.op("PRelu", self, weight)
    return g.op("Sub", g.op("Relu", self), g.op("Mul", weight, g.op("Relu", g.op("Neg", self))))


@symbolic("aten::glu")
@parse_args("v", "i")
def glu(g, self, dim=-1):
    axis = normalize_dim(dim, require_rank(g, self))
    first, second = split_halves(g, self, axis)
    return g.op("Mul", first, g.op("Sigmoid", second))


@symbolic("aten::softmax", "aten::special_softmax")
@parse_args("v", "i", "v")
def softmax(g, self, dim, dtype=None):
    return softmax_op(g, "Softmax", self, dim, dtype)


@symbolic("aten::softmax_op")
@parse_args("v", "i", "b")
def _softmax_internal(g, self, dim, half_to_float=False):
    return softmax_op(g, "Softmax", self, dim, None if not half_to_float else 6)


@symbolic("aten::log_softmax", "aten::special_log_softmax")
@parse_args("v", "i", "v")
def log_softmax(g, self, dim, dtype=None):
    return softmax_op(g, "LogSoftmax", self, dim, dtype)


@symbolic("aten::_log_softmax")
@parse_args("v", "i", "b")
def _log_softmax_internal(g, self, dim, half_to_float=False):
    return softmax_op(g, "LogSoftmax", self, dim, None if not half_to_float else 6)


@symbolic("aten::softplus", "aten::softplus_")
@parse_args("v", "f", "f")
def softplus(g, self, beta=1.0, threshold=20.0):
    scaled = times(g, self, beta)
    smooth = times(g, stable_softplus(g, scaled), 1.0 / beta)
    # PyTorch returns x where beta * x > threshold; the two differ by log1p(exp(-threshold)) / beta, which
    # is below float32 resolution (exp(-17) < 2^-24) for the usual thresholds, so only low ones need Where.
    if threshold >= 17.0:
        return smooth
    return select(g, less(g, typed_scalar(g, threshold, self), scaled), self, smooth)
