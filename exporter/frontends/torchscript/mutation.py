"""Functionalize mutation in a captured TorchScript graph, so that every value is written once.

ONNX has no mutation, but TorchScript graphs do: tracing ``data[1] = new_data`` records
``v = aten::select(data, 0, 1); aten::copy_(v, new_data)`` and a scripted ``res.append(x)`` in a loop grows a
list defined outside the loop. This pass rewrites each mutation into out-of-place updates:

* the mutating node's output is taken as the new value of what it mutated (our symbolics for in-place ops
  such as ``aten::copy_``, ``aten::add_`` or ``aten::append`` are functional: they return the new value);
* list methods that return something else or nothing get a functional node that returns the new list:
  ``x = lst.pop(i)`` keeps ``aten::pop`` as the read of the element and is followed by ``aten::Delete(lst, i)``
  returning the shorter list; ``del lst[i]``, ``lst.insert(i, x)`` and ``lst.extend(other)`` become nodes of
  their own kind with the new list as their one output (the symbolics in ``symbolics/sequence.py``);
* a mutated view is written back through its chain of views (``select`` -> ``aten::select_scatter``,
  ``slice`` -> ``aten::slice_scatter``, reshapes, transposes) up to the tensor it views, the *root*;
* later uses of the root (and of the views in the chain) read the new values instead;
* a view of a mutated value taken before the mutation and read after it (``pos = c.reshape(1); c.add_(1)``) shares
  its memory: it is taken again from the new value, and its later reads read that;
* a root defined outside the loop or branch that mutates it is threaded through the control flow node:
  a loop carries it, an ``if`` returns it from both branches.

Known limit: mutation through an argument other than the first (``out=``) is not handled. Like the write-back, this
takes ``reshape``/``flatten`` for views, as they are of the contiguous tensors a trace records.
"""

from __future__ import annotations

import functools

import torch

from exporter.frontends.torchscript.facts import KINDS_WITH_BLOCKS

_SCATTER_BACK_KINDS = {
    "aten::select", "aten::slice", "aten::narrow", "aten::view", "aten::reshape", "aten::flatten",
    "aten::unsqueeze", "aten::squeeze", "aten::view_as", "aten::reshape_as", "aten::transpose", "aten::t",
    "aten::permute", "aten::alias", "aten::detach",
}
_RESHAPES = {"aten::view", "aten::reshape", "aten::flatten", "aten::unsqueeze", "aten::squeeze", "aten::view_as",
             "aten::reshape_as"}


# The augmented assignments of the bitwise operators (``x |= y``): in-place, though named like dunders.
_IN_PLACE_DUNDERS = frozenset({"aten::__iand__", "aten::__ior__", "aten::__ixor__", "aten::__ilshift__",
                               "aten::__irshift__"})


def is_in_place(kind: str) -> bool:
    """Whether an op of ``kind`` writes its first argument by its name: ``aten::add_``, ``aten::__ior__``; not
    ``aten::__contains__`` or ``aten::__is__``."""
    return (kind.endswith("_") and not kind.endswith("__")) or kind in _IN_PLACE_DUNDERS


def functionalize(graph: torch._C.Graph) -> None:
    """Rewrite every mutation in ``graph`` (and its blocks) into out-of-place updates (see module docstring)."""
    torch._C._jit_pass_remove_mutation(graph)
    _functionalize_block(graph, graph.block())
    torch._C._jit_pass_dce(graph)


def _functionalize_block(graph, block) -> dict:
    """Functionalize ``block``; return {root defined outside the block: its final value inside the block}."""
    escaping: dict = {}
    for node in list(block.nodes()):
        kind = node.kind()
        if kind in KINDS_WITH_BLOCKS:
            sub_escapes = [_functionalize_block(graph, sub) for sub in node.blocks()]
            if any(sub_escapes):
                for root, new_value in _thread_through(node, sub_escapes):
                    _update(graph, block, node, [(root, new_value)], escaping)
        if not _may_mutate(kind):  # most nodes: one set lookup, no further calls into TorchScript
            continue
        if _mutates_first_input(node):
            _update(graph, block, node, _write_back(graph, node), escaping)
        elif _mutates_list_without_returning_it(node):
            _update(graph, block, node, [(node.inputsAt(0), _functional_list_update(graph, node))], escaping)
    return escaping


_LIST_METHODS = {"aten::pop", "aten::Delete", "aten::insert", "aten::extend"}


