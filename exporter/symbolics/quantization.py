"""Quantization-aware training: fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine as a
QuantizeLinear/DequantizeLinear pair (QDQ), the form ONNX Runtime and quantization tools recognise.

fake_quantize(x) = (clamp(round(x / scale) + zero_point, quant_min, quant_max) - zero_point) * scale, rounding
half to even, as QuantizeLinear does. QDQ clamps to its integer type's range: uint8 when [quant_min, quant_max]
lies in 0..255, int8 when it lies in -128..127. A narrower range (QAT activations use 0..127) is a further clamp
of the dequantized value to [(quant_min - zero_point) * scale, (quant_max - zero_point) * scale], which equals
clamping the integers since every step is monotonic. QuantizeLinear exists from opset 10; its ``axis`` (one scale
per channel) from opset 13.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from exporter import ir
from exporter.dtypes import FLOAT
from exporter.lowering.arithmetic import clamp_value
from exporter.lowering.core import cast, require_rank, unsqueeze
from exporter.lowering.qdq import (
    PER_CHANNEL_OPSET,
    QDQ_OPSET,
    QTensor,
    dequantize,
    integer_type_of_code,
    quantize,
    takes_quantized,
)
from exporter.registry import parse_args, symbolic, unsupported

_RANGES = ((TensorProto.UINT8, 0, 255), (TensorProto.INT8, -128, 127))


def _integer_type(g, quant_min: int, quant_max: int) -> tuple[int, int, int]:
    for onnx_type, low, high in _RANGES:
        if low <= quant_min and quant_max <= high:
            return onnx_type, low, high
    raise unsupported(g.op_kind, g.opset, f"quantization range [{quant_min}, {quant_max}] does not fit 8 bits")


def _fake_quantize(g, x, scale, zero_point, quant_min: int, quant_max: int, axis: int | None):
    onnx_type, low, high = _integer_type(g, quant_min, quant_max)
    out_type = g.dtype(x)
    scale = cast(g, scale, FLOAT)
    zero_point = cast(g, zero_point, onnx_type)
    attributes = {} if axis is None else {"axis_i": axis}
    quantized = g.op("QuantizeLinear", cast(g, x, FLOAT), scale, zero_point, **attributes)
    quantized.dtype = onnx_type
    result = g.op("DequantizeLinear", quantized, scale, zero_point, **attributes)
    result.dtype = FLOAT
    if (quant_min, quant_max) != (low, high):
        result = clamp_value(g, result, *(_dequantized(g, bound, scale, zero_point, axis, require_rank(g, x))
                                          for bound in (quant_min, quant_max)))
    return cast(g, result, out_type)


def _dequantized(g, level: int, scale, zero_point, axis: int | None, rank: int):
    """(level - zero_point) * scale: a number or constant for constant parameters, else computed; per channel,
    shaped [C, 1, ...] to broadcast along ``axis``. Exact in float64, so its float32 rounding is the one
    DequantizeLinear's float32 product gets."""
    if scale.const is not None and zero_point.const is not None:
        values = (level - zero_point.const.astype(np.float64)) * scale.const.astype(np.float64)
        if axis is None:
            return float(values.reshape(()))
        return g.const(values.reshape([-1] + [1] * (rank - axis - 1)).astype(np.float32))
    bound = g.op("Mul", g.op("Sub", g.const(float(level), FLOAT), cast(g, zero_point, FLOAT)), scale)
    if axis is None or rank - axis == 1:
        return bound
    return unsqueeze(g, bound, list(range(1, rank - axis)))


@symbolic("aten::fake_quantize_per_tensor_affine", since=10)
@parse_args("v", "v", "v", "i", "i")
def fake_quantize_per_tensor_affine(g, self, scale, zero_point, quant_min, quant_max):
    """fake_quantize_per_tensor_affine(x, scale, zero_point, quant_min, quant_max); scale and zero_point may be
    numbers or 0-d tensors."""
    return _fake_quantize(g, self, g.value(scale), g.value(zero_point), quant_min, quant_max, None)


@symbolic("aten::fake_quantize_per_channel_affine", since=13)
@parse_args("v", "v", "v", "i", "i", "i")
def fake_quantize_per_channel_affine(g, self, scale, zero_point, axis, quant_min, quant_max):
    """fake_quantize_per_channel_affine(x, scale [C], zero_point [C], axis, quant_min, quant_max)."""
    axis = axis % require_rank(g, self)
    return _fake_quantize(g, self, g.value(scale), g.value(zero_point), quant_min, quant_max, axis)


# -- quantized tensors -----------------------------------------------------------------------------------------
# A PyTorch quantized tensor (quint8, qint8) is carried through the conversion as a QTensor: its integer values
# and the scale and zero point that give them meaning. Ops on quantized tensors run in float between a
# DequantizeLinear and a QuantizeLinear (the QDQ form ONNX Runtime fuses into integer kernels). At the model's
# boundary a quantized tensor is three values, as PyTorch's exporter lays it out and its callers feed and read it: the
# integers, the scale and the zero point.


# -- aten ops on quantized tensors -----------------------------------------------------------------------------------
@symbolic("aten::quantize_per_tensor", since=QDQ_OPSET)
@parse_args("v", "v", "v", "i")
def quantize_per_tensor(g, self, scale, zero_point, dtype):
    """quantize_per_tensor(x, scale, zero_point, dtype): scale and zero point are numbers or (module buffers) tensors."""
    return quantize(g, self, _scalar(g, scale), _scalar(g, zero_point), integer_type_of_code(g, dtype))


@symbolic("aten::quantize_per_channel", since=PER_CHANNEL_OPSET)
@parse_args("v", "v", "v", "i", "i")
def quantize_per_channel(g, self, scales, zero_points, axis, dtype):
    return quantize(g, self, scales, zero_points, integer_type_of_code(g, dtype), axis % require_rank(g, self))


@symbolic("aten::dequantize", since=QDQ_OPSET)
@takes_quantized
def dequantize_op(g, self):
    """dequantize(q): the float tensor; a float tensor is returned as it is, as PyTorch does."""
    return dequantize(g, self) if isinstance(self, QTensor) else self


def _scalar(g, x):
    """A scale or zero point as the 0-d value QuantizeLinear needs for one scale per tensor: a module's buffer is a
    1-element 1-D tensor."""
    if isinstance(x, ir.Value):
        if x.const is not None and x.const.size == 1:
            return g.const(np.asarray(x.const).reshape(()))
        return g.op("Reshape", x, g.const(np.array([], dtype=np.int64)))
    return x
