"""ONNX shape inference on a partially built graph, to learn which dims stay static in dynamic-shape exports."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from exporter import ir, serialize


def infer_value_shape(graph: ir.Graph, target: ir.Value, opset: int, domains: set[str]) -> tuple | None:
    """The shape of ``target`` (ints and dim names) inferred from the nodes built so far, or None.

    Only the nodes ``target`` depends on are inferred, and only back to float tensors that an earlier call already
    inferred: those enter as inputs of the shape it found (unknown if it found none, as it would be again). Integer tensors are followed to their sources, because
    ONNX data propagation needs the values of shape computations (Shape -> Gather -> Concat -> Reshape). Every
    value inferred on the way keeps its shape, so a dynamic-shape export infers each node about once instead of
    re-inferring the whole graph for every query.
    """
    cone, boundary = _cone(graph, target)
    if cone is None:
        cone, boundary = list(graph.nodes), list(graph.inputs) + list(graph.initializers)
    nodes = [serialize.node_to_proto(node) for node in cone]
    inputs = [serialize.value_info(v, v.inferred_shape) if v.inferred_shape is not None else _type_only(v) for v in boundary]
    output = helper.make_tensor_value_info(target.name, target.dtype or 0, None)
    graph_proto = helper.make_graph(nodes, "partial", inputs, [output])
    model = serialize.make_model(graph_proto, opset, {}, domains)
    produced = {v.name: v for node in cone for v in node.outputs if not v.shape_inferred}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        target.shape_inferred = True
        return None
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        value = produced.get(info.name)
        if value is not None and info.type.tensor_type.HasField("shape"):
            value.inferred_shape = tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in info.type.tensor_type.shape.dim
            )
    for value in produced.values():
        value.shape_inferred = True
    return target.inferred_shape


_SHAPE_DATA_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.BOOL, None}


def _cone(graph: ir.Graph, target: ir.Value) -> tuple[list[ir.Node] | None, list[ir.Value]]:
    """The nodes ``target`` depends on (in graph order) and the values entering them from outside, or
    (None, []) when a node with subgraphs is involved (they may read any earlier value implicitly)."""
    picked: set[int] = set()
    boundary: dict[int, ir.Value] = {}
    pending = [target.producer] if target.producer is not None else []
    while pending:
        node = pending.pop()
        if id(node) in picked:
            continue
        if any(isinstance(a, ir.Graph) or (isinstance(a, list) and a and isinstance(a[0], ir.Graph))
               for a in node.attrs.values()):
            return None, []
        picked.add(id(node))
        for value in node.inputs:
            if value is None:
                continue
            settled_float = value.shape_inferred and value.dtype not in _SHAPE_DATA_TYPES
            if value.producer is None or settled_float:
                boundary[id(value)] = value
            else:
                pending.append(value.producer)
    return [node for node in graph.nodes if id(node) in picked], list(boundary.values())


def _type_only(value: ir.Value) -> onnx.ValueInfoProto:
    if value.kind == ir.OPTIONAL:
        return serialize.value_info(value)
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
                initializers.append(numpy_helper.from_array(np.asarray(value.const), value.name))
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
