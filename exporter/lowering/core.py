"""Building blocks shared by the symbolics: opset-aware forms of ops whose signature changed, type promotion,
and conversions between Python values and graph values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np
import torch
from onnx import TensorProto

from exporter import dtypes, ir
from exporter.dtypes import FLOAT, INT64
from exporter.errors import SymbolicValueError, UnsupportedOperatorError
from exporter.graph_context import GraphContext


def is_value(x: Any) -> TypeGuard[ir.Value]:
    return isinstance(x, ir.Value)


def is_constant(x: Any) -> bool:
    """True for Python values, tensors and graph values with a known payload."""
    if isinstance(x, ir.Value):
        return x.const is not None and not x.is_param
    if isinstance(x, (list, tuple)):
        return all(is_constant(i) for i in x)
    return True


def constant_value(x: Any) -> Any:
    """The Python payload of a constant (numpy arrays of size 1 become scalars).

    A value computed at run time (a graph input, such as a scripted model's ``int`` argument, or anything
    computed from one) is a :class:`SymbolicValueError`: the op needs that argument at export time.
    """
    if isinstance(x, ir.Value):
        array = x.const
        if array is None:
            raise SymbolicValueError(
                f"this argument must be known at export time, but {x.name!r} is computed at run time "
                "(a graph input or a value derived from one)"
            )
        array = np.asarray(array)  # a deferred product (ir.RowScaled) too
        return array.item() if array.size == 1 and array.ndim == 0 else array.tolist()
    if isinstance(x, torch.Tensor):
        return x.item() if x.numel() == 1 and x.dim() == 0 else x.tolist()
    if isinstance(x, (list, tuple)):
        return [constant_value(i) for i in x]
    return x


def torch_dtype_arg(code: Any) -> torch.dtype | None:
    """A TorchScript ``dtype`` argument (ScalarType code or None) as a torch dtype."""
    if code is None:
        return None
    if isinstance(code, torch.dtype):
        return code
    return dtypes.torch_dtype_from_code(int(constant_value(code)))


def normalize_dim(dim: int, rank: int | None) -> int:
    if dim >= 0:
        return dim
    if rank is None:
        raise SymbolicValueError("a negative dimension needs the input's rank, which is unknown here")
    return dim + rank


def require_rank(g: GraphContext, x: Any, what: str = "input") -> int:
    rank = g.rank(x)
    if rank is None:
        raise SymbolicValueError(f"the rank of the {what} is unknown, which this conversion needs")
    return rank


# -- casts and type promotion ----------------------------------------------------------------------------------
def cast(g: GraphContext, x: Any, to: int | None) -> ir.Value:
    """``x`` as element type ``to`` (no node when it already is, or when ``to`` is None: a type the export does not
    know, derived from ``x``'s own unknown type)."""
    if not is_value(x):
        return g.const(x, to)
    if to is None or x.dtype == to:
        return x
    if to in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
        raise UnsupportedOperatorError(g.op_kind if g.node else "Cast", g.opset,
                                       reason="complex tensors: ONNX's Cast has no complex types")
    if x.const is not None and not x.is_param:
        return g.const(x.const, to)
    if TensorProto.BFLOAT16 in (to, x.dtype):
        require_opset(g, 13, "a cast to or from bfloat16 needs Cast-13")
    out = g.op("Cast", x, to_i=to)
    out.shape = x.shape
    return out


def _promotion_stand_in(g: GraphContext, x: Any) -> Any:
    if isinstance(x, bool) or isinstance(x, int) or isinstance(x, float):
        return x
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, ir.Value):
        torch_type = dtypes.torch_from_onnx(x.dtype) if x.dtype is not None else torch.float32
        if x.is_number:
            return torch.zeros((), dtype=torch_type).item()
        return torch.zeros(() if x.rank == 0 else (1,), dtype=torch_type)
    return x


