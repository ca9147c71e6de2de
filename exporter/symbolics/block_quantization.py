"""Groupwise (blocked) quantization: ``quantized_decomposed::dequantize_per_channel_group`` and
``quantize_per_channel_group``, the ops int4 weight-only and 8-bit-activation/4-bit-weight recipes leave in a graph
(a 2-D weight [M, N] whose rows are cut into groups of ``group_size`` columns, each group with its own scale and zero
point).

Dequantization is ``((w - zero_point) * scale).to(output_dtype)``, computed by PyTorch as an int32 difference times
the scale. From opset 21 it is one blocked DequantizeLinear (``axis=1``, ``block_size=group_size``): a constant weight
whose values fit 4 bits is stored as INT4 / UINT4 (two values a byte), the form ONNX Runtime's int4 MatMul fusions
read. DequantizeLinear computes ``(w - zero_point) * scale`` in float32 with the small integers exact, so the one
rounding is the product's, as in PyTorch; a float16/bfloat16 scale gives PyTorch's result in that type (the float32
product of a 4-bit difference and an 11-bit mantissa is exact, and rounds once when cast). Below opset 21, and where
the blocked form cannot hold the call (a float64 scale, run-time parameters of unknown shape, zero points that do
not fit the weight's type), the same arithmetic is written out (Cast, Sub, Mul): exact, with the weight in 8 bits.

Quantization is always written out, never a QuantizeLinear: PyTorch computes ``round(x * (1 / scale) +
zero_point)``, QuantizeLinear ``round(x / scale) + zero_point``; the two differ on values at a rounding boundary
(a reciprocal's product is not the quotient, and adding the zero point before rounding rounds the sum in float).
Round is opset 11.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

from exporter import dtypes, ir
from exporter.dtypes import FLOAT
from exporter.lowering.arithmetic import clamp_value
from exporter.lowering.core import cast, torch_dtype_arg
from exporter.registry import parse_args, symbolic, unsupported

BLOCKED_QDQ_OPSET = 21  # DequantizeLinear's block_size; INT4 / UINT4 tensors
ROUND_OPSET = 11

_FOUR_BITS = ((TensorProto.INT4, ml_dtypes.int4, -8, 7), (TensorProto.UINT4, ml_dtypes.uint4, 0, 15))
_NARROW_FLOATS = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def _group_size(g, w, scales, group_size: int) -> int:
    """PyTorch's checks and its one adjustment: a group wider than the row with one scale per row is the row."""
    shape = g.static_dims(w)
    if g.rank(w) != 2:
        raise unsupported(g.op_kind, g.opset, "the tensor must be 2-dimensional (PyTorch asserts it)")
    if group_size <= 1:
        raise unsupported(g.op_kind, g.opset, "group_size must be > 1 (PyTorch asserts it)")
    columns = None if shape is None else shape[1]
    scale_dims = g.static_dims(scales)
    if columns is not None and group_size > columns and scale_dims is not None and scale_dims[-1] == 1:
        return columns
    if columns is not None and columns % group_size:
        raise unsupported(g.op_kind, g.opset, f"the rows ({columns}) are not a whole number of groups of {group_size}")
    return group_size


def _float_math_type(g, scales) -> int:
    """The type the product is computed in: float32 for float16/bfloat16/float32 scales (exact, see the module
    docstring), float64 for float64 scales."""
    scale_type = g.dtype(scales)
    if scale_type == TensorProto.DOUBLE:
        return TensorProto.DOUBLE
    if scale_type in (FLOAT, *_NARROW_FLOATS):
        return FLOAT
    raise unsupported(g.op_kind, g.opset, f"scales of ONNX type {scale_type} are not a floating-point type")


def _finish(g, product, scales, output_dtype: int, shape_of):
    """PyTorch's result type (the scale's, then ``output_dtype``) and the weight's shape."""
    scale_type = g.dtype(scales)
    if scale_type in _NARROW_FLOATS:
        product = cast(g, product, scale_type)
    if shape_of is not None:
        product = g.op("Reshape", product, shape_of)
    return cast(g, product, output_dtype)


def _output_type(g, code: int) -> int:
    wanted = torch_dtype_arg(code)
    if wanted is None or not wanted.is_floating_point:
        raise unsupported(g.op_kind, g.opset, f"output_dtype {wanted} is not a floating-point dtype")
    return dtypes.onnx_from_torch(wanted)


