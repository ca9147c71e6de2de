"""Provenance: which captured node and value (TorchScript's, or an FX node of torch.export's) every ONNX node and value
of an export came from.

The converter stamps each ONNX node it emits with the TorchScript node being converted, and each value a symbolic
returns with the TorchScript value it stands for (``ir.Node.origin`` / ``ir.Value.origin``). After assembly,
:class:`Provenance` indexes those stamps by the final ONNX names. It keeps references to the TorchScript nodes and
computes the readable facts (op kind, module path, source line) only when asked, so recording costs one attribute
store per node; nothing reaches the written model unless ``export(..., provenance_in_model=True)`` asks for it.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from exporter import ir

# Frames in these directories are PyTorch's or this exporter's machinery, not the model's code: the source line
# reported is the innermost frame outside them.
# Internal switch, not an export option: ``python -m benchmarks`` turns recording off (``recording(False)``) to
# measure what it costs. With it off, nodes and values get no stamps and ``ONNXProgram.provenance`` is None.
RECORD = True


@contextlib.contextmanager
def recording(enabled: bool):
    """Record provenance (the default) or not, within the block."""
    global RECORD
    saved, RECORD = RECORD, enabled
    try:
        yield
    finally:
        RECORD = saved


LIBRARY_DIRS = (os.path.dirname(inspect.getfile(torch)) + os.sep, os.path.dirname(__file__) + os.sep)
PYTHON_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')  # a Python stack trace's frame


@dataclass(frozen=True)
class Origin:
    """Where one ONNX node or value came from.

    ``kind`` is the TorchScript op (``aten::_convolution``); ``scope`` the module path in the model
    (``layer3.1.conv2``; empty at the top level or for a scripted function); ``source`` the model's own
    ``file:line`` that ran the op (the innermost frame outside PyTorch and this exporter; empty when TorchScript
    recorded none); ``stack`` the whole recorded source range (innermost first for traced code).
    """

    kind: str
    scope: str
    source: str
    stack: str

    @classmethod
    def of(cls, stamp: Any) -> Origin:
        """The origin of a node or value stamp, as the front end that made it reads it (:func:`register_reader`)."""
        return _READERS[type(stamp)](stamp)

    def __str__(self) -> str:
        where = f" in {self.scope}" if self.scope else ""
        return f"{self.kind}{where}" + (f" at {self.source}" if self.source else "")


_READERS: dict[type, Callable[[Any], Origin]] = {}  # stamp type -> its origin: each front end's own


def register_reader(stamp_type: type, reader: Callable[[Any], Origin]) -> None:
    """Read the stamps of ``stamp_type`` (a captured node or value) with ``reader``: each front end registers its own
    (``exporter/frontends/*/origin.py``)."""
    _READERS[stamp_type] = reader


@dataclass
class Provenance:
    """The provenance of one exported model, by final ONNX name (main graph and subgraphs alike).

    ``nodes`` maps an ONNX node name to the TorchScript node whose symbolic emitted it (nodes made by the
    optimization passes have none); ``values`` maps an ONNX value name to the TorchScript value it computes and
    its ONNX element type. :meth:`node` and :meth:`value` give the readable :class:`Origin`.
    """

    nodes: dict[str, Any]  # a front end's node stamp (a TorchScript node, an FX node)
    values: dict[str, tuple[Any, int | None]]  # its value stamp, and the ONNX element type

    @classmethod
    def of(cls, graph: ir.Graph) -> Provenance:
        """Index the stamps of ``graph`` (after assembly, when the names are final)."""
        nodes: dict[str, Any] = {}
        values: dict[str, tuple[Any, int | None]] = {}
        for node in graph.all_nodes():
            if node.origin is not None:
                nodes[node.name] = node.origin
            for value in node.outputs:
                if value.origin is not None:
                    values[value.name] = (value.origin, value.dtype)
        for value in graph.inputs:
            if value.origin is not None:
                values[value.name] = (value.origin, value.dtype)
        return cls(nodes, values)

    def node(self, name: str) -> Origin | None:
        """The origin of the ONNX node ``name``, or None for a node the passes made."""
        ts_node = self.nodes.get(name)
        return Origin.of(ts_node) if ts_node is not None else None

    def value(self, name: str) -> Origin | None:
        """The origin of the TorchScript node producing the value the ONNX value ``name`` computes."""
        entry = self.values.get(name)
        if entry is None:
            return None
        return Origin.of(entry[0])  # a value's reader reads the node producing it


def write_doc_strings(graph: ir.Graph) -> None:
    """Put each node's origin (op kind, module path, source line) in its ``doc_string``."""
    for node in graph.all_nodes():
        if node.origin is not None:
            node.doc_string = str(Origin.of(node.origin))
