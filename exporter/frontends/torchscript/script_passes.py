"""TorchScript graph clean-ups that capture runs on scripted graphs before conversion."""

from __future__ import annotations

import torch

from exporter.frontends.torchscript.facts import blocks_of


def erase_exception_branches(graph: torch._C.Graph) -> None:
    """Replace each ``if`` without results that has a branch that always raises by its other branch.

    Scripted library code guards its inputs (``if input.dim() != 3: raise ...``): the raise has no ONNX
    equivalent, and the checks (on lists, strings) often have none either. The export assumes the model does not
    raise, so the guard and its condition go away. An ``if`` with results stays (its condition may be the only
    use of an input, which PyTorch's exporter keeps). ``print`` goes too: a side effect only.
    """
    # TorchScript finds the nodes of a kind without a Python walk over every node (a trace has a few, or none).
    prints = _find_all(graph, "prim::Print")
    for node in prints:  # a side effect only; what it prints (aten::format) goes with it
        node.destroy()
    # Outermost first in findAllNodes' order: reversed, an if's inner ifs are handled before it may be destroyed.
    erased = [_erase_raising_branch(node) for node in reversed(_find_all(graph, "prim::If"))]
    if prints or any(erased):
        torch._C._jit_pass_dce(graph)
    loops = _find_all(graph, "prim::Loop")
    if loops:
        _erase_dead_loops(reversed(loops))
        torch._C._jit_pass_dce(graph)


def _find_all(graph: torch._C.Graph, kind: str) -> list[torch._C.Node]:
    """The nodes of ``kind`` in ``graph`` and its blocks, outermost first."""
    return graph.findAllNodes(kind, True)  # type: ignore[attr-defined]  # torch's stubs lack Graph.findAllNodes


def _erase_raising_branch(node) -> bool:
    if list(node.outputs()):
        return False  # an ``if`` with results keeps its condition (the converter fills a raising branch's results)
    then_block, else_block = node.blocks()
    raises = [_always_raises(then_block), _always_raises(else_block)]
    if raises == [True, False]:
        _inline_branch(node, else_block)
    elif raises == [False, True]:
        _inline_branch(node, then_block)
    return raises in ([True, False], [False, True])


def _always_raises(block) -> bool:
    return any(node.kind() == "prim::RaiseException" for node in block.nodes())


def _inline_branch(if_node, block) -> None:
    for node in list(block.nodes()):
        node.moveBefore(if_node)
    for output, value in zip(list(if_node.outputs()), list(block.outputs()), strict=True):
        output.replaceAllUsesWith(value)
    if_node.destroy()


# Nodes without a schema that compute and nothing else.
_PURE_PRIMS = {"prim::Constant", "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",
               "prim::TupleUnpack", "prim::TupleIndex", "prim::If", "prim::Loop", "prim::unchecked_cast",
               "prim::dtype", "prim::device", "prim::NumToTensor", "prim::min", "prim::max"}


def _erase_dead_loops(loops) -> None:
    """Remove loops whose results nothing reads and whose bodies only compute: what is left of a check once its
    raise is gone (``_verify_batch_size`` multiplies the sizes in a loop). TorchScript's dead code elimination
    keeps such loops. ``loops`` come innermost first, so a loop inside a removed one is never visited after."""
    for node in loops:
        if not any(o.uses() for o in node.outputs()) and _only_computes(node):
            node.destroy()


def _only_computes(node) -> bool:
    for sub in blocks_of(node):
        for inner in sub.nodes():
            if not _is_pure(inner) or not _only_computes(inner):
                return False
    return True


def _is_pure(node) -> bool:
    kind = node.kind()
    if kind in _PURE_PRIMS:
        return True
    if not kind.startswith("aten::") or kind in ("aten::warn", "aten::_assert_async"):
        return False
    try:
        schema = node.schema()
    except RuntimeError:
        return False
    return schema != "(no schema)" and "!" not in schema
