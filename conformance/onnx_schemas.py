"""Every node of an exported model against the ONNX operator schema of its opset (``onnx.defs.get_schema``).

The exporter's own ``onnx.checker`` pass already rejects an op the opset lacks, an attribute the schema does not
define and a missing required one; what it lets through is an attribute *value* the version of the op no longer
accepts, such as GridSample-20's renamed modes. The op tests run this on every case they export, at every opset.
"""

from __future__ import annotations

import onnx
from onnx import AttributeProto

# String attributes whose accepted values changed between versions of an op the exporter emits, by the version
# (the schema's since_version) that accepts them: ONNX Runtime and onnx.reference refuse the other names.
_STRING_VALUES = {
    ("GridSample", 16): {"mode": {"bilinear", "nearest", "bicubic"}},
    ("GridSample", 20): {"mode": {"linear", "nearest", "cubic"}},
}


def schema_problems(model: onnx.ModelProto) -> list[str]:
    """What in ``model``'s nodes (subgraphs included) the schemas of its default-domain opset do not define."""
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return [problem for node in _nodes(model.graph) for problem in _node_problems(node, opset)]


def _nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from _nodes(attribute.g)
            for subgraph in attribute.graphs:
                yield from _nodes(subgraph)


def _node_problems(node: onnx.NodeProto, opset: int) -> list[str]:
    if node.domain not in ("", "ai.onnx"):
        return []  # a custom domain's op has no ONNX schema
    try:
        schema = onnx.defs.get_schema(node.op_type, opset)
    except onnx.defs.SchemaError:
        return [f"{node.op_type} does not exist at opset {opset}"]
    where = f"{node.op_type}-{schema.since_version} (opset {opset})"
    given = {attribute.name: attribute for attribute in node.attribute}
    problems = [f"{where} has no attribute {name!r}" for name in given if name not in schema.attributes]
    problems += [f"{where} needs attribute {name!r}" for name, spec in schema.attributes.items()
                 if spec.required and name not in given]
    for name, accepted in _STRING_VALUES.get((node.op_type, schema.since_version), {}).items():
        if name in given and given[name].s.decode() not in accepted:
            problems.append(f"{where} takes {name} in {sorted(accepted)}, not {given[name].s.decode()!r}")
    return problems
