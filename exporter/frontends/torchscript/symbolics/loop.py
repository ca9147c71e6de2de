"""``prim::Loop`` of scripted code as ONNX ``Loop`` (every opset from 7), unrolled, or run at export time.

TorchScript's loop body takes ``(iteration, *carried)`` and returns ``(condition, *carried)``; ONNX's body takes
``(iteration, condition, *carried)`` and returns ``(condition, *carried)``, so the body converts as it is with one
extra (unused) condition input. Lists carried through a loop become ONNX sequences, which ONNX Loop carries from
opset 13; below, a loop that appends to a list is unrolled where its trip count is known.
"""

from __future__ import annotations

import contextlib

from onnx import TensorProto

from exporter import ir
from exporter.dtypes import BOOL, INT64
from exporter.errors import OnnxExporterError, SymbolicValueError
from exporter.frontends.torchscript.facts import declared_element_type
from exporter.lowering import optional
from exporter.lowering.control_flow import (
    NUMBER_DTYPES,
    as_number,
    cast_output,
    is_constant_output,
    is_static,
    node_results,
)
from exporter.lowering.core import constant_value, require_opset
from exporter.lowering.sequence import SEQUENCE_OPSET, as_sequence, has_sequences
from exporter.registry import symbolic, unsupported

_INT64_MAX = 2**63 - 1
SEQUENCE_LOOP_OPSET = 13  # Loop-11 carries tensors only; sequence types joined its V at Loop-13


def _is_list_type(ts_value) -> bool:
    return ts_value.type().kind() == "ListType"


@symbolic("prim::Loop")
def loop_1(g, max_trip_count, condition, *carried):
    """ONNX Loop-1, which carries tensors only: a list the loop grows becomes a scan output where
    :func:`_scanned_lists` allows, unless that leaves no carried value, which Loop-1 needs (the list error stands)."""
    scanned = _scanned_lists(g.node, carried)
    return _loop(g, max_trip_count, condition, carried, [] if len(scanned) == len(carried) else scanned,
                 unroll_lists=True)


@symbolic("prim::Loop", since=11)
def loop_11(g, max_trip_count, condition, *carried):
    """ONNX Loop-11, which carries tensors only: a list the loop grows becomes a scan output where
    :func:`_scanned_lists` allows; a loop carrying other lists is unrolled where :func:`_unrolled` can."""
    return _loop(g, max_trip_count, condition, carried, _scanned_lists(g.node, carried), unroll_lists=True)


@symbolic("prim::Loop", since=SEQUENCE_LOOP_OPSET)
def loop_13(g, max_trip_count, condition, *carried):
    """ONNX Loop-13, which carries lists as sequences."""
    return _loop(g, max_trip_count, condition, carried, [])


