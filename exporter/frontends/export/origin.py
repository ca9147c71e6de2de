"""The origin of an FX node stamp (``exporter.provenance``; an FX node is its own value): its ATen op, its module path
and the model's source line, as torch.export recorded them."""

from __future__ import annotations

import torch

from exporter.frontends.export.facts import op_kind, producer_of
from exporter.provenance import LIBRARY_DIRS, PYTHON_FRAME, Origin, register_reader


def node_origin(node: torch.fx.Node) -> Origin:
    """The origin torch.export recorded for an FX node: its ATen op (for a getitem, the op whose result it takes),
    the module path of the innermost module that called it, and the stack trace of the call."""
    producer = producer_of(node)  # one result of an op with several: that op's
    kind = op_kind(producer) if producer.op == "call_function" else f"{producer.op}:{producer.target}"
    modules = producer.meta.get("nn_module_stack") or {}
    scope = list(modules.values())[-1][0] if modules else ""
    scope = scope.removeprefix("L['self'].").replace("L['self']", "")
    stack = producer.meta.get("stack_trace") or ""
    return Origin(kind, scope, _model_line(stack), stack)


def _model_line(stack: str) -> str:
    """``file:line`` of the innermost frame of a Python stack trace in the model's code (see
    ``provenance.LIBRARY_DIRS``)."""
    frames = [f"{m['file']}:{m['line']}" for m in map(PYTHON_FRAME.match, stack.splitlines()) if m]
    outside = [frame for frame in frames if not frame.startswith(LIBRARY_DIRS)]
    return outside[-1] if outside else (frames[-1] if frames else "")


register_reader(torch.fx.Node, node_origin)
