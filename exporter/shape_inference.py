"""ONNX shape inference on a partially built graph, to learn which dims stay static in dynamic-shape exports."""

from __future__ import annotations

import onnx
from onnx import helper

from exporter import ir, serialize


def infer_value_shape(graph: ir.Graph, target: ir.Value, opset: int, domains: set[str]) -> tuple | None:
    """The shape of ``target`` (ints and dim names) inferred from the nodes built so far, or None."""
    nodes = [serialize.node_to_proto(node) for node in graph.nodes]
    inputs = [serialize.value_info(v) for v in graph.inputs]
    inputs += [_type_only(v) for v in graph.initializers]
    output = helper.make_tensor_value_info(target.name, target.dtype or 0, None)
    graph_proto = helper.make_graph(nodes, "partial", inputs, [output])
    model = serialize.make_model(graph_proto, opset, {}, domains)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        return None
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        if info.name == target.name and info.type.tensor_type.HasField("shape"):
            return tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in info.type.tensor_type.shape.dim
            )
    return None


def _type_only(value: ir.Value) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(value.name, value.dtype or 0, value.shape)


def infer_local_shapes(nodes: list[ir.Node], opset: int, domains: set[str]) -> None:
    """Fill unknown output shapes of ``nodes`` by ONNX shape inference over these nodes alone.

    Values they read from elsewhere enter with the type (and constant payload) known for them.
    """
    from onnx import numpy_helper

    produced = {id(v) for node in nodes for v in node.outputs}
    inputs, initializers, seen = [], [], set()
    for node in nodes:
        for value in node.inputs:
            if value is None or id(value) in produced or id(value) in seen:
                continue
            seen.add(id(value))
            inputs.append(serialize.value_info(value))
            if value.const is not None and value.const.size <= 4096:
                initializers.append(numpy_helper.from_array(value.const, value.name))
    unknown = {v.name: v for node in nodes for v in node.outputs if v.shape is None and v.kind == ir.TENSOR}
    if not unknown:
        return
    outputs = [helper.make_tensor_value_info(name, v.dtype or 0, None) for name, v in unknown.items()]
    graph_proto = helper.make_graph(
        [serialize.node_to_proto(node) for node in nodes], "local", inputs, outputs, initializer=initializers
    )
    model = serialize.make_model(graph_proto, opset, {}, domains)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        return
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        value = unknown.get(info.name)
        if value is not None and info.type.tensor_type.HasField("shape"):
            value.shape = tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in info.type.tensor_type.shape.dim
            )