def _loop(g, max_trip_count, condition, carried, scanned: list[int], unroll_lists: bool = False):
    """ONNX Loop: ``for`` loops give a trip count, ``while`` loops a condition, both carry values; the carried
    lists at positions ``scanned`` become scan outputs. A loop that only computes Python values runs at export
    time (:func:`_run_at_export_time`). With ``unroll_lists`` (a Loop that cannot carry sequences), a loop that
    carries other lists is unrolled where :func:`_unrolled` can."""
    node = g.node
    ran = _run_at_export_time(g, max_trip_count, condition, carried)
    g.node = node
    if ran is not None:
        return node_results(node, ran)
    body_block = next(iter(node.blocks()))
    ts_outputs = list(node.outputs())
    kept = [k for k in range(len(carried)) if k not in scanned]
    if unroll_lists and any(_is_list_type(ts_outputs[k]) for k in kept):
        unrolled = _unrolled(g, max_trip_count, condition, carried)
        g.node = node
        if unrolled is not None:
            return node_results(node, unrolled)
    split = []
    if unroll_lists and has_sequences(g):
        # A list the loop grows by one append per iteration and that is read otherwise than by stack: the scan
        # output split back into a sequence (SplitToSequence exists from 11), where the items provably share a shape.
        split = [k for k in _scanned_lists(node, carried, stacked_only=False) if k not in scanned]
        scanned = scanned + split
        kept = [k for k in kept if k not in split]
    elif unroll_lists:
        lists = [k for k in kept if _is_list_type(ts_outputs[k])]
        # (unless a later loop carries the list on, which needs 13 whatever this one does)
        if lists and set(lists) <= set(_scanned_lists(node, carried, stacked_only=False)) and not any(
                use.user.kind() == "prim::Loop" for k in lists for use in ts_outputs[k].uses()):
            require_opset(g, SEQUENCE_OPSET, "a list grown by one append per iteration and read otherwise than by "
                                             "stack (a scan output split into a sequence)")
    initial = [_carried_initial(g, carried[k], ts_outputs[k]) for k in kept]
    trip = None if is_static(max_trip_count) and int(constant_value(max_trip_count)) == _INT64_MAX else (
        as_number(g, max_trip_count, INT64)
    )
    cond = as_number(g, condition, BOOL)

    body = None
    if g.static_shapes and all(v.kind != ir.TENSOR or g.static_dims(v) is not None for v in initial):
        body = _convert_body(g, body_block, initial, scanned, exact_shapes=True)
        if not _shapes_invariant(body):
            body = None
    if body is None:
        body = _convert_body(g, body_block, initial, scanned, exact_shapes=False)
        if not _items_invariant(body):
            body = _convert_body(g, body_block, initial, scanned, exact_shapes=False, forget_items=True)
    _settle_empty_sequences(initial, body.inputs[2:], body.outputs[1 : 1 + len(initial)])
    _settle_optionals(initial, body.inputs[2:], body.outputs[1 : 1 + len(initial)])

    results = g.op("Loop", trip, cond, *initial, body_g=body, outputs=len(carried))
    results = results if isinstance(results, tuple) else (results,)
    # Not strict: the scan outputs follow the carried values in results and body outputs; they have no start.
    for value, start, end in zip(results, initial, body.outputs[1:], strict=False):
        value.dtype, value.kind, value.is_number = start.dtype, start.kind, start.is_number
        value.shape = _carried_result_shape(start, end)
        if value.kind == ir.SEQUENCE:
            value.elem_shape = ir.join_elem_shapes(start.elem_shape, end.elem_shape)
    for value, element in zip(results[len(kept):], body.outputs[1 + len(kept):], strict=True):
        value.dtype, value.kind = element.dtype, ir.SCANNED
        value.shape = None if element.shape is None else (None, *element.shape)
    results = list(results)
    for k in split:
        results[len(kept) + scanned.index(k)] = _scan_as_sequence(g, results[len(kept) + scanned.index(k)])
    by_position = dict(zip(kept + scanned, results, strict=True))
    return node_results(node, [by_position[k] for k in range(len(carried))])


_EXPORT_TIME_ITERATIONS = 10_000
_UNROLLED_ITERATIONS = 1_024


def _unrolled(g, max_trip_count, condition, carried) -> list | None:
    """The carried results of a loop whose trip count is known at export time (a static size, say) and whose
    condition stays known, with the body converted once per iteration (the iteration number a constant). For a
    Loop that carries tensors only, this is how a list the loop grows (``res.append(f(x[i]))``) can still be
    exported. None where the trip count or a condition is computed at run time, or above 1,024 iterations."""
    if not (is_static(max_trip_count) and is_static(condition)):
        return None
    trips, running = int(constant_value(max_trip_count)), bool(constant_value(condition))
    if trips > _UNROLLED_ITERATIONS:
        return None
    body = next(iter(g.node.blocks()))
    values, iteration = list(carried), 0
    while running and iteration < trips:
        running, *values = g.inline_block(body, [iteration, *values])
        if not is_static(running):
            return None  # a ``break`` decided at run time; what was converted so far is left dead
        running, iteration = bool(constant_value(running)), iteration + 1
    return values


def _run_at_export_time(g, max_trip_count, condition, carried) -> list | None:
    """The carried results of a loop whose trip count, condition and carried values are Python values computed
    from constants (numbers, lists of them; see :func:`_from_constants`) and whose body keeps them so, computed
    here as tracing would: ``list(range(-dims, 0))`` in scripted ``torch.tensordot``, say, builds the int list
    that the op needs at export time. None (and the body's nodes left dead) where an iteration computes a graph
    value, or after 10,000 iterations."""
    def known(x) -> bool:
        if isinstance(x, (list, tuple)):
            return all(known(item) for item in x)
        return x is None or isinstance(x, (bool, int, float, str))

    if not (is_static(max_trip_count) and is_static(condition) and known(list(carried))
            and all(_from_constants(v) for v in g.node.inputs())):
        return None
    trips, running = int(constant_value(max_trip_count)), bool(constant_value(condition))
    body = next(iter(g.node.blocks()))
    values, iteration = list(carried), 0
    while running and iteration < trips:
        if iteration == _EXPORT_TIME_ITERATIONS:
            return None
        try:
            running, *values = g.inline_block(body, [iteration, *values])
        except OnnxExporterError:
            return None
        if not (known(running) and known(values)):
            return None
        running, iteration = bool(running), iteration + 1
    return values