def promote(g: GraphContext, *args: Any) -> int:
    """The ONNX element type PyTorch's type promotion gives to ``args`` (values, tensors, Python scalars)."""
    stand_ins = [_promotion_stand_in(g, a) for a in args if a is not None]
    acc = stand_ins[0]
    for other in stand_ins[1:]:
        dtype = torch.result_type(acc, other)
        pair = (acc, other)
        if any(isinstance(t, torch.Tensor) and t.dim() > 0 for t in pair):
            acc = torch.zeros((1,), dtype=dtype)
        elif any(isinstance(t, torch.Tensor) for t in pair):
            acc = torch.zeros((), dtype=dtype)
        else:
            acc = torch.zeros((), dtype=dtype).item()
    dtype = acc.dtype if isinstance(acc, torch.Tensor) else torch.tensor(acc).dtype
    return dtypes.onnx_from_torch(dtype)


def promote_all(g: GraphContext, *args: Any) -> tuple[int, list[ir.Value]]:
    """Promote ``args`` to their common type and return (type, values cast to it)."""
    target = promote(g, *args)
    return target, [cast(g, a, target) for a in args]


# -- shapes and lists -------------------------------------------------------------------------------------------
def to_int64_list_value(g: GraphContext, items: Any) -> ir.Value:
    """A 1-D int64 tensor from a Python list of ints and/or 0-d graph values, or from a 1-D value."""
    if is_value(items):
        return cast(g, items, INT64)
    if all(not is_value(i) for i in items):
        return g.const([int(constant_value(i)) for i in items], torch.int64)
    parts = []
    for item in items:
        if is_value(item):
            item = cast(g, item, INT64)
            parts.append(unsqueeze(g, item, [0]) if item.rank in (0, None) else item)
        else:
            parts.append(g.const([int(constant_value(item))], torch.int64))
    out = g.op("Concat", *parts, axis_i=0)
    out.shape = (len(items),)
    return out


def shape_of(g: GraphContext, x: Any) -> Any:
    """The shape of ``x``: a Python list of ints when static, else a 1-D int64 Shape value."""
    dims = g.static_dims(x)
    if dims is not None:
        return dims
    out = g.op("Shape", g.value(x))
    out.shape = (g.rank(x),) if g.rank(x) is not None else None
    return out


def dim_size(g: GraphContext, x: Any, dim: int) -> Any:
    """Size of dimension ``dim``: an int when static (even if other dims are dynamic), else a 0-d int64 value."""
    dims = g.dims(x)
    rank = g.rank(x)
    if dims is not None and dims[normalize_dim(dim, len(dims))] is not None:
        return dims[normalize_dim(dim, len(dims))]
    shape = g.op("Shape", g.value(x))
    index = g.const(normalize_dim(dim, rank) if rank is not None else dim, torch.int64)
    out = g.op("Gather", shape, index, axis_i=0)
    out.shape = ()
    out.is_number = True
    return out


def unsqueeze(g: GraphContext, x: Any, axes: Sequence[int]) -> ir.Value:
    x = g.value(x)
    if g.opset >= 13:
        out = g.op("Unsqueeze", x, g.const(list(axes), torch.int64))
    else:
        out = g.op("Unsqueeze", x, axes_i=list(axes))
    if x.rank is not None:
        shape = list(x.shape)
        rank = len(shape) + len(axes)
        for axis in sorted(normalize_dim(a, rank) for a in axes):
            shape.insert(axis, 1)
        out.shape = tuple(shape)
    return out


def squeeze(g: GraphContext, x: Any, axes: Sequence[int] | None = None) -> ir.Value:
    x = g.value(x)
    if axes is None:
        return g.op("Squeeze", x)
    if g.opset >= 13:
        out = g.op("Squeeze", x, g.const(list(axes), torch.int64))
    else:
        out = g.op("Squeeze", x, axes_i=list(axes))
    if x.rank is not None:
        drop = {normalize_dim(a, x.rank) for a in axes}
        out.shape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
    return out


def reshape(g: GraphContext, x: Any, shape: Any) -> ir.Value:
    """Reshape to ``shape`` (a list of ints/values, or a 1-D value); -1 and 0 as in ONNX Reshape."""
    out = g.op("Reshape", g.value(x), to_int64_list_value(g, shape))
    if isinstance(shape, (list, tuple)):
        out.shape = _reshaped_dims(g, x, shape)
    elif is_value(shape) and shape.shape is not None and len(shape.shape) == 1 and isinstance(shape.shape[0], int):
        out.shape = (None,) * shape.shape[0]  # a shape computed at run time, of a known length: the rank
    return out


