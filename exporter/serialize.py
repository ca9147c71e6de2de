"""Assemble the ModelProto (opset imports, IR version, value infos, output shapes, initializers, external data
for models over 2 GiB) and write it atomically."""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from exporter import ir, passes
from exporter.errors import ExportArgumentError
from exporter.version import __version__

logger = logging.getLogger("exporter")

PRODUCER_NAME = "onnx-export-engine"
PRODUCER_VERSION = __version__
TWO_GIB = 2**31
# Initializer bytes from which a model is written with external data (protobuf cannot serialize 2 GiB; the
# margin leaves room for the graph itself). A module constant so tests can lower it.
EXTERNAL_DATA_THRESHOLD = TWO_GIB - (64 << 20)
# Tensors at least this large go to the external data file; smaller ones stay inline.
EXTERNAL_TENSOR_MIN_BYTES = 1024
# Inline tensors at least this large are streamed into the file from their arrays (see StreamedWeights).
STREAMED_TENSOR_MIN_BYTES = 1024
_EXTERNAL_ALIGNMENT = 4096


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
    for value, example in zip(graph.outputs, example_outputs):
        if value.kind == ir.TENSOR and isinstance(example, torch.Tensor):
            static_shapes[value.name] = tuple(example.shape)
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


def is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def check_destination(f: Any) -> None:
    """Fail before exporting when ``f`` cannot receive the model: a path whose directory is missing or cannot be
    written, a directory, a file that is read-only; an object that is not a writable binary file."""
    if is_path(f):
        _check_target_path(Path(f).expanduser().resolve(), os.fspath(f))
        return
    if not hasattr(f, "write"):
        raise ExportArgumentError(f"f must be a file path or a binary file object, got {type(f).__name__}")
    if isinstance(f, io.TextIOBase):
        raise ExportArgumentError("f must be opened in binary mode")
    if not _accepts_writes(f):
        raise ExportArgumentError(f"f is a file object that cannot be written (opened {getattr(f, 'mode', 'read-only')!r}); "
                                  "open it with 'wb'")


def _accepts_writes(f: Any) -> bool:
    """A file object's own ``writable()`` where it has one (a closed file cannot be written either)."""
    if getattr(f, "closed", False):
        return False
    writable = getattr(f, "writable", None)
    try:
        return writable() if callable(writable) else True
    except ValueError:  # io raises it for an operation on a closed file
        return False


def _check_target_path(target: Path, given: str) -> None:
    parent = target.parent
    if not parent.is_dir():
        raise ExportArgumentError(f"cannot write {given!r}: directory {str(parent)!r} does not exist")
    if target.is_dir():
        raise ExportArgumentError(f"cannot write {given!r}: it is a directory; f must name a file")
    if target.exists() and not _is_writable_file(target):
        raise ExportArgumentError(f"cannot write {given!r}: the file is read-only")
    try:  # the only sure test, for any user (root included) and file system: create a file there
        probe = _create_file(parent, _temporary_prefix(target))
    except OSError as error:
        raise ExportArgumentError(f"cannot write {given!r}: directory {str(parent)!r} is not writable ({error.strerror})") from error
    probe.unlink()
    _remove_stale_temporaries(target)


def _temporary_prefix(target: Path) -> str:
    """Temporary files and folders beside ``target`` are hidden and carry the writer's process id, so a later export
    to the same path can tell those of a process that was killed mid-write (SIGKILL runs no cleanup) from those of
    an export still running."""
    return f".{target.name}.{os.getpid()}-"


def _remove_stale_temporaries(target: Path) -> None:
    """Remove what exports to ``target`` by processes no longer alive left beside it."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)-")
    for entry in target.parent.iterdir():
        match = pattern.match(entry.name)
        if not match or _process_alive(int(match.group(1))):
            continue
        logger.info("removing %s, left by an export to %s that did not finish (process %s is gone)",
                    entry, target, match.group(1))
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _is_writable_file(target: Path) -> bool:
    """Writable by us, and not marked read-only for everyone (which even root, whom access() lets write, should
    respect, as ``open(path, "wb")`` by a regular user would)."""
    return os.access(target, os.W_OK) and bool(target.stat().st_mode & 0o222)


def _create_file(directory: Path, prefix: str) -> Path:
    """A new, empty file with a unique name in ``directory``, created with mode 0666 less the umask (as
    ``open(path, "wb")`` creates one), not tempfile's 0600."""
    for _ in range(100):
        path = directory / f"{prefix}{os.urandom(4).hex()}.tmp"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free temporary name in {directory}")


def write(model: onnx.ModelProto | bytes, f: Any, apart: StreamedWeights | None = None) -> None:
    """Write ``model`` (its data inline, or already serialized), then the weights kept ``apart``, to ``f``; paths
    are written atomically."""
    parts = [model if isinstance(model, bytes) else model.SerializeToString()]
    if apart is not None:
        parts = itertools.chain(parts, apart.records())
    if not is_path(f):
        for part in parts:
            f.write(part)
        return
    _atomic_write(Path(f).expanduser().resolve(), parts)


def _atomic_write(target: Path, parts: Iterable[bytes | memoryview]) -> None:
    """Write a temporary file beside ``target`` and rename it into place. The file gets the permissions a direct
    ``open(target, "wb")`` would give: an existing file's own mode, else 0666 less the umask."""
    tmp = _create_file(target.parent, _temporary_prefix(target))
    try:
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        with open(tmp, "wb") as handle:
            for part in parts:
                handle.write(part)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _big_endian(dtype: np.dtype) -> bool:
    return dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")


