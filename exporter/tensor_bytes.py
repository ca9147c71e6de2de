"""A model's weights written from their arrays: a TensorProto filled inline, the bytes of an array in row-major
chunks, and the large initializers of a model written inline streamed into its file after the ModelProto
(:class:`StreamedWeights`), so they are serialized once."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from exporter import ir

# Inline tensors at least this large are streamed into the file from their arrays (see StreamedWeights).
STREAMED_TENSOR_MIN_BYTES = 1024


def fill_tensor(tensor: onnx.TensorProto, array: np.ndarray, name: str) -> None:
    """Make ``tensor`` hold ``array`` inline, as ``numpy_helper.from_array(array, name)`` would."""
    if array.dtype.kind not in "biuf" or array.dtype.itemsize == 0:
        tensor.CopyFrom(numpy_helper.from_array(array, name))
        return
    tensor.dims.extend(array.shape)
    if name:
        tensor.name = name
    tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    tensor.raw_data = numpy_helper.tobytes_little_endian(array)


def big_endian(dtype: np.dtype) -> bool:
    return dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")


def _tag(message: type[onnx.ModelProto | onnx.GraphProto | onnx.TensorProto], field: str) -> bytes:
    """The wire tag of a length-delimited field of an ONNX message."""
    return _varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | 2)


def _varint(number: int) -> bytes:
    encoded = bytearray()
    while number > 0x7F:
        encoded.append(number & 0x7F | 0x80)
        number >>= 7
    encoded.append(number)
    return bytes(encoded)


_CHUNK_BYTES = 1 << 24


def row_major_bytes(array: np.ndarray | ir.RowScaled) -> Iterator[memoryview]:
    """The bytes of ``array`` in row-major order: its own memory when it is contiguous; else made in chunks of its
    leading axis, so that a folded transpose is laid out, and a deferred product computed, once, on its way into the
    file, through one small buffer."""
    if isinstance(array, ir.RowScaled):
        rows = max(1, _CHUNK_BYTES // max(1, array.nbytes // max(1, len(array))))
        for start in range(0, len(array), rows):
            yield array.rows(start, start + rows).reshape(-1).view(np.uint8).data
        return
    if array.flags.c_contiguous:
        yield array.reshape(-1).view(np.uint8).data
        return
    rows = max(1, _CHUNK_BYTES // max(1, array[0].nbytes))
    for start in range(0, len(array), rows):
        yield _laid_out(array[start:start + rows]).reshape(-1).view(np.uint8).data


def _laid_out(chunk: np.ndarray) -> np.ndarray:
    """``chunk`` copied into row-major order. PyTorch's strided copy is cache-blocked: on a transposed weight it takes
    half of NumPy's time, which for a transformer's weights is most of the serialization. NumPy lays out what PyTorch
    cannot view (negative strides, element types it lacks)."""
    try:
        return torch.from_numpy(chunk).contiguous().numpy()
    except (TypeError, ValueError, RuntimeError):
        return np.ascontiguousarray(chunk)


class StreamedWeights:
    """The large initializers of a model written inline, kept out of its ModelProto and written into the file
    straight from their arrays, after the ModelProto's own bytes.

    Each is appended as a ``graph`` field holding one ``initializer``: protobuf parsers merge repeated occurrences
    of a message field into one message and append its repeated entries, so the file parses to the ModelProto
    with these initializers after its own. The weights are thereby serialized once, into the file, instead of
    being copied into the ModelProto, then into its serialized bytes, then into the file. :meth:`full_model`
    builds the ModelProto the file holds, for callers that ask for it.
    """

    _GRAPH, _INITIALIZER, _RAW_DATA = _tag(onnx.ModelProto, "graph"), _tag(onnx.GraphProto, "initializer"), _tag(
        onnx.TensorProto, "raw_data")

    def __init__(self) -> None:
        self.tensors: list[tuple[str, np.ndarray | ir.RowScaled]] = []

    def keep_apart(self, array: np.ndarray | ir.RowScaled, name: str) -> onnx.TensorProto | None:
        """A ``tensor_writer``: None (kept apart) for a large plain tensor, else the inline TensorProto."""
        if array.nbytes < STREAMED_TENSOR_MIN_BYTES or array.dtype.kind not in "biuf":
            return numpy_helper.from_array(np.asarray(array), name)
        if big_endian(array.dtype):
            array = np.asarray(array).astype(array.dtype.newbyteorder("<"))
        self.tensors.append((name, array))
        return None

    @property
    def deferred_seconds(self) -> float:
        """Time spent computing deferred constants (:class:`ir.RowScaled`) while writing them."""
        return sum(array.seconds for _, array in self.tensors if isinstance(array, ir.RowScaled))

    def declared(self, model: onnx.ModelProto) -> onnx.ModelProto:
        """A copy of the skeleton ``model`` in which each weight kept apart is a graph input of its element type and
        shape, which is all that shape inference and the checker's graph rules read of it."""
        skeleton = onnx.ModelProto()
        skeleton.CopyFrom(model)
        declared = {value.name for value in skeleton.graph.input}
        skeleton.graph.input.extend(self._value_info(name, array) for name, array in self.tensors
                                    if name not in declared)
        return skeleton

    def records(self) -> Iterator[bytes | memoryview]:
        """The file's bytes after the ModelProto's: for each weight, its record header then its array's memory."""
        for name, array in self.tensors:
            header = onnx.TensorProto(name=name, dims=list(array.shape),
                                      data_type=helper.np_dtype_to_tensor_dtype(array.dtype)).SerializeToString()
            tensor = header + self._RAW_DATA + _varint(array.nbytes)
            tensor_size = len(tensor) + array.nbytes
            initializer = self._INITIALIZER + _varint(tensor_size)
            yield self._GRAPH + _varint(len(initializer) + tensor_size) + initializer + tensor
            yield from row_major_bytes(array)

    def names(self) -> list[str]:
        return [name for name, _ in self.tensors]

    def full_model(self, model: onnx.ModelProto) -> onnx.ModelProto:
        """The ModelProto the file holds: the skeleton ``model`` with the weights kept apart appended, in order."""
        full = onnx.ModelProto()
        full.CopyFrom(model)
        for name, array in self.tensors:
            fill_tensor(full.graph.initializer.add(), np.asarray(array), name)
        return full

    @staticmethod
    def _value_info(name: str, array: np.ndarray | ir.RowScaled) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))


@dataclass
class StreamedModel:
    """The ModelProto of a file written with :class:`StreamedWeights`, built when called: its ``skeleton`` (the
    ModelProto without the weights kept ``apart``) is at hand at once."""

    skeleton: onnx.ModelProto
    apart: StreamedWeights

    def __call__(self) -> onnx.ModelProto:
        return self.apart.full_model(self.skeleton)
