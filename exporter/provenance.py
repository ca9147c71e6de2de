"""Provenance: which TorchScript node and value every ONNX node and value of an export came from.

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
from dataclasses import dataclass
from typing import Any

import torch

from exporter import ir
from exporter.local_functions import instance_paths

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


_LIBRARY_DIRS = (os.path.dirname(inspect.getfile(torch)) + os.sep, os.path.dirname(__file__) + os.sep)
_TRACED_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")
_SCRIPTED_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')


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
    def of(cls, ts_node: torch._C.Node | torch.fx.Node) -> Origin:
        if isinstance(ts_node, torch.fx.Node):
            return cls._of_fx(ts_node)
        # The root module's scope is a bare "__module" (no path): it names no submodule.
        paths = [p for p in instance_paths(ts_node.scopeName()) if p != "__module"]
        try:
            # torch's stubs say SourceRange; the binding returns the range's text
            stack: str = ts_node.sourceRange()  # type: ignore[assignment]
        except RuntimeError:  # nodes made by passes have no source range
            stack = ""
        return cls(ts_node.kind(), paths[-1] if paths else "", _model_line(stack), stack)

    @classmethod
    def _of_fx(cls, node: torch.fx.Node) -> Origin:
        """The origin torch.export recorded for an FX node: its ATen op (for a getitem, the op whose result it
        takes), the module path of the innermost module that called it, and the stack trace of the call."""
        from exporter.capture.fx_facts import op_kind, producer_of

        producer = producer_of(node)  # one result of an op with several: that op's
        kind = op_kind(producer) if producer.op == "call_function" else f"{producer.op}:{producer.target}"
        modules = producer.meta.get("nn_module_stack") or {}
        scope = list(modules.values())[-1][0] if modules else ""
        scope = scope.removeprefix("L['self'].").replace("L['self']", "")
        stack = producer.meta.get("stack_trace") or ""
        return cls(kind, scope, _fx_model_line(stack), stack)

    def __str__(self) -> str:
        where = f" in {self.scope}" if self.scope else ""
        return f"{self.kind}{where}" + (f" at {self.source}" if self.source else "")


def _fx_model_line(stack: str) -> str:
    """``file:line`` of the innermost frame of a Python stack trace in the model's code (see ``_LIBRARY_DIRS``)."""
    frames = [f"{m['file']}:{m['line']}" for m in map(_SCRIPTED_FRAME.match, stack.splitlines()) if m]
    outside = [frame for frame in frames if not frame.startswith(_LIBRARY_DIRS)]
    return outside[-1] if outside else (frames[-1] if frames else "")


def _model_line(stack: str) -> str:
    """``file:line`` of the innermost frame of ``stack`` in the model's code (see ``_LIBRARY_DIRS``)."""
    frames = []
    for line in stack.splitlines():
        match = _TRACED_FRAME.match(line) or _SCRIPTED_FRAME.match(line)
        if match:
            frames.append(f"{match['file']}:{match['line']}")
    for frame in frames:
        if not frame.startswith(_LIBRARY_DIRS):
            return frame
    return frames[0] if frames else ""


@dataclass
class Provenance:
    """The provenance of one exported model, by final ONNX name (main graph and subgraphs alike).

    ``nodes`` maps an ONNX node name to the TorchScript node whose symbolic emitted it (nodes made by the
    optimization passes have none); ``values`` maps an ONNX value name to the TorchScript value it computes and
    its ONNX element type. :meth:`node` and :meth:`value` give the readable :class:`Origin`.
    """

    nodes: dict[str, torch._C.Node]
    values: dict[str, tuple[torch._C.Value, int | None]]

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
        origin = entry[0]  # an FX node is its own value
        return Origin.of(origin if isinstance(origin, torch.fx.Node) else origin.node())


def write_doc_strings(graph: ir.Graph) -> None:
    """Put each node's origin (op kind, module path, source line) in its ``doc_string``."""
    for node in graph.all_nodes():
        if node.origin is not None:
            node.doc_string = str(Origin.of(node.origin))
