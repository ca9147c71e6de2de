"""Where the model goes: the destination checked before any work, the file written atomically (a temporary file
beside it, renamed into place: never a half file; what killed exports left behind is removed), and the external data
file of a model whose tensors pass 2 GiB, staged and validated beside the target before both move into place."""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from exporter import ir, passes
from exporter.errors import ExportArgumentError
from exporter.tensor_bytes import StreamedWeights, big_endian, row_major_bytes

logger = logging.getLogger("exporter")

TWO_GIB = 2**31
# Initializer bytes from which a model is written with external data (protobuf cannot serialize 2 GiB; the
# margin leaves room for the graph itself). A module constant so tests can lower it.
EXTERNAL_DATA_THRESHOLD = TWO_GIB - (64 << 20)
# Tensors at least this large go to the external data file; smaller ones stay inline.
EXTERNAL_TENSOR_MIN_BYTES = 1024
_EXTERNAL_ALIGNMENT = 4096


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
    parts: Iterable[bytes | memoryview] = [model if isinstance(model, bytes) else model.SerializeToString()]
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


def needs_external_data(graph: ir.Graph) -> bool:
    """Whether the tensors of ``graph`` (initializers and constants) exceed the protobuf limit."""
    initializer_bytes = sum(v.const.nbytes for v in graph.initializers if v.const is not None)
    constant_bytes = sum(
        node.outputs[0].const.nbytes for node in graph.all_nodes()
        if node.op_type == "Constant" and not node.domain and node.outputs[0].const is not None
    )
    return initializer_bytes + constant_bytes >= EXTERNAL_DATA_THRESHOLD


def _prepare_external_data(graph: ir.Graph) -> bool:
    """Whether the tensors (initializers and constants, e.g. folded from parameters) exceed the protobuf limit.

    When they do, large constants become initializers, so every large tensor can go to the external data file.
    """
    if not needs_external_data(graph):
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
        if big_endian(array.dtype):
            array = np.asarray(array).astype(array.dtype.newbyteorder("<"))
        padding = -self._data.tell() % _EXTERNAL_ALIGNMENT
        self._data.write(b"\0" * padding)
        offset = self._data.tell()
        for chunk in row_major_bytes(array):
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


def write_with_external_data(model: Any, f: Any) -> None:
    """Write the ``onnx_ir.Model`` ``model`` to the path ``f`` with its tensors in ``<file name>.data`` beside it
    (``onnx_ir.save``), both staged in a temporary folder beside the target and moved into place once written."""
    import onnx_ir as ir

    require_path_for_external_data(f)
    target = Path(f).expanduser().resolve()
    _check_target_path(target, os.fspath(f))
    location = external_data_location(target)
    staging = Path(tempfile.mkdtemp(prefix=_temporary_prefix(target), dir=target.parent))
    try:
        ir.save(model, staging / target.name, external_data=location)
        if (staging / location).exists():
            os.replace(staging / location, target.parent / location)
        os.replace(staging / target.name, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

