"""What PyTorch's TorchScript exporter makes of a captured graph's boundary that the pipeline's naming asks the
TorchScript front end: the element type of a list input of numbers, and the inputs it reads at run time where this
converter folds the read (so they stay inputs: callers feed what they would feed its model)."""

from __future__ import annotations

import torch

from exporter import ir

_NUMBER_LIST_TYPES = {"IntType": torch.int64, "FloatType": torch.float64, "BoolType": torch.bool}


def list_input_number_type(graph: torch._C.Graph, position: int) -> torch.dtype | None:
    """The dtype PyTorch's exporter feeds the list input at ``position`` of ``graph`` in (int64, double or bool) where
    it is a list of numbers; None for a list of tensors."""
    element = list(graph.inputs())[position].type().getElementType()
    return _NUMBER_LIST_TYPES.get(element.kind())


def read_at_run_time(value: ir.Value, opset: int) -> bool:
    """Whether PyTorch's exporter reads the graph input ``value`` at run time (see
    :func:`_read_at_run_time_by_torch`)."""
    return value.argument is not None and _read_at_run_time_by_torch(value.argument, _has_static_shape(value), opset)


# TorchScript ops whose argument at this position PyTorch's exporter reads at run time (a Shape node it does not fold)
# even when the shape is static, so the input stays though this converter folds the read: {kind: (position, the first
# opset at which PyTorch's exporter folds the read too, None for none)}.
_READ_AT_RUN_TIME = {"aten::view_as": (1, None), "aten::reshape_as": (1, None), "aten::expand_as": (1, None),
                     "aten::full_like": (0, None), "aten::copy_": (0, None), "aten::unbind": (0, None),
                     "aten::Int": (0, None), "aten::_dim_arange": (0, 11)}
_SHAPE_QUERIES = frozenset({"aten::size", "aten::sym_size", "aten::dim", "aten::numel", "aten::len", "prim::shape"})
_FILLS = frozenset({"aten::fill_", "aten::fill"})


def _has_static_shape(value: ir.Value) -> bool:
    return value.shape is not None and all(isinstance(dim, int) for dim in value.shape)


def _read_at_run_time_by_torch(ts_value, static: bool, opset: int) -> bool:
    """Whether PyTorch's exporter reads the input ``ts_value`` at run time where this converter folded every read:
    through ``view_as``/``reshape_as``/``expand_as`` (the other tensor's shape), ``full_like``, ``copy_`` into it,
    ``unbind`` and ``int()`` of it; through ``_dim_arange`` below opset 11; through ``fill_``
    with a value computed at run time; through a shape query when its shape has dynamic axes; as an item of a list
    indexed at a position computed at run time."""
    for use in ts_value.uses():
        kind = use.user.kind()
        position, folded_from = _READ_AT_RUN_TIME.get(kind, (None, None))
        if position == use.offset and (folded_from is None or opset < folded_from):
            return True
        if not static and kind in _SHAPE_QUERIES:
            return True
        if kind in _FILLS and use.offset == 0 and use.user.inputsAt(1).node().kind() != "prim::Constant":
            return True
        if kind == "prim::ListConstruct" and any(
                item.user.kind() == "aten::__getitem__" and item.user.inputsAt(1).node().kind() != "prim::Constant"
                for item in use.user.output().uses()):
            return True  # an item of a list indexed at a run-time position: PyTorch's exporter makes the list a sequence
    return False
