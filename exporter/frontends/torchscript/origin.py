"""The origin of a TorchScript node or value stamp (``exporter.provenance``): its op kind, its module path and the
model's source line, read from the node's scope and source range."""

from __future__ import annotations

import re

import torch

from exporter.local_functions import instance_paths
from exporter.provenance import LIBRARY_DIRS, PYTHON_FRAME, Origin, register_reader

_TRACED_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")


def node_origin(ts_node: torch._C.Node) -> Origin:
    # The root module's scope is a bare "__module" (no path): it names no submodule.
    paths = [p for p in instance_paths(ts_node.scopeName()) if p != "__module"]
    try:
        # torch's stubs say SourceRange; the binding returns the range's text
        stack: str = ts_node.sourceRange()  # type: ignore[assignment]
    except RuntimeError:  # nodes made by passes have no source range
        stack = ""
    return Origin(ts_node.kind(), paths[-1] if paths else "", _model_line(stack), stack)


def _model_line(stack: str) -> str:
    """``file:line`` of the innermost frame of ``stack`` in the model's code (see ``provenance.LIBRARY_DIRS``)."""
    frames = []
    for line in stack.splitlines():
        match = _TRACED_FRAME.match(line) or PYTHON_FRAME.match(line)
        if match:
            frames.append(f"{match['file']}:{match['line']}")
    for frame in frames:
        if not frame.startswith(LIBRARY_DIRS):
            return frame
    return frames[0] if frames else ""


register_reader(torch._C.Node, node_origin)
register_reader(torch._C.Value, lambda value: node_origin(value.node()))  # a value's origin: its producer's
