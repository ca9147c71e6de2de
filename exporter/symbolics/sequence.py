"""ONNX Sequence ops for dynamic lists of tensors (opset 11+)."""

from __future__ import annotations

from exporter.errors import SymbolicValueError


def unpack_sequence(g, sequence, count):
    raise SymbolicValueError("unpacking a list whose length is only known at run time is not supported yet")


def sequence_at(g, sequence, index):
    raise SymbolicValueError("indexing a list computed at run time is not supported yet")


def concat_from_sequence(g, sequence, dim):
    raise SymbolicValueError("concatenating a list computed at run time is not supported yet")
