"""``prim::If`` of scripted code, and the number arithmetic around scripted control flow.

``prim::If`` becomes ONNX ``If`` (every opset from 7), or just the taken branch when the condition is known at export
time. ``prim::Loop`` is ``loop``'s.

Numbers of scripted code (``int``, ``float``, ``bool``) are 0-d tensors of int64, double and bool.
"""

from __future__ import annotations

import torch
from onnx import TensorProto

from exporter import dtypes, ir
from exporter.dtypes import BOOL, DOUBLE, INT64
from exporter.errors import SymbolicValueError
from exporter.frontends.torchscript.facts import declared_element_type, ts_value_type
from exporter.lowering import optional
from exporter.lowering.control_flow import (
    NUMBER_DTYPES,
    as_number,
    cast_output,
    is_constant_output,
    is_static,
    node_results,
)
from exporter.lowering.core import cast, constant_value, dim_size
from exporter.lowering.numbers import extremum
from exporter.lowering.sequence import sequence_length
from exporter.registry import symbolic, unsupported


def _declared_dtype(ts_value) -> int | None:
    """The ONNX element type of a TorchScript number, or of a tensor whose dtype TorchScript recorded."""
    ts_type = ts_value.type()
    if ts_type.kind() in NUMBER_DTYPES:
        return NUMBER_DTYPES[ts_type.kind()]
    if ts_type.kind() == "TensorType" and ts_type.scalarType() is not None:

        return ts_value_type(ts_value, True)[0]
    return None


# -- If ---------------------------------------------------------------------------------------------------------
@symbolic("prim::If")
def if_(g, condition):
    """ONNX If; a condition known at export time keeps only the taken branch, as tracing would."""
    node = g.node
    then_block, else_block = list(node.blocks())
    if is_static(condition):
        taken = then_block if bool(constant_value(condition)) else else_block
        return node_results(node, g.inline_block(taken, []))
    outputs = list(node.outputs())
    if not outputs:
        return ()  # a branch with only side effects (raise, warn) has nothing ONNX can run
    then_graph = g.convert_block(then_block, [], "then_branch")
    else_graph = g.convert_block(else_block, [], "else_branch")
    _unify_branch_types(g, then_graph, else_graph, outputs)
    cond = as_number(g, condition, BOOL)
    results = g.op("If", cond, then_branch_g=then_graph, else_branch_g=else_graph, outputs=len(outputs))
    results = results if isinstance(results, tuple) else (results,)
    for value, branch_value, other in zip(results, then_graph.outputs, else_graph.outputs, strict=True):
        value.dtype, value.kind = branch_value.dtype, branch_value.kind
        if branch_value.kind == ir.OPTIONAL:
            value.shape = branch_value.shape
        if value.kind == ir.SEQUENCE:
            value.elem_shape = ir.join_elem_shapes(branch_value.elem_shape, other.elem_shape)
    return node_results(node, list(results))


def _unify_branch_types(g, then_graph: ir.Graph, else_graph: ir.Graph, ts_outputs) -> None:
    """Cast branch outputs so both branches give each output the same element type, as ONNX If requires; a
    placeholder for a result that a raising branch never sets takes the other branch's static shape. A result that
    is None on one side (or an optional) is an optional on both (If-16)."""
    then_block, else_block = g.node.blocks()
    for index, ts_value in enumerate(ts_outputs):
        for block, graph, other in ((then_block, then_graph, else_graph), (else_block, else_graph, then_graph)):
            if list(block.outputs())[index].node().kind() == "prim::Uninitialized":
                _shape_placeholder(g, graph, index, other.outputs[index])
        first, second = then_graph.outputs[index], else_graph.outputs[index]
        if ir.OPTIONAL in (first.kind, second.kind):
            _unify_optional(g, then_graph, else_graph, index, ts_value)
            continue
        if first.kind != second.kind:
            raise SymbolicValueError("the branches of an if return a list on one side and a tensor on the other")
        if first.dtype == second.dtype:
            continue
        target = _declared_dtype(ts_value)
        if target is None:
            target = second.dtype if is_constant_output(first) else first.dtype
        if target is None:  # the chosen side has no known type (an empty list): nothing to cast to
            continue
        for graph in (then_graph, else_graph):
            cast_output(g, graph, index, target)


def _unify_optional(g, then_graph: ir.Graph, else_graph: ir.Graph, index: int, ts_value) -> None:
    """Output ``index`` as an optional from both branches: a tensor is wrapped (cast first where the branches
    disagree on the element type), a None takes the element type and shape of what the other branch gives."""
    optional.require_optional(g, "a branch gives None where the other gives a tensor",
                              opset=optional.CONTROL_FLOW_OPTIONAL_OPSET)
    branches = (then_graph, else_graph)
    values = [graph.outputs[index] for graph in branches]
    if any(v.kind not in (ir.TENSOR, ir.OPTIONAL) for v in values):
        raise SymbolicValueError("the branches of an if return None on one side and a list on the other")
    filled = [v for v in values if not optional.is_none(v)]
    seen = [v.dtype for v in filled if v.dtype is not None]
    declared = declared_element_type(ts_value)
    dtype = (declared or seen[0]) if len(set(seen)) > 1 else (seen[0] if seen else declared)
    shape = optional.merged_shape([v.shape for v in filled])
    for graph, value in zip(branches, values, strict=True):
        sub = g.subcontext(graph)
        if value.kind == ir.TENSOR:
            if dtype is not None and value.dtype not in (None, dtype):
                cast_output(g, graph, index, dtype)
            value = optional.wrap(sub, graph.outputs[index])
        elif not optional.is_none(value) and value.dtype not in (None, dtype):
            raise SymbolicValueError("the branches of an if give optional tensors of different element types")
        value.dtype, value.shape = dtype, shape
        graph.outputs[index] = value