def _mutates_list_without_returning_it(node) -> bool:
    """``lst.pop(i)`` (returns the element), ``del lst[i]``, ``lst.insert(i, x)``, ``lst.extend(other)`` (return
    nothing) on a list; the same methods of a dict are not rewritten."""
    return (node.kind() in _LIST_METHODS and node.inputsAt(0).type().kind() == "ListType"
            and all(output.type().kind() != "ListType" for output in node.outputs()))


def _functional_list_update(graph, node):
    """The new value of the list ``node`` mutates, from a node placed right after it (see module docstring)."""
    items = node.inputsAt(0)
    if node.kind() == "aten::pop":
        inputs = list(node.inputs())
        if len(inputs) == 1:  # lst.pop(): the last item
            with graph.insert_point_guard(node):
                inputs.append(graph.insertConstant(-1))
            node.addInput(inputs[1])
        kind, replaced = "aten::Delete", False
    else:
        inputs, kind, replaced = list(node.inputs()), node.kind(), True
    functional = graph.create(kind, inputs, 1)
    functional.output().setType(items.type())
    functional.insertAfter(node)
    if replaced:
        node.destroy()
    return functional.output()


def _mutates_first_input(node) -> bool:
    """An op that writes its first argument and returns it (``Tensor(a!) self -> Tensor(a!)``, list ops alike); asked
    only of nodes of a kind that :func:`_may_mutate`."""
    try:
        schema = node.schema()
    except RuntimeError:
        return False
    if schema == "(no schema)":
        return False
    arguments, _, returns = schema.partition(") -> ")
    first_argument = arguments.partition("(")[2].split(",")[0]
    return "(a!)" in first_argument and returns.strip().startswith(first_argument.split(" ")[0].strip())


@functools.cache
def _may_mutate(kind: str) -> bool:
    """Whether a node of ``kind`` may be one the pass rewrites (its own schema then decides)."""
    return kind.startswith("aten::") and (kind in _LIST_METHODS or _some_overload_writes_its_first_argument(kind))


@functools.cache
def _some_overload_writes_its_first_argument(kind: str) -> bool:
    """Whether any schema of ``kind`` writes its first argument (``Tensor(a!) self``): a node of a kind none of whose
    overloads does needs no look at its own schema (which TorchScript builds as a string, the cost of this pass on a
    large traced graph). Overloads that write another argument (``add.out``'s ``out``) do not count: the pass does
    not rewrite them."""
    schemas = torch._C._jit_get_schemas_for_operator(kind)
    return not schemas or any(schema.arguments and schema.arguments[0].alias_info is not None
                              and schema.arguments[0].alias_info.is_write for schema in schemas)


def _write_back(graph, node) -> list[tuple]:
    """(old value, new value) pairs for the mutated value and each view above it in this block, innermost first."""
    updates = [(node.inputsAt(0), node.output())]
    anchor = node
    value, new_value = node.inputsAt(0), node.output()
    while value.node().kind() in _SCATTER_BACK_KINDS and value.node().owningBlock() == node.owningBlock():
        view = value.node()
        new_base = _scatter_back(graph, view, new_value, anchor)
        if new_base is None:
            break
        anchor = new_base.node()
        value, new_value = view.inputsAt(0), new_base
        updates.append((value, new_value))
    return updates


def _insert_after(graph, anchor, kind: str, args: list):
    """``graph.insert`` an op (constants for Python args) placed right after ``anchor``; its output."""
    with graph.insert_point_guard(anchor):
        out = graph.insert(kind, args)
    out.node().moveAfter(anchor)
    return out


def _scatter_back(graph, view, new_view, anchor):
    """The base of ``view`` with ``new_view`` written where the view looks; None for an unknown view."""
    kind = view.kind()
    base, args = view.inputsAt(0), list(view.inputs())[1:]
    if kind == "aten::select":
        return _insert_after(graph, anchor, "aten::select_scatter", [base, new_view, *args])
    if kind == "aten::slice":
        return _insert_after(graph, anchor, "aten::slice_scatter", [base, new_view, *args])
    if kind == "aten::narrow":
        dim, start, length = args
        end = _insert_after(graph, anchor, "aten::add", [start, length])
        return _insert_after(graph, end.node(), "aten::slice_scatter", [base, new_view, dim, start, end, 1])
    if kind in _RESHAPES:
        size = _insert_after(graph, anchor, "aten::size", [base])
        return _insert_after(graph, size.node(), "aten::reshape", [new_view, size])
    if kind == "aten::transpose":
        return _insert_after(graph, anchor, "aten::transpose", [new_view, *args])
    if kind == "aten::t":
        return _insert_after(graph, anchor, "aten::t", [new_view])
    if kind == "aten::permute":
        dims = _constant_list(args[0])
        if dims is None:
            return None
        rank = len(dims)
        inverse = [0] * rank
        for position, dim in enumerate(dims):
            inverse[dim % rank] = position
        return _insert_after(graph, anchor, "aten::permute", [new_view, inverse])
    return new_view  # aten::alias, aten::detach: the same memory, seen as it is


