"""Reduction building blocks: the types reductions compute in (ReduceMax/ReduceMin take int8/uint8 from opset 12,
bfloat16 from 13), reductions over given dims (axes as an attribute before opset 13 for ReduceSum, 18 for the
others) and vector norms."""

from __future__ import annotations

import math

from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import BOOL, FLOAT, INT32, INT64
from exporter.lowering.core import (
    cast,
    constant_value,
    normalize_dim,
    reduce_op,
    require_rank,
    reshape,
    torch_dtype_arg,
)
from exporter.lowering.runtime import BFLOAT16_EXTREMES_IN_FLOAT, applies


def accumulation_type(elem_type: int | None) -> int | None:
    """The type sums, means and statistics of ``elem_type`` accumulate in: halves in float32, as PyTorch accumulates
    them; bool and ints narrower than 32 bits in int64, as ONNX's Reduce ops take none of them."""
    if elem_type in _HALF_TYPES:
        return FLOAT
    if elem_type in NARROW_INTS:
        return INT64
    return elem_type


def extreme_type(g, elem_type: int | None) -> int | None:
    """The type ReduceMax/ReduceMin find the extremes of ``elem_type`` in (exact in any type that holds the values):
    the type itself where ONNX takes it (bool from opset 20); bool before 20, int16, and int8/uint8 before opset 12,
    in int32; bfloat16 in float32 before opset 13 and where ONNX Runtime lacks the kernel
    (``BFLOAT16_EXTREMES_IN_FLOAT``). Ask only where the reduction is emitted."""
    if elem_type == TensorProto.BFLOAT16:
        return FLOAT if g.opset < 13 or applies(g, BFLOAT16_EXTREMES_IN_FLOAT) else elem_type
    if elem_type == BOOL and g.opset >= 20:
        return elem_type
    if elem_type in (BOOL, TensorProto.INT16) or (elem_type in NARROW_INTS and g.opset < 12):
        return INT32
    return elem_type


def reduce(g, op_type: str, x, axes, keepdim: bool, compute: int | None = None, out: int | None = None):
    """``op_type`` over ``axes`` (None: all), computed in type ``compute`` and cast to ``out``.

    A 0-d input is viewed as 1-D first: PyTorch accepts dim 0/-1 on scalars, ONNX has no axis to reduce.
    """
    x = g.value(x)
    if compute is not None:
        x = cast(g, x, compute)
    if g.rank(x) == 0:
        x, axes, keepdim = reshape(g, x, [1]), None, False
    result = reduce_op(g, op_type, x, axes, keepdim)
    return cast(g, result, out) if out is not None else result


def vector_norm(g, x, ord, dim, keepdim, dtype):
    """The vector p-norm of ``x`` over ``dim`` (None: all elements)."""
    out = reduction_result_type(g, x, dtype)
    compute = accumulation_type(out)
    x = cast(g, x, compute)
    axes = reduction_axes(g, x, dim)
    ord = float(ord)
    if ord == 2:
        return reduce(g, "ReduceL2", x, axes, keepdim, out=out)
    if ord == 1:
        return reduce(g, "ReduceL1", x, axes, keepdim, out=out)
    if math.isinf(ord):
        return reduce(g, "ReduceMax" if ord > 0 else "ReduceMin", g.op("Abs", x), axes, keepdim, out=out)
    if ord == 0:
        nonzero = cast(g, cast(g, x, BOOL), compute)
        return reduce(g, "ReduceSum", nonzero, axes, keepdim, out=out)
    powered = g.op("Pow", g.op("Abs", x), g.const(ord, compute))
    total = reduce(g, "ReduceSum", powered, axes, keepdim)
    return cast(g, g.op("Pow", total, g.const(1.0 / ord, compute)), out)


_HALF_TYPES = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


NARROW_INTS = (BOOL, TensorProto.INT8, TensorProto.INT16, TensorProto.UINT8)


# -- shared machinery -------------------------------------------------------------------------------------------
def reduction_axes(g, x, dim) -> list[int] | None:
    """Non-negative axes for a ``dim`` argument (int, list, or None/[] meaning every axis -> None). A 0-d tensor
    takes dim 0 or -1 as PyTorch allows, which is every axis it has (ONNX reductions reject axis 0 there)."""
    dim = constant_value(dim)
    if dim is None or dim == []:
        return None
    dims = dim if isinstance(dim, list) else [dim]
    rank = require_rank(g, x)
    if rank == 0:
        return None
    return sorted({normalize_dim(int(d), max(rank, 1)) for d in dims})


def reduction_result_type(g, x, dtype_arg=None, integers_to: int | None = None) -> int:
    """The output type: TorchScript's record, else the ``dtype`` argument, else the input's (ints promoted)."""
    recorded = g.output_dtype()
    if recorded is not None:
        return recorded
    requested = torch_dtype_arg(dtype_arg)
    if requested is not None:
        return dtypes.onnx_from_torch(requested)
    if integers_to is not None and (g.dtype(x) == BOOL or dtypes.is_integer(g.dtype(x))):
        return integers_to
    return g.dtype(x)
