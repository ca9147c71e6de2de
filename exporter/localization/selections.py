"""Data-dependent selections in a TorchScript graph: the decision nodes (float data in, integers or bools out:
top-k, NMS, thresholds) and every value computed after one, for :class:`exporter.verify.SelectionCheck`."""

from __future__ import annotations

from typing import Any

import torch

from exporter.ts_types import blocks_of, inputs_of

# TorchScript ops ranking their first input along ``dim``: exactly equal elements may come in either order.
RANKING = ("aten::topk", "aten::sort", "aten::argsort")
# Ops whose integer result depends on a float tensor's shape only: not decisions.
_SHAPE_QUERIES = ("aten::size", "aten::_shape_as_tensor", "aten::numel", "aten::dim", "aten::len", "prim::shape",
                  "onnx::Shape", "aten::sym_size")
_INTEGRAL = ("Long", "Int", "Short", "Char", "Byte", "Bool")
# Ops reading some arguments (by position) for their shape or dtype only: those carry no data into the result.
_SHAPE_ONLY_ARGUMENTS = {"aten::expand_as": (1,), "aten::view_as": (1,), "aten::reshape_as": (1,),
                         "aten::type_as": (1,), "aten::zeros_like": (0,), "aten::ones_like": (0,),
                         "aten::empty_like": (0,), "aten::full_like": (0,), "aten::new_zeros": (0,),
                         "aten::new_ones": (0,), "aten::new_empty": (0,), "aten::new_full": (0,)}


def _is_tensor_of(value: torch._C.Value, kinds: tuple[str, ...] | None) -> bool:
    if value.type().kind() != "TensorType":
        return False
    scalar = value.type().scalarType()
    return scalar in kinds if kinds is not None else scalar is not None and scalar not in _INTEGRAL


def node_reads(node: torch._C.Node) -> list[torch._C.Value]:
    """A TorchScript node's inputs and the outer values its blocks read."""
    reads = inputs_of(node)
    for block in blocks_of(node):
        for inner in block.nodes():
            reads.extend(node_reads(inner))
        reads.extend(block.returnNode().inputs())
    return reads


def selections(graph: torch._C.Graph) -> tuple[list[torch._C.Node], set[int]]:
    """The top-level decision nodes (a float tensor computed from the inputs' data in, an integer or bool tensor
    out) and the unique ids of every value computed from one of their results (theirs included). Values computed
    from shapes only (an image's size turned into a resize's output size) carry no data: no decision there."""
    decisions: list[torch._C.Node] = []
    post: set[int] = set()
    data = {v.unique() for v in graph.inputs()}
    for node in graph.nodes():
        reads = node_reads(node)
        if node.kind() in _SHAPE_ONLY_ARGUMENTS:
            reads = [v for k, v in enumerate(reads) if k not in _SHAPE_ONLY_ARGUMENTS[node.kind()]]
        if node.kind() not in _SHAPE_QUERIES and any(v.unique() in data for v in reads):
            data.update(v.unique() for v in node.outputs())
        if any(v.unique() in post for v in reads):
            post.update(v.unique() for v in node.outputs())
            continue
        if (node.kind() not in _SHAPE_QUERIES and any(_is_tensor_of(v, None) and v.unique() in data for v in reads)
                and any(_is_tensor_of(v, _INTEGRAL) for v in node.outputs())):
            decisions.append(node)
            post.update(v.unique() for v in node.outputs())
    return decisions, post


def constant_argument(node: torch._C.Node, argument: str) -> Any:
    """The constant value of ``node``'s argument named ``argument`` (by its schema), or None."""
    try:
        schema = node.schema()
        names = [a.name for a in (torch._C.parse_schema(schema) if isinstance(schema, str) else schema).arguments]
        value = node.inputsAt(names.index(argument))
    except (ValueError, RuntimeError):
        return None
    return value.toIValue() if value.node().kind() == "prim::Constant" else None
