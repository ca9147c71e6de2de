"""Assemble the ModelProto: opset imports, IR version, names, value infos, output shapes, initializers. Where its bytes
go is ``exporter.destination``'s (atomic write, external data past 2 GiB); large weights written straight from their
arrays are ``exporter.tensor_bytes``'."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from exporter import ir
from exporter.dtypes import onnx_shape
from exporter.tensor_bytes import StreamedWeights, fill_tensor
from exporter.version import __version__

PRODUCER_NAME = "onnx-export-engine"
PRODUCER_VERSION = __version__


def ir_version_for(opset: int) -> int:
    """The IR version that introduced ``opset`` (onnx's own table): a model stamped with it loads in every runtime
    of that era."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


def assemble(
    graph: ir.Graph, opset: int, custom_opsets: dict[str, int], used_domains: set[str], params_as_inputs: bool,
    axes: dict, example_outputs: list[Any], tensor_writer=None, apart: StreamedWeights | None = None,
) -> onnx.ModelProto:
    """The ModelProto of ``graph``, its opset imports as :func:`make_model`'s, its outputs shaped by
    ``example_outputs`` (one per output) and the dynamic ``axes``; ``tensor_writer`` makes the initializers (see
    :func:`graph_to_proto`); ``apart`` keeps the large ones out of the ModelProto, to be streamed into the file after
    it (see :class:`StreamedWeights`). The opset facts come from the export session, which this module, below the
    graph context that holds it, never imports."""
    uniquify_names(graph)
    shapes = output_shapes(graph, axes, example_outputs)
    # The graph is built inside the model: make_model(graph_proto) would copy every initializer's bytes once more.
    model = make_model(onnx.GraphProto(), opset, custom_opsets, used_domains)
    graph_to_proto(graph, params_as_inputs, shapes, apart.keep_apart if apart is not None else tensor_writer,
                   into=model.graph)
    untyped = any(not o.type.tensor_type.elem_type for o in model.graph.output if o.type.HasField("tensor_type"))
    if axes or untyped:
        inferred = _inferred_outputs(apart.declared(model) if apart is not None else model)
        if axes:
            refine_output_shapes(model, axes, inferred)
        if untyped:
            fill_output_types(model, inferred)
    return model


def _inferred_outputs(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """The graph outputs as ONNX shape inference types them (none when inference fails), by name."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        return {}
    return {o.name: o for o in inferred.graph.output}


def fill_output_types(model: onnx.ModelProto, inferred: dict[str, onnx.ValueInfoProto]) -> None:
    """Give a graph output whose element type the converter could not tell (a scripted model's Tensor, computed by
    an op the converter has no type rule for) the type ONNX type inference found (``inferred``, by output name):
    ONNX Runtime refuses to load a model with an output of type 0."""
    for output in model.graph.output:
        source = inferred.get(output.name)
        if output.type.HasField("tensor_type") and not output.type.tensor_type.elem_type and source is not None:
            output.type.tensor_type.elem_type = source.type.tensor_type.elem_type


def uniquify_names(graph: ir.Graph) -> None:
    """Make every value name unique across the model (ONNX requires SSA names, subgraphs included)."""
    taken: set[str] = set()
    fixed = {id(v) for v in graph.inputs + graph.outputs + graph.initializers}

    def claim(value: ir.Value) -> None:
        if id(value) in fixed and value.name not in taken:
            taken.add(value.name)
            return
        base, k = value.name, 1
        while value.name in taken:
            value.name = f"{base}_{k}"
            k += 1
        taken.add(value.name)

    for value in graph.inputs + graph.initializers + graph.outputs:
        claim(value)

    def visit(g: ir.Graph) -> None:
        for value in g.inputs if g is not graph else []:
            claim(value)
        for node in g.nodes:
            for value in node.outputs:
                if id(value) not in fixed:
                    claim(value)
            for sub in g.subgraphs_of(node):
                visit(sub)

    visit(graph)


def output_shapes(graph: ir.Graph, axes: dict, example_outputs: list[Any]) -> dict[str, tuple | None]:
    """Output name -> its declared shape: a static export's example shapes, else the graph's own (the example's
    rank where the graph knows none), with the dynamic ``axes`` named. A graph with a list input (a sequence, whose
    items and length are free) declares no example sizes either: its outputs' sizes may depend on the list."""
    static = not axes and not any(value.kind == ir.SEQUENCE for value in graph.inputs)
    static_shapes = {}
    # Not strict: an output with no example (none recorded, or fewer) keeps the graph's own shape below.
    for value, example in zip(graph.outputs, example_outputs, strict=False):
        if value.kind == ir.TENSOR and isinstance(example, torch.Tensor):
            static_shapes[value.name] = onnx_shape(example)
    shapes = {}
    for value in graph.outputs:
        if static:
            shape = list(static_shapes.get(value.name, value.shape or ()))
        elif value.shape is not None:
            shape = list(value.shape)
        else:  # a shape the graph does not know (scripted code): the example's rank, every size left open
            shape = [None] * len(static_shapes.get(value.name, ()))
        for axis, dim_name in axes.get(value.name, {}).items():
            if axis < len(shape):
                shape[axis] = dim_name
        shapes[value.name] = tuple(shape) if (value.shape is not None or value.name in static_shapes) else None
    return shapes


def refine_output_shapes(model: onnx.ModelProto, axes: dict, inferred: dict[str, onnx.ValueInfoProto]) -> None:
    """Take output dims from ONNX shape inference (``inferred``, by output name), with the dynamic axes named."""
    for output in model.graph.output:
        source = inferred.get(output.name)
        if source is None or not source.type.tensor_type.HasField("shape"):
            continue
        output.type.tensor_type.shape.CopyFrom(source.type.tensor_type.shape)
        for axis, dim_name in axes.get(output.name, {}).items():
            dims = output.type.tensor_type.shape.dim
            if axis < len(dims):
                dims[axis].Clear()
                dims[axis].dim_param = dim_name


def optional_element_type(value: ir.Value, shape: tuple | None = None) -> onnx.TypeProto:
    """The tensor type an optional value holds. An element type nothing determines (a None that no branch or
    iteration ever fills) is float, as for an empty list."""
    return helper.make_tensor_type_proto(value.dtype or onnx.TensorProto.FLOAT, value.shape if shape is None else shape)


def value_info(value: ir.Value, shape: tuple | None = None) -> onnx.ValueInfoProto:
    shape = value.shape if shape is None else shape
    if value.kind == ir.OPTIONAL:
        return helper.make_value_info(value.name, helper.make_optional_type_proto(optional_element_type(value, shape)))
    if value.kind == ir.SEQUENCE:
        # An empty list that nothing is ever inserted into keeps SequenceEmpty's default element type, float.
        return helper.make_tensor_sequence_value_info(value.name, value.dtype or onnx.TensorProto.FLOAT, shape)
    return helper.make_tensor_value_info(value.name, value.dtype or 0, shape)


def graph_to_proto(
    graph: ir.Graph, inputs_with_params: bool, output_shapes: dict | None = None, tensor_writer=None,
    into: onnx.GraphProto | None = None,
) -> onnx.GraphProto:
    """Serialize ``graph`` (and its subgraphs) into ``into`` (default: a new GraphProto). Initializers are listed
    as inputs too when asked.

    ``tensor_writer(array, name) -> TensorProto | None`` makes the initializers, None for one it keeps out of the
    graph (default: inline data, written straight into the graph's own initializer entries: a TensorProto made
    apart would be copied once more on insertion, which for a model of 1 GB of weights is a second of work).
    """
    nodes = [node_to_proto(node) for node in graph.nodes]
    inputs = [value_info(v) for v in graph.inputs]
    if inputs_with_params:
        inputs += [value_info(v) for v in graph.initializers]
    output_shapes = output_shapes or {}
    outputs = [value_info(v, output_shapes.get(v.name)) for v in graph.outputs]
    proto = onnx.GraphProto() if into is None else into
    proto.name = graph.name
    proto.node.extend(nodes)
    proto.input.extend(inputs)
    proto.output.extend(outputs)
    for value in graph.initializers:
        if tensor_writer is not None:
            payload = value.const if isinstance(value.const, ir.RowScaled) else np.asarray(value.const)
            tensor = tensor_writer(payload, value.name)
            if tensor is not None:
                proto.initializer.append(tensor)
        else:
            fill_tensor(proto.initializer.add(), np.asarray(value.const), value.name)
    return proto


def node_to_proto(node: ir.Node) -> onnx.NodeProto:
    proto = helper.make_node(
        node.op_type,
        [v.name if v is not None else "" for v in node.inputs],
        [v.name for v in node.outputs],
        name=node.name,
        domain=node.domain or None,
        doc_string=node.doc_string or None,
    )
    for key, payload in node.attrs.items():
        attr_type = node.attr_types[key]
        if isinstance(payload, ir.Graph):
            payload = graph_to_proto(payload, inputs_with_params=False)
        elif isinstance(payload, np.ndarray):
            payload = numpy_helper.from_array(payload)
        proto.attribute.append(helper.make_attribute(key, payload, attr_type=attr_type))
    if node.op_type == "Optional" and not node.domain and "type" not in node.attrs:
        # Written from the output's type as it stands once conversion ends: an empty Optional (a None) learns its
        # element type from the other branch of an If or from a Loop's iterations after it is made.
        proto.attribute.append(helper.make_attribute("type", optional_element_type(node.outputs[0])))
    return proto


def make_model(
    graph_proto: onnx.GraphProto, opset: int, custom_opsets: dict[str, int], used_domains: set[str], doc_string: str = ""
) -> onnx.ModelProto:
    opset_imports = [helper.make_opsetid("", opset)]
    for domain in sorted(used_domains | set(custom_opsets)):
        opset_imports.append(helper.make_opsetid(domain, custom_opsets.get(domain, 1)))
    model = helper.make_model(
        graph_proto,
        opset_imports=opset_imports,
        producer_name=PRODUCER_NAME,
        producer_version=PRODUCER_VERSION,
        doc_string=doc_string,
    )
    model.ir_version = ir_version_for(opset)
    return model