def _reshaped_dims(g: GraphContext, x: Any, shape: Sequence[Any]) -> tuple:
    """The output dims of ONNX Reshape: 0 copies the input dim, -1 takes the rest when every size is known."""
    dims = [s if isinstance(s, int) and not isinstance(s, bool) else None for s in shape]
    # Only static exports resolve sizes: in dynamic ones static_dims would run shape inference per reshape.
    in_dims = g.static_dims(x) if g.static_shapes else None
    sizes = [d for d in dims if d is not None]
    if in_dims is None or len(sizes) < len(dims):
        return tuple(d if d is not None and d > 0 else None for d in dims)
    sizes = [in_dims[i] if d == 0 and i < len(in_dims) else d for i, d in enumerate(sizes)]
    if -1 not in sizes:
        return tuple(sizes)
    known = int(np.prod([d for d in sizes if d != -1]))
    at = sizes.index(-1)
    return (*sizes[:at], int(np.prod(in_dims)) // known if known else None, *sizes[at + 1:])


def slice_op(
    g: GraphContext, x: Any, axes: Sequence[int], starts: Sequence[Any], ends: Sequence[Any], steps: Sequence[Any] | None = None
) -> ir.Value:
    """ONNX Slice: attributes before opset 10 (constant bounds, step 1 only), inputs from 10."""

    if g.opset < 10:
        if steps is not None and any(int(constant_value(s)) != 1 for s in steps):
            raise UnsupportedOperatorError(g.op_kind if g.node else "Slice", g.opset, 10)
        if not all(is_constant(v) for v in list(starts) + list(ends)):
            raise UnsupportedOperatorError(
                g.op_kind if g.node else "Slice", g.opset, 10, reason="slice bounds computed at run time need Slice with input bounds: needs opset >= 10"
            )
        return g.op(
            "Slice", g.value(x), axes_i=list(axes),
            starts_i=[_clamp_int64(constant_value(s)) for s in starts],
            ends_i=[_clamp_int64(constant_value(e)) for e in ends],
        )
    inputs = [g.value(x), to_int64_list_value(g, starts), to_int64_list_value(g, ends), g.const(list(axes), torch.int64)]
    if steps is not None:
        inputs.append(to_int64_list_value(g, steps))
    return g.op("Slice", *inputs)


_INT64_MAX = 2**63 - 1


def _clamp_int64(v: int) -> int:
    return max(min(int(v), _INT64_MAX), -_INT64_MAX - 1)


def reduce_op(g: GraphContext, op_type: str, x: Any, axes: Sequence[int] | None, keepdims: bool) -> ir.Value:
    """Reduce* with axes as attribute (before 13 for ReduceSum, before 18 for the rest) or input."""
    x = g.value(x)
    if axes is None:
        return g.op(op_type, x, keepdims_i=int(keepdims))
    if g.opset >= (13 if op_type == "ReduceSum" else 18):
        return g.op(op_type, x, g.const(list(axes), torch.int64), keepdims_i=int(keepdims))
    return g.op(op_type, x, axes_i=list(axes), keepdims_i=int(keepdims))


def scalar_like(g: GraphContext, scalar: Any, like: Any) -> ir.Value:
    """A constant scalar with the element type of ``like``."""
    return g.const(np.array(constant_value(scalar)), g.dtype(like) or FLOAT)


def g_scalar_mul(g: GraphContext, x: Any, factor: Any) -> Any:
    """``x * factor`` keeping ``x``'s type (used for ``alpha`` arguments)."""
    if not is_value(x):
        return constant_value(x) * constant_value(factor)
    return g.op("Mul", x, scalar_like(g, factor, x))


def require_opset(g: GraphContext, opset: int, what: str) -> None:
    """Declare that ``what`` (a form of the op being converted) needs ``opset``: below it, raise the error that
    names the op, the target opset and the lowest opset that would work."""
    if g.opset < opset:
        op = g.op_kind if g.node is not None else "this op"
        raise UnsupportedOperatorError(op, g.opset, reason=f"{what}: needs opset >= {opset}")
