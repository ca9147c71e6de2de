"""Linear-algebra building blocks: which element types MatMul and Gemm compute at the target opset. Both take
floating types at every opset and (u)int32/(u)int64 from opset 9; ONNX Runtime runs no integer Gemm."""

from __future__ import annotations

from onnx import TensorProto

from exporter import dtypes
from exporter.lowering.runtime import INTEGER_GEMM_AS_MATMUL, applies

INTEGER_MATMUL_OPSET = 9

_GEMM_INTEGERS = (TensorProto.INT32, TensorProto.INT64, TensorProto.UINT32, TensorProto.UINT64)


def matmul_takes(g, elem_type: int | None) -> bool:
    """Whether MatMul computes ``elem_type`` at this opset: floats always, integers from opset 9."""
    return dtypes.is_float(elem_type) or g.opset >= INTEGER_MATMUL_OPSET


def gemm_takes(g, elem_type: int | None) -> bool:
    """Whether Gemm computes ``elem_type`` here: floats always, (u)int32/64 from opset 9 except where ONNX Runtime
    lacks the kernel (``INTEGER_GEMM_AS_MATMUL``). Ask only where a Gemm would be emitted: the caller's other form
    is MatMul with Mul/Add."""
    if dtypes.is_float(elem_type):
        return True
    if g.opset < INTEGER_MATMUL_OPSET or elem_type not in _GEMM_INTEGERS:
        return False
    return not applies(g, INTEGER_GEMM_AS_MATMUL)
