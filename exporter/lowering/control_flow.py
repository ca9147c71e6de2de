"""Building blocks of scripted control flow (If, Loop) and the numbers around it: TorchScript's ``int``, ``float``
and ``bool`` as 0-d tensors, values known at export time, results bound to a node's outputs, and subgraph outputs
(branches, loop bodies) that are constants or need a cast to the type the other side has."""

from __future__ import annotations

from exporter import ir
from exporter.dtypes import BOOL, DOUBLE, INT64
from exporter.lowering.core import cast, is_constant, is_value

NUMBER_DTYPES = {"IntType": INT64, "FloatType": DOUBLE, "BoolType": BOOL}


def is_static(x) -> bool:
    """A value known at export time (a Python value or a constant that is not a parameter)."""
    return not is_value(x) or is_constant(x)


def node_results(node, results):
    """Results in the form the converter binds to ``node``'s outputs."""
    count = len(list(node.outputs()))
    return results[0] if count == 1 else tuple(results)


def as_number(g, x, dtype: int) -> ir.Value:
    """``x`` as a number of scripted code: a 0-d tensor of ``dtype``."""
    out = cast(g, x, dtype)
    out.shape = ()
    out.is_number = True
    return out


def is_constant_output(value: ir.Value) -> bool:
    """Whether a subgraph's output is known at export time (a constant or a Constant node's)."""
    return value.const is not None or (value.producer is not None and value.producer.op_type == "Constant")


def cast_output(g, graph: ir.Graph, index: int, dtype: int) -> None:
    """Cast the tensor output ``index`` of the subgraph ``graph`` to ``dtype``, where it has another type."""
    value = graph.outputs[index]
    if value.dtype == dtype or value.kind == ir.SEQUENCE:
        return
    if value.dtype is not None and value.kind == ir.TENSOR:
        out = g.subcontext(graph).op("Cast", value, to_i=dtype)
        out.shape, out.is_number = value.shape, value.is_number
        graph.outputs[index] = out
