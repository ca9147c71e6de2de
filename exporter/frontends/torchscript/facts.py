"""Facts about TorchScript values that the converter and the symbolics both read: a value's ONNX element type,
shape and whether it is a Python number. It sits below the driver so symbolics need not import the converter."""

from __future__ import annotations

import functools

import torch

from exporter import dtypes
from exporter.graph_context import NodeFacts

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


class TorchScriptFacts(NodeFacts):
    """The facts symbolics ask about a TorchScript node (see :class:`exporter.graph_context.NodeFacts`)."""

    def kind(self, node) -> str:
        return node.kind()

    def overload(self, node) -> str:
        name = node.schema().partition("(")[0]
        return name.partition(".")[2]

    def argument_names(self, node) -> list[str]:
        try:
            return [argument.name for argument in _parsed_schema(node.schema()).arguments]
        except RuntimeError:  # "(no schema)": a prim op
            return []

    def input_count(self, node) -> int:
        return node.inputsSize()

    def input_type(self, node, index: int) -> str:
        ts_type = node.inputsAt(index).type()
        return "NoneType" if ts_type.kind() == "NoneType" else ts_type.str()

    def input_layout(self, node, index: int) -> tuple[tuple | None, tuple | None]:
        ts_type = node.inputsAt(index).type()
        if ts_type.kind() != "TensorType":
            return None, None
        sizes, strides = ts_type.varyingSizes(), ts_type.strides()
        return (tuple(sizes) if sizes is not None else None), (tuple(strides) if strides is not None else None)

    def input_storage_offset(self, node, index: int) -> int | None:
        """A TorchScript type records no storage offset: known for a constant tensor only."""
        value = node.inputsAt(index)
        if value.node().kind() != "prim::Constant" or value.type().kind() != "TensorType":
            return None
        return value.toIValue().storage_offset()

    def input_producer(self, node, index: int) -> tuple[str, str]:
        producer = node.inputsAt(index).node()
        kind = producer.kind()
        if kind in ("prim::Param", "prim::Constant"):
            return "", ""
        return kind, self.overload(producer) if kind.startswith("aten::") else ""

    def input_is_size_of(self, node, index: int, of_index: int, dim: int) -> bool:
        producer = node.inputsAt(index).node()
        while producer.kind() in ("aten::Int", "prim::NumToTensor", "aten::ScalarImplicit"):
            producer = producer.inputsAt(0).node()
        return (producer.kind() == "aten::size" and producer.inputsSize() == 2
                and producer.inputsAt(0).unique() == node.inputsAt(of_index).unique()
                and producer.inputsAt(1).toIValue() == dim)

    def output_count(self, node) -> int:
        return node.outputsSize()

    def output_type(self, node, index: int, static_shapes: bool) -> tuple[int | None, tuple | None]:
        return ts_value_type(node.outputsAt(index), static_shapes)[:2]

    def output_readers(self, node, index: int) -> list[tuple[str, str, int]]:
        readers = []
        for use in node.outputsAt(index).uses():
            reader = use.user
            readers.append((reader.kind(), self.overload(reader) if reader.kind().startswith("aten::") else "",
                            use.offset))
        return readers

    def output_is_quantized(self, node, index: int) -> bool:
        """A scripted graph records no dtype: an output of an op on quantized tensors is then taken to be quantized
        too, as it is for every op such a graph can hold."""
        t = node.outputsAt(index).type()
        if t.kind() == "ListType":
            t = t.getElementType()
        if t.kind() != "TensorType":
            return False
        scalar = t.scalarType()
        return scalar is None or scalar in dtypes.QUANTIZED_SCALAR_NAMES

    def output_is_optional(self, node, index: int) -> bool:
        return node.outputsAt(index).type().kind() == "OptionalType"

    def list_output_length(self, node, index: int) -> int | None:
        for use in node.outputsAt(index).uses():
            if use.user.kind() in ("prim::ListUnpack", "prim::TupleUnpack"):
                return use.user.outputsSize()
        return None


@functools.cache
def _parsed_schema(schema: str):
    return torch._C.parse_schema(schema)


TORCHSCRIPT_FACTS = TorchScriptFacts()


def declared_element_type(ts_value) -> int | None:
    """The element type TorchScript recorded for a ``Tensor?`` (or ``Tensor``) value, where it recorded one."""
    ts_type = ts_value.type()
    if ts_type.kind() == "OptionalType":
        ts_type = ts_type.getElementType()
    if ts_type.kind() != "TensorType" or ts_type.scalarType() not in dtypes.SCALAR_NAME_TO_TORCH:
        return None
    return dtypes.onnx_from_torch(dtypes.SCALAR_NAME_TO_TORCH[ts_type.scalarType()])


def graph_output_count(graph) -> int:
    return len(list(graph.outputs()))
