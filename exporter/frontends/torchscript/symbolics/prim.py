"""TorchScript primitives: lists, tuples, numbers and the conversions between them."""

from __future__ import annotations

import torch
from onnx import TensorProto

from exporter import dtypes, ir
from exporter.dtypes import INT64
from exporter.errors import SymbolicValueError
from exporter.lowering.core import cast, constant_value, is_value, reshape, to_int64_list_value, torch_dtype_arg
from exporter.lowering.indexing import gather_at
from exporter.lowering.sequence import concat_from_sequence, is_list_tensor, sequence_at, unpack_sequence
from exporter.registry import symbolic


@symbolic("prim::ListConstruct", "prim::TupleConstruct")
def list_construct(g, *items):
    return list(items)


@symbolic("prim::ListUnpack", "prim::TupleUnpack")
def list_unpack(g, items):
    if isinstance(items, (list, tuple)):
        return list(items) if len(items) != 1 else items[0]
    count = len(list(g.node.outputs()))
    if is_list_tensor(g, items):  # ``a, b = x.shape`` with dynamic dims: the int list is a 1-d tensor
        results = [_item_of_list_tensor(g, items, i) for i in range(count)]
        return results if count != 1 else results[0]
    return unpack_sequence(g, items, count)


@symbolic("prim::TupleIndex", "aten::__getitem__")
def getitem(g, items, index):
    if isinstance(items, (list, tuple)) and not is_value(index):
        return items[int(constant_value(index))]
    if is_list_tensor(g, items):  # ``x.shape[i]`` with dynamic dims: the int list is a 1-d tensor
        return _item_of_list_tensor(g, items, index)
    if isinstance(items, (list, tuple)) and g.node.inputsAt(0).type().str() == "int[]":
        # A list of ints at a run-time position (``size[i + 2]`` in a loop): a 1-d tensor and Gather, at any opset.
        return _item_of_list_tensor(g, to_int64_list_value(g, items), index)
    return sequence_at(g, items, index)


def _item_of_list_tensor(g, items, index):
    """Item ``index`` (negative: from the end) of an int list held as a 1-d tensor, as a number."""
    out = gather_at(g, items, cast(g, index, INT64), 0)
    out.dtype, out.shape, out.is_number = g.dtype(items), (), True
    return out


@symbolic("prim::NumToTensor")
def num_to_tensor(g, x):
    """A number as a 0-d tensor; constant numbers become tensors so that later aten ops on them fold eagerly."""
    if is_value(x):
        return x
    return torch.tensor(constant_value(x))


@symbolic("aten::item")
def item(g, x):
    """The number a one-element tensor holds, in the tensor's own type, as a 0-d value."""
    if not is_value(x):
        return constant_value(x)
    out = x if x.rank == 0 else reshape(g, x, [])
    if out is x:
        out = g.op("Identity", x)
    out.dtype, out.shape, out.is_number = x.dtype, (), True
    return out


@symbolic("prim::tolist")
def tolist(g, x, dim, elem_type):
    """``Tensor.tolist()`` of a 1-d tensor: the list held as the tensor itself, as PyTorch's exporter exports it
    (other ranks would be nested lists, which have no such form)."""
    if int(constant_value(dim)) != 1:
        raise SymbolicValueError("tolist is exportable for 1-d tensors only (a nested list has no ONNX form)")
    if g.dtype(x) in (dtypes.onnx_from_torch(torch.complex64), dtypes.onnx_from_torch(torch.complex128)):
        raise SymbolicValueError("tolist of a complex tensor: ONNX has no complex numbers to list")
    return x


@symbolic("aten::detach", "aten::clone", "aten::contiguous", "prim::data",
          "aten::alias", "aten::lift_fresh", "aten::lift", "aten::dequantize", "aten::resolve_conj",
          "aten::resolve_neg")
def passthrough(g, x, *unused):
    return x


@symbolic("aten::ScalarImplicit")
def to_scalar(g, x):
    """A 0-d tensor used as a Scalar keeps its own type (a float tensor's value stays a float)."""
    if not is_value(x):
        return constant_value(x)
    out = g.op("Identity", x)
    out.dtype, out.shape, out.is_number = x.dtype, (), True
    return out