# -- dequantize_per_channel_group ----------------------------------------------------------------------------------
@symbolic("quantized_decomposed::dequantize_per_channel_group")
@parse_args("v", "v", "v", "i", "i", "i", "i", "i")
def dequantize_per_channel_group(g, input, scales, zero_points, quant_min, quant_max, dtype, group_size,
                                 output_dtype):
    """The arithmetic written out (below opset 21): exact, 8-bit weights."""
    group_size = _group_size(g, input, scales, group_size)
    return _dequantize_arithmetic(g, input, scales, zero_points, group_size, _output_type(g, output_dtype))


@symbolic("quantized_decomposed::dequantize_per_channel_group", since=BLOCKED_QDQ_OPSET)
@parse_args("v", "v", "v", "i", "i", "i", "i", "i")
def dequantize_per_channel_group_blocked(g, input, scales, zero_points, quant_min, quant_max, dtype, group_size,
                                         output_dtype):
    """One blocked DequantizeLinear, with 4-bit constants where the weight's values fit."""
    input, scales = g.value(input), g.value(scales)
    zero_points = None if zero_points is None else g.value(zero_points)
    group_size = _group_size(g, input, scales, group_size)
    output_type = _output_type(g, output_dtype)
    blocked = _blocked_parameters(g, input, scales, zero_points, group_size)
    if blocked is None:
        return _dequantize_arithmetic(g, input, scales, zero_points, group_size, output_type)
    weight, scale_value, zero_point_value = blocked
    inputs = [weight, scale_value] + ([] if zero_point_value is None else [zero_point_value])
    product = g.op("DequantizeLinear", *inputs, axis_i=1, block_size_i=group_size)
    product.dtype, product.shape = FLOAT, g.shape(input)
    return _finish(g, product, scales, output_type, None)


