"""ONNX optionals (opset 15+): PyTorch's ``Optional[Tensor]``, a value that is a tensor or None at run time.

TorchScript keeps a variable that one branch sets to None and another to a tensor (``y: Optional[Tensor] = None;
if c: y = x``) as one value of type ``Tensor?``; ONNX has the matching type, ``optional(tensor)``, from opset 15:
``Optional`` wraps a tensor (or makes an empty one), ``OptionalHasElement`` is ``y is not None`` and
``OptionalGetElement`` is the tensor once TorchScript has refined ``y`` (``prim::unchecked_cast`` after an
``is not None`` test). An :class:`ir.Value` of kind ``ir.OPTIONAL`` holds one; its ``dtype`` and ``shape`` describe
the element. Below opset 15 nothing can stand for "a tensor or None decided at run time", so a model that needs one
is refused with an error that names opset 15. If and Loop take optionals from opset 16 (If-16, Loop-16, and
Identity-16 to pass one through a subgraph): a None that flows out of a branch or through an iteration needs 16.
"""

from __future__ import annotations

from typing import Any

from exporter import ir
from exporter.errors import UnsupportedOperatorError
from exporter.graph_context import GraphContext

OPTIONAL_OPSET = 15  # Optional, OptionalHasElement, OptionalGetElement
CONTROL_FLOW_OPTIONAL_OPSET = 16  # If-16, Loop-16 and Identity-16 take optionals; their earlier versions do not


def flows_through_control(g: GraphContext) -> bool:
    """Whether the target opset's If and Loop take and return optional values (If-16, Loop-16)."""
    return g.opset >= CONTROL_FLOW_OPTIONAL_OPSET


def is_optional(x: Any) -> bool:
    return isinstance(x, ir.Value) and x.kind == ir.OPTIONAL


def require_optional(g: GraphContext, what: str, op: str | None = None, opset: int = OPTIONAL_OPSET) -> None:
    """Below ``opset``, refuse ``what`` (something only an ONNX optional can express), naming that opset: 15 for
    optionals themselves, 16 for optionals that If or Loop pass on (:data:`CONTROL_FLOW_OPTIONAL_OPSET`)."""
    if g.opset < opset:
        op = op or (g.op_kind if g.node is not None else "a None value")
        where = "ONNX optional values" if opset == OPTIONAL_OPSET else "If and Loop to pass ONNX optional values on"
        raise UnsupportedOperatorError(op, g.opset, opset, f"{what}: that needs {where}: needs opset >= {opset}")


def is_none(value: ir.Value) -> bool:
    """Whether ``value`` is an optional made empty here (a None), as opposed to one that may hold a tensor."""
    producer = value.producer
    return (value.kind == ir.OPTIONAL and producer is not None and producer.op_type == "Optional"
            and not producer.domain and not producer.inputs)


def empty(g: GraphContext, dtype: int | None = None, shape: tuple | None = None) -> ir.Value:
    """An empty optional (a None). Its element type may be left open: the serializer writes the ``type``
    attribute from the value's type as it stands at the end (see ``serialize.node_to_proto``)."""
    out = g.op("Optional")
    out.kind, out.dtype, out.shape = ir.OPTIONAL, dtype, shape
    return out


def wrap(g: GraphContext, x: Any) -> ir.Value:
    """``x`` as an optional: None an empty one, a tensor an optional holding it, an optional itself."""
    if x is None:
        return empty(g)
    x = g.value(x)
    if x.kind == ir.OPTIONAL:
        return x
    if x.kind != ir.TENSOR:
        raise UnsupportedOperatorError(
            g.op_kind if g.node is not None else "Optional", g.opset,
            reason=f"a value that is a {x.kind} or None at run time: only optional tensors are supported",
        )
    out = g.op("Optional", x)
    out.kind, out.dtype, out.shape = ir.OPTIONAL, x.dtype, x.shape
    out.is_number = x.is_number
    return out


def has_element(g: GraphContext, x: ir.Value) -> ir.Value:
    """``x is not None`` as a bool number."""
    out = g.op("OptionalHasElement", x)
    out.shape, out.is_number = (), True
    return out


def get_element(g: GraphContext, x: ir.Value) -> ir.Value:
    """The tensor ``x`` holds (TorchScript reads it only where ``x is not None`` was established)."""
    out = g.op("OptionalGetElement", x)
    out.dtype, out.shape, out.is_number = x.dtype, x.shape, x.is_number
    return out


def pass_through(g: GraphContext, x: ir.Value) -> ir.Value:
    """An optional from an enclosing graph as a value of this subgraph's own (a subgraph output must be produced
    in it): Identity, which takes optionals from opset 16, as the If and Loop that return them do."""
    require_optional(g, "a branch or loop body returns an optional value", opset=CONTROL_FLOW_OPTIONAL_OPSET)
    out = g.op("Identity", x)
    out.kind, out.dtype, out.shape, out.is_number = ir.OPTIONAL, x.dtype, x.shape, x.is_number
    return out


def merged_shape(shapes: list[tuple | None]) -> tuple | None:
    """The element shape of an optional that holds one of several tensors: theirs where they agree, else only the
    rank where that agrees, else unknown."""
    known = [shape for shape in shapes if shape is not None]
    if not shapes or len(known) < len(shapes):
        return None
    if len({len(shape) for shape in known}) > 1:
        return None
    return tuple(dims[0] if len(set(dims)) == 1 else None for dims in zip(*known, strict=True))
