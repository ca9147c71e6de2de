"""Quantized tensors in QDQ form (QuantizeLinear/DequantizeLinear: opset 10; per-channel ``axis``: opset 13): the
``QTensor`` (integers, scale, zero point) a quantized value converts to, quantizing and dequantizing, constants
from packed weights and their float bias, float ops on quantized tensors and the layout of quantized model inputs
and outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from onnx import TensorProto

from exporter import ir
from exporter.dtypes import FLOAT
from exporter.errors import UnsupportedOperatorError
from exporter.lowering.core import cast
from exporter.lowering.runtime import QDQ_BIAS_AFTER_OP_AT_OPSET_10, QDQ_FLOAT_WEIGHT_BIAS_AFTER_OP, applies
from exporter.registry import unsupported

QDQ_OPSET = 10  # QuantizeLinear / DequantizeLinear


PER_CHANNEL_OPSET = 13  # their ``axis`` attribute


# TorchScript's ScalarType codes of the quantized dtypes -> the ONNX type of their integer values.
_QUANTIZED_CODES = {12: TensorProto.INT8, 13: TensorProto.UINT8, 14: TensorProto.INT32}


_INTEGER_OF_QUANTIZED = {torch.qint8: TensorProto.INT8, torch.quint8: TensorProto.UINT8, torch.qint32: TensorProto.INT32}


@dataclass(eq=False)
class QTensor:
    """A quantized tensor: ``(value - zero_point) * scale`` is the real number each integer stands for."""

    value: ir.Value  # uint8 / int8 integers
    scale: ir.Value  # float32; 0-d, or 1-D along ``axis``
    zero_point: ir.Value  # the integers' own type
    axis: int | None = None  # per-channel axis; None for one scale per tensor

    @property
    def integer_type(self) -> int:
        if self.value.dtype is None:
            raise ValueError(f"the integers of quantized {self.value.name!r} have no element type")
        return self.value.dtype


def contains_quantized(args: Any) -> bool:
    if isinstance(args, QTensor):
        return True
    return isinstance(args, (list, tuple)) and any(contains_quantized(a) for a in args)


def is_quantized_constant(x: Any) -> bool:
    """A quantized torch tensor the export holds as a constant (a ``quantize_per_tensor`` of constants, computed at
    export time)."""
    return isinstance(x, torch.Tensor) and x.is_quantized


def constants_as_qtensors(g, args: list) -> list:
    """``args`` with every quantized constant (also inside lists) a QTensor of constants, the form a quantized value
    computed at run time has, which the quantized symbolics take."""
    def converted(x: Any) -> Any:
        return constant_qtensor(g, x) if is_quantized_constant(x) else x

    return [type(a)(converted(t) for t in a) if isinstance(a, (list, tuple)) else converted(a) for a in args]


def require_qdq(g, axis: int | None = None) -> None:
    """QuantizeLinear/DequantizeLinear exist from opset 10, one scale per channel from opset 13."""
    what = g.op_kind if g.node is not None else "a quantized tensor"
    if g.opset < QDQ_OPSET:
        raise UnsupportedOperatorError(
            what, g.opset, QDQ_OPSET, f"quantized tensors are QuantizeLinear/DequantizeLinear: needs opset >= {QDQ_OPSET}")
    if axis is not None and g.opset < PER_CHANNEL_OPSET:
        raise UnsupportedOperatorError(
            what, g.opset, PER_CHANNEL_OPSET,
            f"per-channel quantization (QuantizeLinear's axis) needs opset >= {PER_CHANNEL_OPSET}")


def quantize(g, x, scale, zero_point, integer_type: int, axis: int | None = None) -> QTensor:
    """QuantizeLinear of float ``x``: ``clamp(round_half_even(x / scale) + zero_point)``, as PyTorch quantizes."""
    require_qdq(g, axis)
    if integer_type not in (TensorProto.UINT8, TensorProto.INT8):
        raise unsupported(g.op_kind, g.opset, "QuantizeLinear produces uint8 or int8 only (qint32 is not expressible)")
    scale = cast(g, g.value(scale), FLOAT)
    zero_point = cast(g, g.value(zero_point), integer_type)
    attributes = {} if axis is None else {"axis_i": axis}
    value = g.op("QuantizeLinear", cast(g, g.value(x), FLOAT), scale, zero_point, **attributes)
    value.dtype, value.shape = integer_type, g.value(x).shape
    return QTensor(value, scale, zero_point, axis)


def dequantize(g, q: QTensor) -> ir.Value:
    """The float32 tensor a QTensor stands for (DequantizeLinear)."""
    require_qdq(g, q.axis)
    attributes = {} if q.axis is None else {"axis_i": q.axis}
    result = g.op("DequantizeLinear", q.value, q.scale, q.zero_point, **attributes)
    result.dtype, result.shape = FLOAT, q.value.shape
    return result


def dequantized(g, args: Any) -> Any:
    """``args`` with every QTensor (also inside lists) replaced by its float tensor."""
    if isinstance(args, QTensor):
        return dequantize(g, args)
    if isinstance(args, (list, tuple)):
        return type(args)(dequantized(g, a) for a in args)
    return args


def constant_qtensor(g, tensor: torch.Tensor) -> QTensor:
    """A quantized constant (a packed weight) as integer, scale and zero-point constants."""
    values = g.const(tensor.int_repr().numpy())
    if tensor.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return QTensor(values, g.const(np.float32(tensor.q_scale())),
                       g.const(np.array(tensor.q_zero_point()).astype(values.const.dtype)))
    scales = tensor.q_per_channel_scales().numpy().astype(np.float32)
    zero_points = tensor.q_per_channel_zero_points().numpy().astype(values.const.dtype)
    return QTensor(values, g.const(scales), g.const(zero_points), tensor.q_per_channel_axis())


def constant_weight(g, tensor: torch.Tensor) -> ir.Value:
    """A quantized weight as the float tensor it stands for: int8 constants behind a DequantizeLinear, so runtimes
    keep the weight in 8 bits. Below opset 13 a per-channel weight (fbgemm's default) cannot be a DequantizeLinear
    (its axis is opset 13): it becomes its float32 values, exactly what DequantizeLinear would compute
    ((q - zp) * scale, one float32 product per element)."""
    if is_float_weight(g, tensor):
        return g.const(tensor.dequantize().numpy().astype(np.float32))
    return dequantize(g, constant_qtensor(g, tensor))


def is_float_weight(g, tensor: torch.Tensor) -> bool:
    """Whether ``constant_weight`` gives ``tensor`` as float32 values rather than a DequantizeLinear."""
    return tensor.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric) and g.opset < PER_CHANNEL_OPSET


def with_float_bias(g, op, bias: torch.Tensor | None, spatial: int, float_weight: bool) -> ir.Value:
    """``op(bias)``: the Conv or Gemm that ``op`` builds from its bias input (None: none) on dequantized inputs, with
    a packed weight's float32 ``bias`` [C], which PyTorch's quantized kernels also add in float. ``float_weight``
    says that the op's weight is float32 values (``is_float_weight``).

    Two ONNX Runtime rewrites of such an op need the bias after it, ``spatial`` axes from the end, as the
    subtraction of its negation (the same sum in floating point), which its fusions do not fold back into the op:
    - it quantizes the float bias with Round (opset 11) and cannot load an opset-10 model with it
      (``QDQ_BIAS_AFTER_OP_AT_OPSET_10``);
    - it re-quantizes a float weight per tensor (``QDQ_FLOAT_WEIGHT_BIAS_AFTER_OP``), so an op with a float weight
      takes the subtraction even without a bias (of zeros).
    """
    if float_weight and applies(g, QDQ_FLOAT_WEIGHT_BIAS_AFTER_OP):
        values = np.zeros(1, np.float32) if bias is None else bias.detach().numpy()
        return _bias_after(g, op, values, spatial)
    if bias is None:
        return op(None)
    values = bias.detach().numpy()
    if g.opset < _ROUND_OPSET and applies(g, QDQ_BIAS_AFTER_OP_AT_OPSET_10):
        return _bias_after(g, op, values, spatial)
    return op(g.const(values))


def _bias_after(g, op, values: np.ndarray, spatial: int) -> ir.Value:
    return g.op("Sub", op(None), g.const(-values.reshape([-1] + [1] * spatial)))


_ROUND_OPSET = 11


def integer_type_of_code(g, code: int) -> int:
    if code not in _QUANTIZED_CODES:
        raise unsupported(g.op_kind, g.opset, f"dtype code {code} is not a quantized dtype (quint8, qint8, qint32)")
    return _QUANTIZED_CODES[code]


# Ops that only build, unpack or index lists and tuples: they carry quantized tensors as they are, each with its
# own scale and zero point.
STRUCTURAL_OPS = frozenset({
    "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex",
    "aten::__getitem__",
})


def takes_quantized(fn):
    """Marks a symbolic that receives QTensors as they are; the others receive their float values."""
    fn.takes_quantized = True
    return fn


# Ops whose quantized output has fixed quantization parameters (PyTorch picks them for the op's output range),
# per integer type: sigmoid and hardsigmoid lie in [0, 1], tanh in [-1, 1].
_FIXED_QPARAMS: dict[str, dict[int, tuple[float, int]]] = {
    "aten::sigmoid": {TensorProto.UINT8: (1.0 / 256, 0), TensorProto.INT8: (1.0 / 256, -128)},
    "aten::hardsigmoid": {TensorProto.UINT8: (1.0 / 256, 0), TensorProto.INT8: (1.0 / 256, -128)},
    "aten::tanh": {TensorProto.UINT8: (2.0 / 256, 128), TensorProto.INT8: (2.0 / 256, 0)},
}


def call_on_dequantized(g, fn, args: list) -> Any:
    """A float op applied to quantized tensors (relu, max_pool2d, view, flatten ... on a quint8 tensor): the op
    runs on their float values, and each quantized output is quantized again. PyTorch's quantized kernels keep
    the input's scale and zero point for these ops (they only move, select or compare values), except those in
    ``_FIXED_QPARAMS``."""
    first = _first_qtensor(args)
    result = fn(g, *dequantized(g, args))
    if g.output_count == 1:
        return _requantize(g, result, 0, first)
    return type(result)(_requantize(g, r, i, first) for i, r in enumerate(result))


def _first_qtensor(args: Any) -> QTensor:
    for arg in args:
        if isinstance(arg, QTensor):
            return arg
        if isinstance(arg, (list, tuple)) and contains_quantized(arg):
            return _first_qtensor(arg)
    raise AssertionError("no quantized argument")


def _requantize(g, result: Any, index: int, like: QTensor) -> Any:
    if isinstance(result, (list, tuple)):
        return type(result)(_requantize(g, r, index, like) for r in result)
    if not isinstance(result, ir.Value) or not g.output_is_quantized(index):
        return result
    fixed = _FIXED_QPARAMS.get(g.op_kind.rstrip("_"), {}).get(like.integer_type)
    if fixed is not None:
        return quantize(g, result, fixed[0], fixed[1], like.integer_type)
    return quantize(g, result, like.scale, like.zero_point, like.integer_type, like.axis)


# -- the model's boundary ----------------------------------------------------------------------------------------
def input_qtensor(name: str, tensor: torch.Tensor, shape: tuple) -> QTensor:
    """A quantized input tensor as three graph inputs, typed as PyTorch's exporter's callers feed them: the integers, the
    scale as a float64 scalar and the zero point as an int64 scalar (:func:`typed_input` casts them for QDQ)."""
    if tensor.qscheme() not in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        raise unsupported("a per-channel quantized input", 0, "only per-tensor quantized inputs can be graph inputs")
    return QTensor(ir.Value(name, _INTEGER_OF_QUANTIZED[tensor.dtype], shape),
                   ir.Value(f"{name}_scale", TensorProto.DOUBLE, ()),
                   ir.Value(f"{name}_zero_point", TensorProto.INT64, ()))


def typed_input(g, q: QTensor) -> QTensor:
    """A quantized graph input with its scale as float32 and zero point in the integers' type, as QDQ needs."""
    require_qdq(g)
    return QTensor(q.value, cast(g, q.scale, FLOAT), cast(g, q.zero_point, q.integer_type))


def boundary_examples(example: Any) -> list[Any]:
    """An example output as the graph outputs it becomes (:func:`boundary_values`): a quantized tensor is three."""
    if isinstance(example, torch.Tensor) and example.is_quantized:
        return [example.int_repr(), torch.tensor(0.0), torch.tensor(0)]  # the scale and zero point are 0-d
    return [example]


def boundary_values(value: Any) -> list[Any]:
    """A graph input or output as ONNX values: a quantized tensor is three (integers, scale, zero point); as an
    output its scale is float32 and its zero point in the integers' type, as PyTorch's q_scale/q_zero_point."""
    if isinstance(value, QTensor):
        return [value.value, value.scale, value.zero_point]
    return [value]