def _tag(message: type, field: str) -> bytes:
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


def _row_major_bytes(array: np.ndarray | ir.RowScaled) -> Iterator[memoryview]:
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
        self.tensors: list[tuple[str, np.ndarray]] = []

    def keep_apart(self, array: np.ndarray | ir.RowScaled, name: str) -> onnx.TensorProto | None:
        """A ``tensor_writer``: None (kept apart) for a large plain tensor, else the inline TensorProto."""
        if array.nbytes < STREAMED_TENSOR_MIN_BYTES or array.dtype.kind not in "biuf":
            return numpy_helper.from_array(np.asarray(array), name)
        if _big_endian(array.dtype):
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
            yield from _row_major_bytes(array)

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
    def _value_info(name: str, array: np.ndarray) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))


@dataclass
class StreamedModel:
    """The ModelProto of a file written with :class:`StreamedWeights`, built when called: its ``skeleton`` (the
    ModelProto without the weights kept ``apart``) is at hand at once."""

    skeleton: onnx.ModelProto
    apart: StreamedWeights

    def __call__(self) -> onnx.ModelProto:
        return self.apart.full_model(self.skeleton)


def external_data_location(target: Path) -> str:
    return f"{target.name}.data"


def check_room_for_parameters(state: list[Any], f: Any) -> None:
    """Fail before exporting when the model's parameters and buffers (``state``, its state_dict's values) need an
    external data file and ``f`` is a file object, which has no folder to put one in."""
    if not is_path(f) and _distinct_tensor_bytes(state) >= EXTERNAL_DATA_THRESHOLD:
        require_path_for_external_data(f)


def _distinct_tensor_bytes(state: list[Any]) -> int:
    tensors = {t.data_ptr(): t for t in state if isinstance(t, torch.Tensor)}
    return sum(t.numel() * t.element_size() for t in tensors.values())


@contextlib.contextmanager
def external_data_stage(graph: ir.Graph, f: Any) -> Iterator[ExternalDataStage | None]:
    """An :class:`ExternalDataStage` for ``f`` when the tensors of ``graph`` exceed the protobuf limit, else None."""
    if not _prepare_external_data(graph):
        yield None
        return
    with ExternalDataStage(f) as stage:
        yield stage


def _prepare_external_data(graph: ir.Graph) -> bool:
    """Whether the tensors (initializers and constants, e.g. folded from parameters) exceed the protobuf limit.

    When they do, large constants become initializers, so every large tensor can go to the external data file.
    """
    initializer_bytes = sum(v.const.nbytes for v in graph.initializers if v.const is not None)
    constant_bytes = sum(
        node.outputs[0].const.nbytes for node in graph.all_nodes()
        if node.op_type == "Constant" and not node.domain and node.outputs[0].const is not None
    )
    if initializer_bytes + constant_bytes < EXTERNAL_DATA_THRESHOLD:
        return False
    passes.hoist_constants(graph, graph, min_bytes=EXTERNAL_TENSOR_MIN_BYTES)
    return True


def require_path_for_external_data(f: Any) -> None:
    if not is_path(f):
        raise ExportArgumentError(
            "the model's parameters exceed 2 GiB, so it needs an external data file next to the model file; "
            "pass a file path as f, not a file object"
        )


class ExternalDataStage:
    """Writes a model whose large tensors live in ``<model file name>.data`` next to the model file.

    Tensors are streamed to the data file as the ModelProto is assembled (``tensor``), so no in-memory copy
    of the weights is ever made; both files are staged in a temporary folder beside the target, validated
    there, and moved into place only when everything succeeded.
    """

    def __init__(self, f: Any):
        require_path_for_external_data(f)
        self.target = Path(f).expanduser().resolve()
        self.location = external_data_location(self.target)
        self.staging = Path(tempfile.mkdtemp(prefix=_temporary_prefix(self.target), dir=self.target.parent))
        self._data = open(self.staging / self.location, "wb")

    def __enter__(self) -> ExternalDataStage:
        return self

    def __exit__(self, *exc_info) -> None:
        self._data.close()
        for leftover in self.staging.iterdir():
            leftover.unlink()
        self.staging.rmdir()

    def tensor(self, array: np.ndarray | ir.RowScaled, name: str) -> onnx.TensorProto:
        """A TensorProto for ``array``: data appended to the external file when large, else inline."""
        if array.nbytes < EXTERNAL_TENSOR_MIN_BYTES or array.dtype == object:
            return numpy_helper.from_array(np.asarray(array), name)
        if _big_endian(array.dtype):
            array = np.asarray(array).astype(array.dtype.newbyteorder("<"))
        padding = -self._data.tell() % _EXTERNAL_ALIGNMENT
        self._data.write(b"\0" * padding)
        offset = self._data.tell()
        for chunk in _row_major_bytes(array):
            self._data.write(chunk)
        proto = onnx.TensorProto(
            name=name, dims=list(array.shape), data_type=helper.np_dtype_to_tensor_dtype(array.dtype)
        )
        proto.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", offset), ("length", array.nbytes)):
            entry = proto.external_data.add()
            entry.key, entry.value = key, str(value)
        return proto

    def commit(self, model: onnx.ModelProto, validate_path=None) -> None:
        """Write the model file, validate the staged pair with ``validate_path``, then move both into place."""
        self._data.close()
        staged_model = self.staging / self.target.name
        staged_model.write_bytes(model.SerializeToString())
        if validate_path is not None:
            validate_path(str(staged_model))
        os.replace(self.staging / self.location, self.target.parent / self.location)
        os.replace(staged_model, self.target)