def _blocked_parameters(g, w, scales, zero_points, group_size: int):
    """(weight, scale [M, N / group_size] float32, zero point of the weight's type or None) for DequantizeLinear, or
    None where the blocked form cannot state the call exactly."""
    shape = g.static_dims(w)
    if shape is None or _float_math_type(g, scales) != FLOAT or g.dtype(w) not in (TensorProto.INT8, TensorProto.UINT8):
        return None
    blocks = [shape[0], shape[1] // group_size]
    scale_value = _reshaped(g, cast(g, scales, FLOAT), blocks)
    if zero_points is not None and not _known(g, zero_points):
        if _known(g, w):
            return None  # a run-time zero point would need a run-time cast to the 4-bit type
        return w, scale_value, cast(g, _reshaped(g, zero_points, blocks), g.dtype(w))
    points = None if zero_points is None else np.asarray(zero_points.const).reshape(blocks)
    if not _known(g, w):
        if points is not None and not _fits(points, *_EIGHT_BITS[g.dtype(w)]):
            return None
        return w, scale_value, None if points is None else g.const(points.astype(dtypes.numpy_from_onnx(g.dtype(w))))
    return _four_bit(g, np.asarray(w.const), points, scale_value)


def _known(g, x) -> bool:
    """Whether ``x``'s values are fixed at export time: a constant, or a parameter (a weight buffer) where the export
    folds parameters (not in training mode, nor without constant folding)."""
    return isinstance(x, ir.Value) and x.const is not None and (not x.is_param or g.session.fold_params)


_EIGHT_BITS: dict[int, tuple[int, int]] = {TensorProto.INT8: (-128, 127), TensorProto.UINT8: (0, 255)}


def _four_bit(g, values: np.ndarray, points: np.ndarray | None, scale_value):
    """A constant weight (and constant zero points) as INT4 or UINT4 where all its values fit, else as they are."""
    for onnx_type, numpy_type, low, high in _FOUR_BITS:
        if _fits(values, low, high) and (points is None or _fits(points, low, high)):
            weight = g.const(values.astype(numpy_type))
            weight.dtype = onnx_type
            if points is None:
                return weight, scale_value, None
            point_value = g.const(points.astype(numpy_type))
            point_value.dtype = onnx_type
            return weight, scale_value, point_value
    weight = g.const(values)
    if points is None:
        return weight, scale_value, None
    if not _fits(points, *_EIGHT_BITS[dtypes.onnx_from_numpy(values.dtype)]):
        return None
    return weight, scale_value, g.const(points.astype(values.dtype))


def _fits(values: np.ndarray, low: int, high: int) -> bool:
    return values.size == 0 or (int(values.min()) >= low and int(values.max()) <= high)


def _reshaped(g, x: ir.Value, shape: list[int]) -> ir.Value:
    if _known(g, x):
        return g.const(np.asarray(x.const).reshape(shape))
    return g.op("Reshape", x, g.const(np.array(shape, dtype=np.int64)))


def _dequantize_arithmetic(g, w, scales, zero_points, group_size: int, output_type: int):
    """PyTorch's own steps: groups as rows, the int32 difference from the zero point, times the scale."""
    math_type = _float_math_type(g, scales)
    rows = g.const(np.array([-1, group_size], dtype=np.int64))
    difference = cast(g, g.op("Reshape", w, rows), TensorProto.INT32)
    if zero_points is not None:
        column = g.const(np.array([-1, 1], dtype=np.int64))
        difference = g.op("Sub", difference, cast(g, g.op("Reshape", zero_points, column), TensorProto.INT32))
    scale_column = g.op("Reshape", cast(g, scales, math_type), g.const(np.array([-1, 1], dtype=np.int64)))
    product = g.op("Mul", cast(g, difference, math_type), scale_column)
    return _finish(g, product, scales, output_type, g.op("Shape", w))


# -- quantize_per_channel_group ------------------------------------------------------------------------------------
@symbolic("quantized_decomposed::quantize_per_channel_group", since=ROUND_OPSET)
@parse_args("v", "v", "v", "i", "i", "i", "i")
def quantize_per_channel_group(g, input, scales, zero_points, quant_min, quant_max, dtype, group_size):
    """``clamp(round(x * (1 / scale) + zero_point), quant_min, quant_max).to(dtype)`` per group, step by step in
    PyTorch's types (float16/bfloat16 steps rounded to their type after each op, as PyTorch's kernels do)."""
    group_size = _group_size(g, input, scales, group_size)
    integer_type = torch_dtype_arg(dtype)
    if integer_type is None or integer_type.is_floating_point or integer_type.is_complex:
        raise unsupported(g.op_kind, g.opset, f"dtype {integer_type} is not an integer dtype")
    input_type, scale_type = g.dtype(input), g.dtype(scales)
    step_type = _promoted_float(g, input_type, scale_type)
    math_type = TensorProto.DOUBLE if step_type == TensorProto.DOUBLE else FLOAT

    def step(value):
        return cast(g, cast(g, value, step_type), math_type) if step_type in _NARROW_FLOATS else value

    rows = g.op("Reshape", cast(g, input, math_type), g.const(np.array([-1, group_size], dtype=np.int64)))
    column = g.const(np.array([-1, 1], dtype=np.int64))
    reciprocal = g.op("Reciprocal", cast(g, g.op("Reshape", scales, column), math_type))
    if scale_type in _NARROW_FLOATS:
        reciprocal = cast(g, cast(g, reciprocal, scale_type), math_type)
    scaled = step(g.op("Mul", rows, reciprocal))
    shifted = step(g.op("Add", scaled, cast(g, g.op("Reshape", zero_points, column), math_type)))
    clamped = clamp_value(g, g.op("Round", shifted), float(quant_min), float(quant_max))
    result = g.op("Reshape", clamped, g.op("Shape", input))
    return cast(g, result, dtypes.onnx_from_torch(integer_type))


def _promoted_float(g, input_type: int | None, scale_type: int | None) -> int:
    """PyTorch's result type of ``input * (1.0 / scales)`` for floating-point tensors of the same rank."""
    order: list[int] = [TensorProto.FLOAT16, TensorProto.BFLOAT16, FLOAT, TensorProto.DOUBLE]
    if input_type not in order or scale_type not in order:
        raise unsupported(g.op_kind, g.opset, "input and scales must be floating-point tensors")
    if {input_type, scale_type} == {TensorProto.FLOAT16, TensorProto.BFLOAT16}:
        return FLOAT
    return max(input_type, scale_type, key=order.index)