def _from_constants(ts_value) -> bool:
    """Whether a TorchScript value is computed from constants and tensor ranks only, so that it is the same for
    every input of any shape. A loop that also depends on a size folded into a static export stays a Loop: run at
    export time, it could leave a graph input unused (dropped), as PyTorch's exporter does not."""
    node = ts_value.node()
    if node.kind() in ("prim::Constant", "aten::dim"):
        return True
    if node.kind() == "prim::Param" or list(node.blocks()):
        return False
    return all(_from_constants(v) for v in node.inputs())


def _scanned_lists(node, carried, stacked_only: bool = True) -> list[int]:
    """Positions of the carried lists that can be the Loop's scan outputs: lists that start empty, that each
    iteration grows by exactly one ``append`` (its only use in the body), and that after the loop are only read
    by ``aten::stack``. The scan output holds the appended tensors stacked on a new axis 0, which is exactly
    what stack needs; anything else could observe the list itself, so it is not rewritten (unless not
    ``stacked_only``: then the scan output is split back into the list, :func:`_scan_as_sequence`)."""
    body_block = next(iter(node.blocks()))
    body_inputs = list(body_block.inputs())[1:]
    returned = list(body_block.returnNode().inputs())[1:]
    scanned = []
    for k, (start, list_in, list_out, result) in enumerate(zip(carried, body_inputs, returned, node.outputs(), strict=True)):
        uses = list_in.uses()
        if not (isinstance(start, list) and not start and _is_list_type(result) and len(uses) == 1):
            continue
        append_node = uses[0].user
        if (_appended_item(append_node) is not None and uses[0].offset == 0
                and append_node.owningBlock() == body_block
                and append_node.output() == list_out and len(list_out.uses()) == 1
                and (not stacked_only or result.uses() and all(use.user.kind() == "aten::stack" for use in result.uses()))):
            scanned.append(k)
    return scanned


def _input_dim_names(graph: ir.Graph) -> set[str]:
    """The named dims of the model's inputs (its dynamic axes): sizes fixed for a run, unlike the ``unk__`` names
    ONNX shape inference gives sizes it does not know."""
    while graph.parent is not None:
        graph = graph.parent
    return {dim for value in graph.inputs if value.shape for dim in value.shape if isinstance(dim, str)}


def _scan_as_sequence(g, stacked: ir.Value) -> ir.Value:
    """The list a scan output holds (the appended tensors stacked on a new axis 0) as a sequence: SplitToSequence
    into pieces of 1 without the axis. Only where each appended tensor's shape is known at export time (every
    size a number or a named dynamic axis): a scan output needs all of them of one shape, which a list need not be."""
    element = None if stacked.shape is None else stacked.shape[1:]
    if element is None or not all(isinstance(dim, int) or dim in _input_dim_names(g.graph) for dim in element):
        raise unsupported(g.op_kind, g.opset, f"a list carried through a loop, whose items may differ in shape: "
                          f"needs opset >= {SEQUENCE_LOOP_OPSET}")
    out = g.op("SplitToSequence", stacked, keepdims_i=0)
    out.kind, out.dtype, out.shape, out.elem_shape = ir.SEQUENCE, stacked.dtype, None, tuple(element)
    return out


def _appended_item(node):
    """The tensor that ``node`` appends to its list: ``lst.append(x)``, or ``lst += [x]`` (``aten::add_`` or
    ``aten::add`` of a one-item list built right there); else None."""
    if node.kind() == "aten::append":
        return node.inputsAt(1)
    if node.kind() in ("aten::add_", "aten::add") and node.inputsAt(0).type().kind() == "ListType":
        items = node.inputsAt(1).node()
        if items.kind() == "prim::ListConstruct" and len(list(items.inputs())) == 1 and len(items.output().uses()) == 1:
            return items.inputsAt(0)
    return None


def _carried_result_shape(start: ir.Value, end: ir.Value) -> tuple | None:
    """A carried tensor's shape after the loop: the start's where the body provably returns the same shape, else
    only the rank (sizes may change per iteration)."""
    if start.kind == ir.SEQUENCE:
        return None
    if start.kind == ir.OPTIONAL:  # the start's tensor or the last iteration's, where not None
        return optional.merged_shape([v.shape for v in (start, end) if not optional.is_none(v)])
    known = [shape for shape in (start.shape, end.shape) if shape is not None]
    if not known or len({len(shape) for shape in known}) > 1:
        return None
    if len(known) == 2 and tuple(known[0]) == tuple(known[1]):
        return tuple(known[0])
    return tuple(None for _ in known[0])