@symbolic("aten::Int", "aten::IntImplicit")
def to_int(g, x):
    if not is_value(x):
        return int(constant_value(x))
    out = cast(g, x, INT64)
    out.is_number = True
    return out


@symbolic("aten::Float", "aten::FloatImplicit")
def to_float(g, x):
    if not is_value(x):
        return float(constant_value(x))
    out = cast(g, x, g.output_dtype() or 11)
    out.is_number = True
    return out


@symbolic("aten::Bool", "aten::BoolImplicit")
def to_bool(g, x):
    if not is_value(x):
        return bool(constant_value(x))
    return cast(g, x, 9)


@symbolic("prim::dtype")
def dtype_of(g, x):
    if not isinstance(x, ir.Value) or x.dtype is None:
        raise SymbolicValueError("the dtype of this tensor is not known at export time")
    return dtypes.code_from_torch_dtype(dtypes.torch_from_onnx(x.dtype))


@symbolic("prim::layout")
def layout(g, x):
    """A tensor's layout: strided (code 0), the only layout an exported tensor has."""
    return 0


@symbolic("prim::device")
def device(g, x):
    """A tensor's device: the exported graph runs wherever its runtime puts it, so code asking (e.g. torch.norm's
    ``x.device.type in ("cpu", "cuda", ...)``) takes the path it takes for a CPU tensor."""
    return torch.device("cpu")


@symbolic("prim::type")
def device_type(g, device):
    """``device.type``: the type string of a device known at export time."""
    if isinstance(device, torch.device):
        return device.type
    raise SymbolicValueError("prim::type of a value other than a device known at export time")


@symbolic("aten::warn", "prim::RaiseException", "aten::_assert_async")
def side_effect_only(g, *args):
    return None


@symbolic("aten::tensor", "aten::scalar_tensor", "aten::as_tensor")
def tensor_from_data(g, data, dtype=None, device=None, *unused):

    target = torch_dtype_arg(dtype)
    if target is None and g.op_kind == "aten::scalar_tensor":
        target = torch.get_default_dtype()  # scalar_tensor makes the default float type, whatever its value's
    if not is_value(data) and not (isinstance(data, list) and any(is_value(d) for d in data)):
        return torch.tensor(constant_value(data), dtype=target)
    explicit = dtypes.onnx_from_torch(target) if target is not None else None
    dtype = explicit or g.output_dtype() or _data_type(g)
    if is_value(data) and data.kind == ir.SEQUENCE:
        # A list of numbers a loop built (``torch.tensor([2 for _ in range(n)])``): its 0-d items stacked.
        stacked = concat_from_sequence(g, data, 0, new_axis=True)
        if g.node.inputsAt(0).type().getElementType().kind() in ("IntType", "FloatType", "BoolType"):
            stacked.shape = (None,)
        return cast(g, stacked, dtype or data.dtype)
    if isinstance(data, list):
        if dtype is None or dtype == INT64:
            return cast(g, to_int64_list_value(g, data), dtype or INT64)
        # Each item in the result's type: a float item must not go through int64 (it would be truncated).
        parts = [reshape(g, cast(g, g.value(item), dtype), [1]) for item in data]  # numbers may be 0-d or [1]
        out = g.op("Concat", *parts, axis_i=0)
        out.shape = (len(data),)
        return out
    return cast(g, data, dtype or data.dtype)


_NUMBER_TYPES = {"IntType": INT64, "BoolType": TensorProto.BOOL}


def _data_type(g) -> int | None:
    """The element type torch.tensor infers from its (scripted) data: int64 for ints, bool for bools, the default
    float type for floats (a list of mixed numbers: float if any is), the tensor's own for a tensor."""
    data_type = g.node.inputsAt(0).type()
    kinds = [data_type.getElementType().kind()] if data_type.kind() == "ListType" else [data_type.kind()]
    if "FloatType" in kinds:
        return dtypes.onnx_from_torch(torch.get_default_dtype())
    return _NUMBER_TYPES.get(kinds[0])


@symbolic("aten::is_floating_point")
def is_floating_point(g, self):
    """A Python bool: the element type is known when the graph is built."""
    return dtypes.is_float(g.dtype(self))


@symbolic("aten::is_pinned")
def is_pinned(g, self, device=None):
    """False: an exported tensor lives in ONNX Runtime's memory, never in pinned host memory."""
    return False
