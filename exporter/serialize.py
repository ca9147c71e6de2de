"""Assemble the ModelProto (opset imports, IR version, value infos, initializers) and write it atomically."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from exporter import ir
from exporter.errors import ExportArgumentError

PRODUCER_NAME = "onnx-export-engine"
PRODUCER_VERSION = "0.1.0"
TWO_GIB = 2**31

# The IR version that introduced each opset: a model stamped with it loads in every runtime of that era.
_IR_VERSION_FOR_OPSET = {7: 3, 8: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8}


def ir_version_for(opset: int) -> int:
    return _IR_VERSION_FOR_OPSET[opset]


def value_info(value: ir.Value, shape: tuple | None = None) -> onnx.ValueInfoProto:
    shape = value.shape if shape is None else shape
    if value.kind == ir.SEQUENCE:
        return helper.make_tensor_sequence_value_info(value.name, value.dtype or 0, shape)
    return helper.make_tensor_value_info(value.name, value.dtype or 0, shape)


def graph_to_proto(graph: ir.Graph, inputs_with_params: bool, output_shapes: dict | None = None) -> onnx.GraphProto:
    """Serialize ``graph`` (and its subgraphs). Initializers are listed as inputs too when asked."""
    nodes = [node_to_proto(node) for node in graph.nodes]
    initializers = [numpy_helper.from_array(np.asarray(v.const), v.name) for v in graph.initializers]
    inputs = [value_info(v) for v in graph.inputs]
    if inputs_with_params:
        inputs += [value_info(v) for v in graph.initializers]
    output_shapes = output_shapes or {}
    outputs = [value_info(v, output_shapes.get(v.name)) for v in graph.outputs]
    return helper.make_graph(nodes, graph.name, inputs, outputs, initializer=initializers)


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


def is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def check_destination(f: Any) -> None:
    """Fail before exporting when ``f`` is neither a path nor a writable binary file object."""
    if is_path(f):
        parent = Path(f).expanduser().resolve().parent
        if not parent.is_dir():
            raise ExportArgumentError(f"cannot write {os.fspath(f)!r}: directory {str(parent)!r} does not exist")
        return
    if not hasattr(f, "write"):
        raise ExportArgumentError(f"f must be a file path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise ExportArgumentError("f must be opened in binary mode")


def write(model: onnx.ModelProto, f: Any, external_data: bool, validate_path=None) -> None:
    """Write ``model`` to ``f``; paths are written atomically (temp file + rename), never half-written.

    With external data, ``validate_path`` is called on the staged model file before anything is moved into place.
    """
    if not is_path(f):
        if external_data:
            raise ExportArgumentError(
                "the model is larger than 2 GiB and needs external data files; pass a file path as f, not a file object"
            )
        f.write(model.SerializeToString())
        return
    target = Path(f).expanduser().resolve()
    if not external_data:
        _atomic_write_bytes(target, model.SerializeToString())
        return
    _write_with_external_data(model, target, validate_path)


def _atomic_write_bytes(target: Path, payload: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def external_data_location(target: Path) -> str:
    return f"{target.name}.data"


def _write_with_external_data(model: onnx.ModelProto, target: Path, validate_path) -> None:
    location = external_data_location(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        staged_model = staging / target.name
        onnx.save_model(
            model, staged_model, save_as_external_data=True, all_tensors_to_one_file=True,
            location=location, size_threshold=1024,
        )
        if validate_path is not None:
            validate_path(str(staged_model))
        os.replace(staging / location, target.parent / location)
        os.replace(staged_model, target)
    finally:
        for leftover in staging.iterdir():
            leftover.unlink()
        staging.rmdir()
