"""An ``@onnxscript.script()`` function inlined into the graph under construction from its FunctionProto: its nodes
in order, its attribute parameters (``ref_attr_name``) replaced by the call's values or their defaults, the script
functions it calls inlined in turn, and the graphs of its If/Loop/Scan nodes converted into our subgraphs (reading the
enclosing values by name, as ONNX scoping does). Used by ``exporter/custom_translation.py``."""

from __future__ import annotations

from typing import Any

import onnx
import onnx.numpy_helper

from exporter import ir
from exporter.errors import SymbolicValueError


def inline_function(recorder, function, arguments: dict[str, Any]) -> list[Any]:
    """The outputs of ``function`` (an onnxscript ``OnnxFunction``) called with ``arguments`` (its Python parameters
    by name: our values, Python constants), its nodes emitted through ``recorder``."""
    proto = function.to_function_proto()
    called = {name: callee for name, callee in function.function_ir.get_called_functions().items()}
    return _inline_proto(recorder, proto, arguments, called, function.name)


def _inline_proto(recorder, proto: onnx.FunctionProto, arguments: dict[str, Any], called: dict[str, Any],
                  name: str) -> list[Any]:
    attributes: dict[str, Any] = {a.name: _attribute_value(a) for a in proto.attribute_proto}
    attributes.update({a: None for a in proto.attribute})
    for attribute in attributes:
        if attribute in arguments:
            attributes[attribute] = arguments[attribute]
    missing = [formal for formal in proto.input if formal not in arguments]
    if missing:
        raise SymbolicValueError(f"the onnxscript function {name} is called without its input {missing[0]!r}")
    env = {formal: arguments[formal] for formal in proto.input}
    scope = _Scope(attributes, called, {o.domain: o.version for o in proto.opset_import})
    for node in proto.node:
        _inline_node(recorder, node, env, scope)
    return [env[output] for output in proto.output]


class _Scope:
    """What the nodes of one function body resolve against: its attribute values, the script functions it calls (by
    name), the opset versions it imports."""

    def __init__(self, attributes: dict[str, Any], called: dict[str, Any], imports: dict[str, int]):
        self.attributes, self.called, self.imports = attributes, called, imports


def _inline_node(recorder, node: onnx.NodeProto, env: dict[str, Any], scope: _Scope) -> None:
    inputs = [env[name] if name else None for name in node.input]
    attributes, types = {}, {}
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            value = scope.attributes.get(attribute.ref_attr_name)
            if value is None:
                continue  # an optional attribute the call leaves unset
        elif attribute.type == onnx.AttributeProto.GRAPH:
            value = _subgraph(recorder, attribute.g, env, scope)
        else:
            value = _attribute_value(attribute)
        attributes[attribute.name] = value
        types[attribute.name] = attribute.type
    callee = scope.called.get(node.op_type) if node.domain not in ("", "ai.onnx") else None
    if callee is not None and getattr(callee, "function_ir", None) is not None and \
            callee.function_ir.domain == node.domain:
        callee_proto = callee.to_function_proto()
        arguments = dict(zip(callee_proto.input, inputs, strict=False))
        arguments.update(attributes)
        nested = {n: f for n, f in callee.function_ir.get_called_functions().items()}
        results = _inline_proto(recorder, callee_proto, arguments, nested, callee.name)
    else:
        results = [traced.value for traced in recorder.emit(
            node.domain, node.op_type, inputs, attributes, len(node.output), scope.imports.get(node.domain), types)]
    for name, result in zip(node.output, results, strict=True):
        if name:
            env[name] = result


def _subgraph(recorder, graph: onnx.GraphProto, env: dict[str, Any], scope: _Scope) -> ir.Graph:
    """An If branch or Loop/Scan body as our subgraph: its inputs new values, its nodes emitted into it, names of the
    enclosing body read from ``env``."""
    g = recorder.g
    body = ir.Graph(g.session.fresh_name(graph.name or "body"), parent=g.graph)
    body.inputs = [ir.Value(g.session.fresh_name(vi.name), dtype=vi.type.tensor_type.elem_type or None)
                   for vi in graph.input]
    inner = dict(env)
    inner.update({vi.name: value for vi, value in zip(graph.input, body.inputs, strict=True)})
    sub = type(recorder)(g.subcontext(body))
    for node in graph.node:
        _inline_node(sub, node, inner, scope)
    body.outputs = [_local(sub.g, body, inner[vi.name]) for vi in graph.output]
    return body


def _local(g, body: ir.Graph, value: Any) -> ir.Value:
    """``value`` as an output of ``body``: a value it computes as it is; anything else through an Identity (an ONNX
    subgraph's outputs are its own values)."""
    if isinstance(value, ir.Value) and value.producer is not None and value.producer in body.nodes:
        return value
    local = g.op("Identity", g.value(value))
    local.dtype, local.shape = g.dtype(value), None
    return local


def _attribute_value(attribute: onnx.AttributeProto) -> Any:
    if attribute.type == onnx.AttributeProto.TENSOR:
        return onnx.numpy_helper.to_array(attribute.t)
    if attribute.type in (onnx.AttributeProto.GRAPHS, onnx.AttributeProto.SPARSE_TENSOR,
                          onnx.AttributeProto.TYPE_PROTO, onnx.AttributeProto.TENSORS):
        raise SymbolicValueError(f"attribute {attribute.name!r} is of type "
                                 f"{onnx.AttributeProto.AttributeType.Name(attribute.type)}: onnxscript functions are "
                                 "inlined with int, float, string, tensor and graph attributes only")
    value = onnx.helper.get_attribute_value(attribute)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [item.decode() for item in value]
    return value
