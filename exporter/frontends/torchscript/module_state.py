"""Module attributes that a scripted ``forward`` assigns, turned into values threaded through the graph.

A scripted module may write its own attributes (``self.b = True``, ``self.conv.weight = w``, also inside loops,
branches and inlined methods): TorchScript records ``prim::SetAttr`` and later ``prim::GetAttr`` reads of the
same attribute. ONNX has no state, so each assigned attribute becomes a variable: its initial value is the
attribute's value at export time (a ``prim::GetAttr`` placed at the top of the graph, lifted like any other
attribute), a ``prim::SetAttr`` gives it a new value, a read takes the current one, and a loop or an ``if`` that
assigns it carries the value out (a loop-carried value; an output of both branches). The module itself is never
changed, as PyTorch's exporter exports it: what the model computes from its state at the time of the export.
"""

from __future__ import annotations

from typing import Any

import torch

from exporter.errors import CaptureError
from exporter.frontends.torchscript.facts import blocks_of


def thread_assigned_attributes(graph: torch._C.Graph) -> None:
    """Rewrite every ``prim::SetAttr`` on ``self`` (input 0 of ``graph``) and its submodules (see module docstring)."""
    self_value = next(iter(graph.inputs()))
    paths: dict[int, str] = {self_value.unique(): ""}
    setters = []
    for node in _all_nodes(graph.block()):
        if node.kind() == "prim::GetAttr" and node.input().unique() in paths:
            paths[node.output().unique()] = _join(paths[node.input().unique()], node.s("name"))
        elif node.kind() == "prim::SetAttr":
            if node.inputsAt(0).unique() not in paths:
                raise CaptureError(f"the model assigns attribute {node.s('name')!r} of an object that is not one of "
                                   "its modules")
            setters.append(node)
    if not setters:
        return
    assigned = {_join(paths[node.inputsAt(0).unique()], node.s("name")) for node in setters}
    env = {path: _initial_read(graph, self_value, path, paths) for path in sorted(assigned)}
    initial = {value.unique() for value in env.values()}
    _thread_block(graph.block(), env, paths, assigned, initial)
    torch._C._jit_pass_dce(graph)  # initial values that are never read (assigned before any read)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _all_nodes(block):
    for node in block.nodes():
        yield node
        for sub in blocks_of(node):
            yield from _all_nodes(sub)


def _initial_read(graph, self_value, path: str, paths: dict[int, str]):
    """A chain of ``prim::GetAttr`` from ``self`` at the top of the graph reading ``path`` as it is at export time."""
    types: dict[str, Any] = {}  # attribute path -> its TorchScript type
    for node in _all_nodes(graph.block()):
        if node.kind() == "prim::GetAttr" and node.output().unique() in paths:
            types.setdefault(paths[node.output().unique()], node.output().type())
        elif node.kind() == "prim::SetAttr" and node.inputsAt(0).unique() in paths:
            types.setdefault(_join(paths[node.inputsAt(0).unique()], node.s("name")), node.inputsAt(1).type())
    first = next(iter(graph.block().nodes()), None) or graph.return_node()
    value, prefix = self_value, ""
    for name in path.split("."):
        prefix = _join(prefix, name)
        read = graph.create("prim::GetAttr", [value], 1)
        read.s_("name", name)
        read.output().setType(types[prefix])
        read.insertBefore(first)
        value = read.output()
        paths[value.unique()] = prefix
    return value


def _assigns(node, paths: dict[int, str]) -> set[str]:
    """The attribute paths assigned anywhere inside the blocks of ``node``."""
    found = set()
    for block in node.blocks():
        for inner in _all_nodes(block):
            if inner.kind() == "prim::SetAttr":
                found.add(_join(paths[inner.inputsAt(0).unique()], inner.s("name")))
    return found


def _carried_type(value):
    """The type a carried attribute value takes: its own, without ``Optional`` (a graph value is never None)."""
    kind = value.type()
    if kind.kind() == "OptionalType":
        return kind.getElementType()
    return kind


def _thread_block(block, env: dict, paths: dict[int, str], assigned: set[str], initial: set[int]) -> None:
    for node in list(block.nodes()):
        kind = node.kind()
        if kind == "prim::GetAttr" and node.output().unique() in initial:
            continue
        if kind == "prim::GetAttr" and paths.get(node.output().unique()) in assigned:
            node.output().replaceAllUsesWith(env[paths[node.output().unique()]])
            node.destroy()
        elif kind == "prim::SetAttr":
            env[_join(paths[node.inputsAt(0).unique()], node.s("name"))] = node.inputsAt(1)
            node.destroy()
        elif blocks_of(node):
            written = sorted(_assigns(node, paths))
            if not written:
                for sub in node.blocks():
                    _thread_block(sub, dict(env), paths, assigned, initial)
            elif kind == "prim::If":
                for sub in node.blocks():
                    inner = dict(env)
                    _thread_block(sub, inner, paths, assigned, initial)
                    for path in written:
                        sub.registerOutput(inner[path])
                for path in written:
                    out = node.addOutput()
                    out.setType(_carried_type(env[path]))
                    env[path] = out
            elif kind == "prim::Loop":
                body = next(iter(node.blocks()))
                inner = dict(env)
                for path in written:
                    node.addInput(env[path])
                    carried = body.addInputToBlock()
                    carried.setType(_carried_type(env[path]))
                    inner[path] = carried
                _thread_block(body, inner, paths, assigned, initial)
                for path in written:
                    body.registerOutput(inner[path])
                    out = node.addOutput()
                    out.setType(_carried_type(env[path]))
                    env[path] = out
            else:
                raise CaptureError(f"the model assigns module attributes inside {kind}, which cannot be exported")
