"""Facts about torch.export's FX nodes that the converter and the symbolics read, as ``exporter/frontends/torchscript/facts.py`` gives
them for TorchScript: a node's op and overload, its schema's arguments, and what the program recorded of its
values (``node.meta["val"]``: fake tensors with their dtype and shape, symbolic dims as SymInts)."""

from __future__ import annotations

import operator
from typing import Any

import torch

from exporter import dtypes
from exporter.graph_context import NodeFacts


def op_kind(node: torch.fx.Node) -> str:
    """"aten::add" for a call of ``torch.ops.aten.add.Tensor``; a Python function's own name otherwise."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target.name().partition(".")[0]
    return f"{getattr(target, '__module__', '') or 'builtins'}::{getattr(target, '__name__', str(target))}"


def producer_of(node: torch.fx.Node) -> torch.fx.Node:
    """The node computing ``node``'s value: for ``results[i]`` (a getitem) the op with several results it reads,
    else ``node`` itself."""
    container = node.args[0] if node.target is operator.getitem and node.args else None
    return container if isinstance(container, torch.fx.Node) else node


def schema_arguments(node: torch.fx.Node) -> list[Any]:
    """The node's raw arguments in its schema's order, defaults filled in (as a TorchScript node holds them all); a
    Python operator's (on sizes) as it was called."""
    if not isinstance(node.target, torch._ops.OpOverload):
        return list(node.args)
    values = []
    for index, argument in enumerate(node.target._schema.arguments):
        if index < len(node.args) and not argument.kwarg_only:
            values.append(node.args[index])
        elif argument.name in node.kwargs:
            values.append(node.kwargs[argument.name])
        elif argument.has_default_value():
            values.append(argument.default_value)
        else:
            values.append(None)
    return values


def value_type(value: Any, static_shapes: bool) -> tuple[int | None, tuple | None]:
    """(ONNX element type, shape) of a recorded value: a SymInt dim is None, as is every dim unless static."""
    if isinstance(value, torch.Tensor):
        elem = dtypes.onnx_from_torch(torch.float32 if value.is_quantized else value.dtype)
        if not static_shapes:
            return elem, tuple(None for _ in value.shape)
        return elem, tuple(d if isinstance(d, int) else None for d in value.shape)
    if isinstance(value, (bool, torch.SymBool)):
        return dtypes.onnx_from_torch(torch.bool), ()
    if isinstance(value, (int, torch.SymInt)):
        return dtypes.onnx_from_torch(torch.int64), ()
    if isinstance(value, (float, torch.SymFloat)):
        return dtypes.onnx_from_torch(torch.float64), ()
    return None, None


def _outputs(node: torch.fx.Node) -> list[Any]:
    value = node.meta.get("val")
    return list(value) if isinstance(value, (tuple, list)) and returns_several(node) else [value]


def returns_several(node: torch.fx.Node) -> bool:
    """Whether the node's op returns several values (a tuple torch.export reads with getitem)."""
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and len(target._schema.returns) > 1


class FxFacts(NodeFacts):
    """The facts symbolics ask about an FX node (see :class:`exporter.graph_context.NodeFacts`)."""

    def kind(self, node) -> str:
        return op_kind(node)

    def overload(self, node) -> str:
        name = getattr(node.target, "_overloadname", "")
        return "" if name == "default" else name

    def argument_names(self, node) -> list[str]:
        if not isinstance(node.target, torch._ops.OpOverload):
            return []
        return [argument.name for argument in node.target._schema.arguments]

    def input_count(self, node) -> int:
        return len(self.argument_names(node)) or len(node.args)

    def input_type(self, node, index: int) -> str:
        value = schema_arguments(node)[index]
        if value is None:
            return "NoneType"
        if isinstance(value, torch.device):
            return "Device"
        if isinstance(node.target, torch._ops.OpOverload):
            return str(node.target._schema.arguments[index].type)
        recorded = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
        return "Tensor" if isinstance(recorded, torch.Tensor) else type(recorded).__name__.removeprefix("Sym").lower()

    def input_layout(self, node, index: int) -> tuple[tuple | None, tuple | None]:
        value = schema_arguments(node)[index]
        example = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if not isinstance(example, torch.Tensor):
            return None, None
        sizes = tuple(d if isinstance(d, int) else None for d in example.shape)
        strides = tuple(s if isinstance(s, int) else None for s in example.stride())
        return sizes, (None if None in strides else strides)

    def input_storage_offset(self, node, index: int) -> int | None:
        value = schema_arguments(node)[index]
        example = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
        if not isinstance(example, torch.Tensor):
            return None
        offset = example.storage_offset()
        return offset if isinstance(offset, int) else None

    def input_producer(self, node, index: int) -> tuple[str, str]:
        value = schema_arguments(node)[index]
        if not isinstance(value, torch.fx.Node) or value.op != "call_function":
            return "", ""
        if value.target is operator.getitem:
            value = value.args[0]
        return self.kind(value), self.overload(value)

    def input_is_size_of(self, node, index: int, of_index: int, dim: int) -> bool:
        value, of = schema_arguments(node)[index], schema_arguments(node)[of_index]
        return bool(isinstance(value, torch.fx.Node) and value.target is torch.ops.aten.sym_size.int
                    and value.args[0] is of and value.args[1] == dim)

    def output_count(self, node) -> int:
        return len(_outputs(node))

    def output_type(self, node, index: int, static_shapes: bool) -> tuple[int | None, tuple | None]:
        return value_type(_outputs(node)[index], static_shapes)

    def output_readers(self, node, index: int) -> list[tuple[str, str, int]]:
        if returns_several(node):
            readers = [user for user in node.users if user.target is operator.getitem and user.args[1] == index]
            return [reader for user in readers for reader in self.output_readers(user, 0)]
        found = []
        for user in node.users:
            if user.op != "call_function":
                found.append((user.op, "", 0))
                continue
            raw = schema_arguments(user)
            positions = [i for i, value in enumerate(raw) if value is node or
                         (isinstance(value, (list, tuple)) and any(item is node for item in value))]
            found.extend((self.kind(user), self.overload(user), position) for position in positions)
        return found

    def output_is_quantized(self, node, index: int) -> bool:
        value = _outputs(node)[index]
        values = value if isinstance(value, (list, tuple)) else [value]
        return any(isinstance(v, torch.Tensor) and v.is_quantized for v in values)

    def output_is_optional(self, node, index: int) -> bool:
        target = node.target
        return isinstance(target, torch._ops.OpOverload) and str(target._schema.returns[index].type).endswith("?")

    def list_output_length(self, node, index: int) -> int | None:
        value = _outputs(node)[index]
        return len(value) if isinstance(value, (list, tuple)) else None


FX_FACTS = FxFacts()
