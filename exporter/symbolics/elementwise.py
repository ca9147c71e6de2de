"""Element-wise arithmetic and activations (Add, Sub, Mul, Div, Relu, Sigmoid, ...)."""

from __future__ import annotations

from exporter.registry import parse_args, symbolic
from exporter.symbolics._helpers import cast, g_scalar_mul, output_dtype, promote_all


def _binary(g, op_type, self, other):
    target, (a, b) = promote_all(g, self, other)
    return g.op(op_type, a, b)


@symbolic("aten::add", "aten::add_")
def add(g, self, other, alpha=None):
    if alpha is not None and alpha != 1:
        other = g_scalar_mul(g, other, alpha)
    return _binary(g, "Add", self, other)


@symbolic("aten::sub", "aten::sub_", "aten::rsub")
def sub(g, self, other, alpha=None):
    if g.node.kind() == "aten::rsub":
        self, other = other, self
        if alpha is not None and alpha != 1:
            self = g_scalar_mul(g, self, alpha)
    elif alpha is not None and alpha != 1:
        other = g_scalar_mul(g, other, alpha)
    return _binary(g, "Sub", self, other)


@symbolic("aten::mul", "aten::mul_")
def mul(g, self, other):
    return _binary(g, "Mul", self, other)


@symbolic("aten::relu", "aten::relu_")
def relu(g, self):
    return g.op("Relu", self)


@symbolic("aten::sigmoid", "aten::sigmoid_")
def sigmoid(g, self):
    return g.op("Sigmoid", self)


@symbolic("aten::tanh", "aten::tanh_")
def tanh(g, self):
    return g.op("Tanh", self)
