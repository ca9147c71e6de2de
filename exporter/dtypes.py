"""Mappings between torch dtypes, TorchScript scalar-type names and ONNX element types."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from onnx import TensorProto

# The ONNX element types the engine names most, defined here once (the others are read from TensorProto).
BOOL = TensorProto.BOOL
INT32 = TensorProto.INT32
INT64 = TensorProto.INT64
FLOAT = TensorProto.FLOAT
DOUBLE = TensorProto.DOUBLE
BFLOAT16 = TensorProto.BFLOAT16
FLOAT16 = TensorProto.FLOAT16

TORCH_TO_ONNX: dict[torch.dtype, int] = {
    torch.float32: TensorProto.FLOAT,
    torch.float64: TensorProto.DOUBLE,
    torch.float16: TensorProto.FLOAT16,
    torch.bfloat16: TensorProto.BFLOAT16,
    torch.int8: TensorProto.INT8,
    torch.int16: TensorProto.INT16,
    torch.int32: TensorProto.INT32,
    torch.int64: TensorProto.INT64,
    torch.uint8: TensorProto.UINT8,
    torch.bool: TensorProto.BOOL,
    torch.complex64: TensorProto.COMPLEX64,
    torch.complex128: TensorProto.COMPLEX128,
    # 8-bit floats (ONNX Cast to them from opset 19)
    torch.float8_e4m3fn: TensorProto.FLOAT8E4M3FN,
    torch.float8_e4m3fnuz: TensorProto.FLOAT8E4M3FNUZ,
    torch.float8_e5m2: TensorProto.FLOAT8E5M2,
    torch.float8_e5m2fnuz: TensorProto.FLOAT8E5M2FNUZ,
    # two 4-bit floats per byte (the first in the low bits, as ONNX packs FLOAT4E2M1): ONNX counts each of them
    torch.float4_e2m1fn_x2: TensorProto.FLOAT4E2M1,
}
ONNX_TO_TORCH: dict[int, torch.dtype] = {v: k for k, v in TORCH_TO_ONNX.items()}

# TorchScript's TensorType.scalarType() names.
SCALAR_NAME_TO_TORCH: dict[str, torch.dtype] = {
    "Float": torch.float32,
    "Double": torch.float64,
    "Half": torch.float16,
    "BFloat16": torch.bfloat16,
    "Char": torch.int8,
    "Short": torch.int16,
    "Int": torch.int32,
    "Long": torch.int64,
    "Byte": torch.uint8,
    "Bool": torch.bool,
    "ComplexFloat": torch.complex64,
    "ComplexDouble": torch.complex128,
}

# TorchScript's names of the quantized dtypes. Ops on them are converted to float computations between
# QuantizeLinear and DequantizeLinear (exporter/symbolics/quantization.py), so the converter sees their values as float.
QUANTIZED_SCALAR_NAMES: dict[str, torch.dtype] = {"QUInt8": torch.quint8, "QInt8": torch.qint8, "QInt32": torch.qint32}

# The integer codes TorchScript uses for a ``dtype`` argument (the ScalarType enum).
_SCALAR_TYPE_CODES = [
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
    torch.float64, None, torch.complex64, torch.complex128, torch.bool, None, None, None, torch.bfloat16,
    None, None, None, None, None, None, None,  # 16-22: packed and bit types
    torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz, torch.float8_e4m3fnuz,
    *[None] * 18, torch.float4_e2m1fn_x2,  # 27-44: unsigned, bit and e8m0 types; 45
]


def torch_dtype_from_code(code: int) -> torch.dtype:
    """The torch dtype for TorchScript's integer ScalarType code (as found in ``dtype`` arguments)."""
    dtype = _SCALAR_TYPE_CODES[code] if 0 <= code < len(_SCALAR_TYPE_CODES) else None
    if dtype is None:
        raise ValueError(f"unsupported ScalarType code {code}")
    return dtype


def code_from_torch_dtype(dtype: torch.dtype) -> int:
    """TorchScript's integer ScalarType code for ``dtype``."""
    return _SCALAR_TYPE_CODES.index(dtype)


def onnx_from_torch(dtype: torch.dtype) -> int:
    try:
        return TORCH_TO_ONNX[dtype]
    except KeyError:
        raise ValueError(f"torch dtype {dtype} has no ONNX element type") from None


def torch_from_onnx(elem_type: int) -> torch.dtype:
    return ONNX_TO_TORCH[elem_type]


def numpy_from_onnx(elem_type: int) -> np.dtype:
    from onnx.helper import tensor_dtype_to_np_dtype

    return tensor_dtype_to_np_dtype(elem_type)


def tensor_to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A CPU tensor's data as numpy in its own element type: bfloat16 through ml_dtypes (which onnx writes as
    BFLOAT16), never widened to float32, so a bfloat16 constant keeps the type its consumers expect."""
    if tensor.dtype == torch.bfloat16:
        import ml_dtypes

        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if tensor.dtype == torch.float4_e2m1fn_x2:  # one element per 4 bits, unpacked (onnx packs them again)
        import ml_dtypes

        packed = tensor.view(torch.uint8).numpy()
        unpacked = np.stack([packed & 0xF, packed >> 4], axis=-1).reshape(onnx_shape(tensor))
        return unpacked.view(ml_dtypes.float4_e2m1fn)
    return tensor.numpy()


def onnx_shape(tensor: torch.Tensor) -> tuple:
    """The shape ONNX gives ``tensor`` (a meta or fake tensor too): its own, but a complex tensor's real view has a
    trailing axis of 2 and a float4_e2m1fn_x2 tensor's last axis counts each of the two 4-bit floats in a byte."""
    shape = tuple(tensor.shape)
    if tensor.is_complex():
        return (*shape, 2)
    if tensor.dtype == torch.float4_e2m1fn_x2:
        return (*shape[:-1], shape[-1] * 2) if shape else (2,)
    return shape


def real_view(tensor: Any) -> Any:
    """A complex tensor as an ONNX model holds it (``torch.view_as_real``: a trailing axis of 2, real part then
    imaginary part; conjugation resolved), as torch.onnx holds it; anything else as it is."""
    if isinstance(tensor, torch.Tensor) and tensor.is_complex():
        return torch.view_as_real(tensor.resolve_conj())
    return tensor


def onnx_from_numpy(dtype: np.dtype) -> int:
    from onnx.helper import np_dtype_to_tensor_dtype

    return np_dtype_to_tensor_dtype(np.dtype(dtype))


FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16})
INTEGER_TYPES = frozenset(
    {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8}
)


def is_float(elem_type: int | None) -> bool:
    return elem_type in FLOAT_TYPES


def is_integer(elem_type: int | None) -> bool:
    return elem_type in INTEGER_TYPES


def opmath_type(elem_type: int | None) -> int | None:
    """The type PyTorch's CPU kernels compute an op of ``elem_type`` in: float32 for float16 (rounded once, at the
    end), the type itself otherwise."""
    return TensorProto.FLOAT if elem_type == TensorProto.FLOAT16 else elem_type