def _convert_body(g, body_block, initial: list[ir.Value], scanned: list[int], exact_shapes: bool,
                  forget_items: bool = False) -> ir.Graph:
    """The ONNX body graph; carried inputs get the start values' shapes (``exact_shapes``) or only their ranks, and a
    carried list the shape of its start's items likewise (none with ``forget_items``; an empty start: no items, so
    that what the body appends tells their shape).

    A scanned list (positions ``scanned``) is no body input: the body returns the tensor it appends, after the
    carried values, as the Loop's scan output.
    """
    iteration = _body_input(g, "iteration", INT64, (), number=True)
    cond_in = _body_input(g, "condition", BOOL, (), number=True)
    carried_in = [
        _body_input(g, "carried", v.dtype, v.shape if exact_shapes else _loose_shape(v), v.is_number, v.kind)
        for v in initial
    ]
    for value, start in zip(carried_in, initial, strict=True):
        if start.kind == ir.SEQUENCE and not forget_items:
            items = start.elem_shape
            value.elem_shape = items if exact_shapes or not isinstance(items, tuple) else (None,) * len(items)
    block_inputs = iter(carried_in)
    count = len(carried_in) + len(scanned)
    bound: list[ir.Value | list] = [[] if k in scanned else next(block_inputs) for k in range(count)]
    with _returning_appended_elements(body_block, scanned):
        body = g.convert_block(body_block, [iteration, *bound], "loop_body")
    body.inputs = [iteration, cond_in, *carried_in]
    outputs = body.outputs[1:]
    body.outputs = [body.outputs[0]] + [o for k, o in enumerate(outputs) if k not in scanned] + [
        outputs[k] for k in scanned
    ]
    _fix_body_outputs(g, body, carried_in)
    return body


@contextlib.contextmanager
def _returning_appended_elements(body_block, scanned: list[int]):
    """Make the body return, for each scanned list, the element it appends instead of the grown list (restored
    after): the element is the iteration's scan output, and the append itself becomes dead code."""
    ret = body_block.returnNode()
    originals = {k: list(ret.inputs())[k + 1] for k in scanned}
    for k, list_out in originals.items():
        ret.replaceInput(k + 1, _appended_item(list_out.node()))
    try:
        yield
    finally:
        for k, list_out in originals.items():
            ret.replaceInput(k + 1, list_out)


def _shapes_invariant(body: ir.Graph) -> bool:
    """Whether every carried tensor provably leaves an iteration with the shape it entered with.

    Then, by induction, the shapes of the first iteration hold for all of them and may be baked in.
    """
    carried_in, carried_out = body.inputs[2:], body.outputs[1:]
    return _items_invariant(body) and all(
        v_in.kind == ir.SEQUENCE or (v_in.kind == ir.OPTIONAL and optional.is_none(v_out))
        or (v_out.shape is not None and v_in.shape is not None and tuple(v_out.shape) == tuple(v_in.shape))
        for v_in, v_out in zip(carried_in, carried_out, strict=False)  # not strict: scan outputs have no input
    )


def _items_invariant(body: ir.Graph) -> bool:
    """Whether every carried list provably leaves an iteration with items of the shape the body assumed for the
    items it entered with (all of them, by induction; an empty start assumes none, and what the body appends is
    then all there is to know)."""
    return all(
        v_in.kind != ir.SEQUENCE or v_in.elem_shape == ir.NO_ITEMS
        or ir.join_elem_shapes(v_in.elem_shape, v_out.elem_shape) == v_in.elem_shape
        for v_in, v_out in zip(body.inputs[2:], body.outputs[1:], strict=False)  # not strict: scan outputs have no input
    )


def _carried_initial(g, value, ts_value) -> ir.Value:
    """A loop-carried start value as a graph value of a fixed type (numbers: int64/double/bool)."""
    if _is_list_type(ts_value):
        require_opset(g, SEQUENCE_LOOP_OPSET, "a list carried through a loop")
        return as_sequence(g, value)
    may_be_none = ts_value.type().kind() == "NoneType" or (
        ts_value.type().kind() == "OptionalType" and ts_value.type().getElementType().kind() == "TensorType")
    if may_be_none and optional.flows_through_control(g):
        start = optional.wrap(g, value)
        if start.dtype is None:
            start.dtype = declared_element_type(ts_value)
        return start
    if value is None or optional.is_optional(value):
        optional.require_optional(g, "a loop carries a value that is None", opset=optional.CONTROL_FLOW_OPTIONAL_OPSET)
    number_dtype = NUMBER_DTYPES.get(ts_value.type().kind())
    if number_dtype is not None:
        return as_number(g, value, number_dtype)
    return g.value(value)


