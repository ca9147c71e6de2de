"""Validate: the assembled model must pass the full ONNX checker before anything is written.

The checker parses the serialized model, so checking the bytes about to be written costs a second pass over every
weight. :func:`check_model` avoids it: the checker's full check (graph structure, schemas, types, full shape
inference) runs on a skeleton of the model in which each large main-graph initializer is a graph input of the same
name, type and shape (what shape inference reads of it), and the one thing the checker verifies of an initializer's
payload, that it holds exactly one data field of the size its type and shape need, is checked here on the tensor
itself without copying it.
"""

from __future__ import annotations

import math

import onnx

from exporter.errors import CheckerError

# Initializers at least this large are checked by their size here instead of being serialized into the skeleton.
SKELETON_MIN_BYTES = 1024
_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def check(model_or_path: onnx.ModelProto | bytes | str) -> None:
    """Run ``onnx.checker.check_model(full_check=True)`` on a model, its serialized bytes or its file (a model
    with external data is checked on its file); a failure is a :class:`CheckerError`."""
    try:
        onnx.checker.check_model(model_or_path, full_check=True)
    except Exception as error:
        raise CheckerError(f"the exported model fails the ONNX checker: {error}") from error


def check_model(model: onnx.ModelProto) -> None:
    """The full check of an in-memory ``model`` without serializing its large weights (see the module docstring);
    a failure is a :class:`CheckerError`."""
    skeleton, detached = _skeleton(model)
    for tensor in detached:
        _check_payload(tensor)
    check(skeleton.SerializeToString())


def _skeleton(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[onnx.TensorProto]]:
    """``model`` with its large main-graph initializers declared as graph inputs instead, and those initializers."""
    skeleton = onnx.ModelProto()
    _copy_fields(model, skeleton, skip="graph")
    graph = skeleton.graph
    _copy_fields(model.graph, graph, skip="initializer")
    declared = {value.name for value in model.graph.input}
    detached = []
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.ByteSize() < SKELETON_MIN_BYTES:
            graph.initializer.append(tensor)
            continue
        detached.append(tensor)
        if tensor.name not in declared:
            graph.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return skeleton, detached


def _copy_fields(source, target, skip: str) -> None:
    for descriptor, value in source.ListFields():
        if descriptor.name == skip:
            continue
        if hasattr(value, "extend"):  # a repeated field
            getattr(target, descriptor.name).extend(value)
        elif descriptor.message_type is not None:
            getattr(target, descriptor.name).CopyFrom(value)
        else:
            setattr(target, descriptor.name, value)


def _check_payload(tensor: onnx.TensorProto) -> None:
    """What the checker verifies of a dense tensor's payload: one data field, as large as its type and shape need."""
    fields = [name for name in _DATA_FIELDS if _has(tensor, name)]
    if len(fields) != 1:
        raise CheckerError(f"the exported model fails the ONNX checker: initializer {tensor.name!r} holds "
                           f"{len(fields)} data fields ({fields}), not one")
    count = math.prod(tensor.dims)
    if fields[0] == "raw_data":
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        if len(tensor.raw_data) != count * itemsize:
            raise CheckerError(f"the exported model fails the ONNX checker: initializer {tensor.name!r} has "
                               f"{len(tensor.raw_data)} bytes of raw data for {count} elements of {itemsize} bytes")
    elif len(getattr(tensor, fields[0])) < count:
        raise CheckerError(f"the exported model fails the ONNX checker: initializer {tensor.name!r} has "
                           f"{len(getattr(tensor, fields[0]))} values in {fields[0]} for {count} elements")


def _has(tensor: onnx.TensorProto, name: str) -> bool:
    return tensor.HasField(name) if name == "raw_data" else len(getattr(tensor, name)) > 0