def _constant_list(value):
    node = value.node()
    if node.kind() == "prim::Constant":
        return list(value.toIValue())
    if node.kind() == "prim::ListConstruct" and all(v.node().kind() == "prim::Constant" for v in node.inputs()):
        return [v.toIValue() for v in node.inputs()]
    return None


def _update(graph, block, node, updates: list[tuple], escaping: dict) -> None:
    """Make uses of each old value after ``node``'s rewrite read the new value; record roots that escape.

    ``escaping`` maps a root's ``unique()`` to (root, its latest value in ``block``).
    """
    last = updates[-1][1].node()  # the rewrite's nodes sit between ``node`` and this one
    for old, new in updates:
        for use in list(old.uses()):
            user = use.user
            if _within(user, block) and _top_level_in(user, block).isAfter(last):
                user.replaceInput(use.offset, new)
    _retake_views(graph, block, updates, last)
    root, new_root = updates[-1]
    for key, (outer, latest) in list(escaping.items()):
        if latest.unique() == root.unique():  # a later mutation of a root this block already mutated
            escaping[key] = (outer, new_root)
    if not _defined_in(root, block):
        escaping[root.unique()] = (root, new_root)


def _retake_views(graph, block, updates: list[tuple], last) -> None:
    """Views in ``block`` of an updated value, taken before the update and read after ``last``, taken again from the
    new value (and views of those views, in turn): a view shares its base's memory, so it reads what was written. A
    view read only through views of it is taken again too; the dead-code pass drops what nothing reads."""
    rewritten = {old.unique() for old, _ in updates}
    pending, anchor = list(updates), last
    while pending:
        old, new = pending.pop()
        for use in list(old.uses()):
            view = use.user
            if (use.offset != 0 or view.kind() not in _SCATTER_BACK_KINDS or view.owningBlock() != block
                    or view.output().unique() in rewritten or not last.isAfter(view)):
                continue
            later = [read for read in view.output().uses()
                     if _within(read.user, block) and _top_level_in(read.user, block).isAfter(last)]
            retaken = _insert_after(graph, anchor, view.kind(), [new, *list(view.inputs())[1:]])
            anchor = retaken.node()
            for read in later:
                read.user.replaceInput(read.offset, retaken)
            rewritten.add(view.output().unique())
            pending.append((view.output(), retaken))


def _within(node, block) -> bool:
    while node is not None:
        owner = node.owningBlock()
        if owner == block:
            return True
        node = owner.owningNode() if owner is not None else None
    return False


def _top_level_in(node, block):
    """The ancestor of ``node`` (or itself) that sits directly in ``block``."""
    while node.owningBlock() != block:
        node = node.owningBlock().owningNode()
    return node


def _defined_in(value, block) -> bool:
    return value.node().owningBlock() == block


def _thread_through(node, sub_escapes: list[dict]) -> list[tuple]:
    """Carry roots that blocks of a control-flow ``node`` mutate out of it; (root, node output) pairs."""
    roots = {}
    for escapes in sub_escapes:
        roots.update({key: root for key, (root, _) in escapes.items()})
    threaded = []
    for key, root in roots.items():
        if node.kind() == "prim::Loop":
            body = next(iter(node.blocks()))
            node.addInput(root)
            carried_in = body.addInputToBlock()
            carried_in.setType(root.type())
            for use in list(root.uses()):
                if _within(use.user, body):
                    use.user.replaceInput(use.offset, carried_in)
            body.registerOutput(sub_escapes[0][key][1])
        elif node.kind() == "prim::If":
            for block, escapes in zip(node.blocks(), sub_escapes, strict=True):
                block.registerOutput(escapes[key][1] if key in escapes else root)
        else:
            continue
        out = node.addOutput()
        out.setType(root.type())
        threaded.append((root, out))
    return threaded
