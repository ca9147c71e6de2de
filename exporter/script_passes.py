"""TorchScript graph clean-ups that capture runs on scripted graphs before conversion."""

from __future__ import annotations

import torch


def erase_exception_branches(graph: torch._C.Graph) -> None:
    """Replace each ``if`` with a branch that always raises by its other branch, as PyTorch's exporter does.

    Scripted library code guards its inputs (``if input.dim() != 3: raise ...``): the raise has no ONNX
    equivalent, and the checks (on lists, strings) often have none either. The export assumes the model does not
    raise, so the guard and its condition go away.
    """
    _erase_in_block(graph.block())
    torch._C._jit_pass_dce(graph)


def _erase_in_block(block) -> None:
    for node in list(block.nodes()):
        for sub in node.blocks():
            _erase_in_block(sub)
        if node.kind() != "prim::If":
            continue
        then_block, else_block = node.blocks()
        raises = [_always_raises(then_block), _always_raises(else_block)]
        if raises == [True, False]:
            _inline_branch(node, else_block)
        elif raises == [False, True]:
            _inline_branch(node, then_block)


def _always_raises(block) -> bool:
    return any(node.kind() == "prim::RaiseException" for node in block.nodes())


def _inline_branch(if_node, block) -> None:
    for node in list(block.nodes()):
        node.moveBefore(if_node)
    for output, value in zip(list(if_node.outputs()), list(block.outputs())):
        output.replaceAllUsesWith(value)
    if_node.destroy()