def _shape_placeholder(g, graph: ir.Graph, index: int, other: ir.Value) -> None:
    """The result of a branch that raises instead of setting it: zeros of the other branch's type, of its shape
    where static, else of its rank (sizes 1), so that both branches agree (If before opset 11 needs that); an
    empty list where the other branch gives a list."""
    value = graph.outputs[index]
    if other.dtype is None or ir.SCANNED in (value.kind, other.kind):
        return
    if other.kind == ir.SEQUENCE:  # a list: an empty one of the same element type
        empty = g.subcontext(graph).op("SequenceEmpty", dtype_i=other.dtype)
        empty.dtype, empty.kind, empty.elem_shape = other.dtype, ir.SEQUENCE, ir.NO_ITEMS
        graph.outputs[index] = empty
        return
    shape = () if other.shape is None else tuple(d if isinstance(d, int) else 1 for d in other.shape)
    graph.outputs[index] = g.subcontext(graph).const(torch.zeros(shape, dtype=dtypes.torch_from_onnx(other.dtype)))
    graph.outputs[index].is_number = other.is_number


# -- numbers ----------------------------------------------------------------------------------------------------
@symbolic("aten::floordiv")
def floordiv(g, self, other):
    """Python's ``//`` on numbers: floor of the true quotient (computed in double, exact below 2**53)."""
    dtype = INT64 if all(_number_dtype(g, x) == INT64 for x in (self, other)) else DOUBLE
    quotient = g.op("Div", cast(g, self, DOUBLE), cast(g, other, DOUBLE))
    return as_number(g, g.op("Floor", quotient), dtype)


def _number_dtype(g, x) -> int:
    if isinstance(x, bool) or isinstance(x, int):
        return INT64
    if isinstance(x, float):
        return DOUBLE
    return g.dtype(x) if g.dtype(x) in (INT64, BOOL) else DOUBLE


@symbolic("aten::__not__")
def not_(g, self):
    return as_number(g, g.op("Not", cast(g, self, BOOL)), BOOL)


@symbolic("prim::Uninitialized")
def uninitialized(g):
    """A placeholder for a variable that a branch never sets (the branch exits); any value of its type will do.
    One per output: an uninitialized tuple has one output per item once tuples are lowered."""
    return node_results(g.node, [g.const(torch.zeros((), dtype=torch.float64), _declared_dtype(out) or TensorProto.FLOAT)
                             for out in g.node.outputs()])


@symbolic("aten::len")
def len_(g, self):
    """Length of a list (known, or an ONNX sequence at run time) or size of a tensor's first dimension."""
    if isinstance(self, (list, tuple)):
        return len(self)
    if self.kind == ir.SEQUENCE:

        return sequence_length(g, self)

    return dim_size(g, self, 0)


@symbolic("aten::__range_length")
def range_length(g, low, high, step):
    """Iterations of ``range(low, high, step)``: max(0, ceil((high - low) / step)); ``step`` must be known."""
    if not is_static(step):
        raise unsupported(g.op_kind, g.opset, "a range step computed at run time is not supported")
    step = int(constant_value(step))
    span = g.op("Sub", cast(g, high, INT64), cast(g, low, INT64)) if step > 0 else (
        g.op("Sub", cast(g, low, INT64), cast(g, high, INT64))
    )
    stride = abs(step)
    # Integer Div truncates; with a non-negative numerator that is the floor, and negative spans clamp to 0.
    count = g.op("Div", g.op("Add", span, g.const(stride - 1, torch.int64)), g.const(stride, torch.int64))
    return as_number(g, extremum(g, "Max", [count, 0], INT64), INT64)


@symbolic("aten::__derive_index")
def derive_index(g, index, start, step):
    """The loop variable of ``range(start, ..., step)`` at iteration ``index``: start + index * step."""
    product = g.op("Mul", cast(g, index, INT64), cast(g, step, INT64))
    return as_number(g, g.op("Add", cast(g, start, INT64), product), INT64)


@symbolic("prim::min", "prim::max")
def min_max(g, *args):
    """``min``/``max`` of two numbers or of one list of numbers."""
    items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    op_type = "Min" if g.op_kind == "prim::min" else "Max"
    if all(is_static(x) for x in items):
        values = [constant_value(x) for x in items]
        return min(values) if op_type == "Min" else max(values)
    dtype = _declared_dtype(g.node.output()) or DOUBLE
    return as_number(g, extremum(g, op_type, items, dtype), dtype)
