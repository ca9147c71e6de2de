"""Facts about TorchScript values that the converter and the symbolics both read: a value's ONNX element type,
shape and whether it is a Python number. It sits below ``convert.py`` so symbolics need not import the converter."""

from __future__ import annotations

import torch

from exporter import dtypes


# The TorchScript node kinds that own blocks. Asking another node for its blocks costs microseconds (the iterator ends
# in a C++ exception), which adds up to a pass's main cost over a large traced graph.
KINDS_WITH_BLOCKS = frozenset({"prim::If", "prim::Loop", "prim::With", "prim::Closure"})


def blocks_of(node) -> list:
    """The blocks of ``node`` (none for a kind that owns none)."""
    return list(node.blocks()) if node.kind() in KINDS_WITH_BLOCKS else []


def inputs_of(node) -> list:
    """``list(node.inputs())`` by index: iterating TorchScript's own iterator ends in a C++ exception (7 us a node)."""
    return [node.inputsAt(i) for i in range(node.inputsSize())]


def outputs_of(node) -> list:
    """``list(node.outputs())`` by index (see :func:`inputs_of`)."""
    return [node.outputsAt(i) for i in range(node.outputsSize())]


def ts_value_type(ts_value, static_shapes: bool) -> tuple[int | None, tuple | None, bool]:
    """(ONNX element type, shape, is_number) of a TorchScript value, from its recorded type."""
    t = ts_value.type()
    kind = t.kind()
    if kind == "TensorType":
        scalar = t.scalarType()
        if scalar in dtypes.QUANTIZED_SCALAR_NAMES:
            scalar = "Float"  # what a symbolic computes on a quantized tensor: its dequantized values
        elem = dtypes.onnx_from_torch(dtypes.SCALAR_NAME_TO_TORCH[scalar]) if scalar else None
        sizes = t.varyingSizes()
        if sizes is None:
            return elem, None, False
        shape = tuple(sizes) if static_shapes else tuple(None for _ in sizes)
        return elem, shape, False
    if kind == "IntType":
        return dtypes.onnx_from_torch(torch.int64), (), True
    if kind == "FloatType":
        return dtypes.onnx_from_torch(torch.float64), (), True
    if kind == "BoolType":
        return dtypes.onnx_from_torch(torch.bool), (), True
    return None, None, False