def _loose_shape(value: ir.Value) -> tuple | None:
    """The shape of a carried value inside the body: its rank is kept, every size may change per iteration."""
    if value.kind == ir.SEQUENCE or value.shape is None:
        return None
    return tuple(None for _ in value.shape)  # an optional's element too


def _body_input(g, hint: str, dtype, shape, number: bool = False, kind: str = ir.TENSOR) -> ir.Value:
    value = ir.Value(g.session.fresh_name(hint), dtype=dtype, shape=shape, kind=kind)
    value.is_number = number
    return value


def _fix_body_outputs(g, body: ir.Graph, carried_in: list[ir.Value]) -> None:
    """The condition output as bool; each carried output with the type its input has."""
    cast_output(g, body, 0, BOOL)
    for index, value_in in enumerate(carried_in, start=1):
        value_out = body.outputs[index]
        if value_in.kind == ir.OPTIONAL:
            _optional_body_output(g, body, index, value_in)
            continue
        if value_out.kind == ir.OPTIONAL:  # carried as a tensor (below opset 15), set to None by an iteration
            optional.require_optional(g, "an iteration sets a loop-carried tensor to None",
                                      opset=optional.CONTROL_FLOW_OPTIONAL_OPSET)
            raise SymbolicValueError("an iteration sets a loop-carried tensor to None")
        if value_out.kind != value_in.kind:
            raise SymbolicValueError("a loop-carried value changes between a list and a tensor")
        if value_in.kind == ir.SEQUENCE or value_out.dtype == value_in.dtype or value_in.dtype is None:
            continue
        if not (value_in.is_number or is_constant_output(value_out)):
            raise SymbolicValueError(
                "a loop-carried tensor changes its element type between iterations, which ONNX Loop cannot express"
            )
        cast_output(g, body, index, value_in.dtype)
        body.outputs[index].shape = value_in.shape


def _optional_body_output(g, body: ir.Graph, index: int, value_in: ir.Value) -> None:
    """A carried optional's value at the end of an iteration, as an optional: a tensor is wrapped (cast to the
    carried element type first), a None stays the empty optional the body made for it."""
    value_out = body.outputs[index]
    if value_out.kind == ir.TENSOR:
        if value_in.dtype is not None and value_out.dtype not in (None, value_in.dtype):
            cast_output(g, body, index, value_in.dtype)
        body.outputs[index] = optional.wrap(g.subcontext(body), body.outputs[index])
    elif value_out.kind != ir.OPTIONAL:
        raise SymbolicValueError("a loop-carried value changes between None and a list")
    elif not optional.is_none(value_out) and None not in (value_in.dtype, value_out.dtype) \
            and value_in.dtype != value_out.dtype:
        raise SymbolicValueError("a loop-carried optional tensor changes its element type between iterations")


def _settle_optionals(initial: list[ir.Value], body_inputs: list[ir.Value], body_outputs: list[ir.Value]) -> None:
    """A carried optional that starts as None learns its element type from what an iteration sets it to (float if
    none ever does), and a None at either end is given the element type and shape of the other (the ``type``
    attribute of its Optional node is written from them)."""
    for start, body_in, end in zip(initial, body_inputs, body_outputs, strict=True):
        if start.kind != ir.OPTIONAL:
            continue
        dtype = start.dtype or end.dtype or body_in.dtype or TensorProto.FLOAT
        shape = _carried_result_shape(start, end)
        for value in (start, end):
            if optional.is_none(value):
                value.dtype, value.shape = dtype, shape
        body_in.dtype = dtype


def _settle_empty_sequences(initial: list[ir.Value], body_inputs: list[ir.Value], body_outputs: list[ir.Value]) -> None:
    """An empty list's element type is learnt from what the body appends to it (SequenceEmpty needs it), and so
    is that of a sequence not known yet (an outer loop body's input carrying an empty list); float if the body
    never appends. The body's carried input gets the same type."""
    for start, body_in, end in zip(initial, body_inputs, body_outputs, strict=True):
        if start.kind != ir.SEQUENCE:
            continue
        producer = start.producer
        empty = producer if producer is not None and producer.op_type == "SequenceEmpty" else None
        if start.dtype is None or (empty is not None and end.dtype is not None and start.dtype != end.dtype):
            dtype = end.dtype or body_in.dtype or TensorProto.FLOAT
            if empty is not None:
                empty.attrs["dtype"] = dtype
            start.dtype = dtype
        body_in.dtype = start.dtype
