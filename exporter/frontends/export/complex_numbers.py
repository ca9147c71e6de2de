"""Complex tensors in a torch.export program, exported as torch.onnx exports them.

ONNX operators do not compute on complex numbers, so a complex tensor is held as its real view
(``torch.view_as_real``: a trailing axis of 2, the real part then the imaginary part) everywhere: the model's inputs,
weights and outputs (a caller feeds ``view_as_real`` of a complex argument and reads an output so; the program object
converts the arguments it is called with) and every value in between. Views broadcast as the complex tensors do (the
trailing axis of 2 lines up), so elementwise addition is addition of the views; multiplication is computed from the
parts. The ops below are the ones converted on complex tensors; any other op that reads or makes one is refused: a
real op applied to the view would compute something else without a word.
"""

from __future__ import annotations

from typing import Any

import torch

from exporter import dtypes, ir
from exporter.errors import UnsupportedOperatorError
from exporter.graph_context import GraphContext
from exporter.lowering.core import reduce_op, unsqueeze

# The real type of each complex type's parts.
_PART_TYPES = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}


# Ops whose own symbolic gives its complex result as the real view already (STFT's output is one).
_REAL_VIEW_SYMBOLICS = frozenset({"stft"})


def touches_complex(node: Any) -> bool:
    """Whether an FX node reads or makes a complex tensor (or takes a complex number), other than the ops whose
    symbolics make the real view themselves."""
    if getattr(node.target, "_opname", None) in _REAL_VIEW_SYMBOLICS:
        return False
    examples = [node.meta.get("val"), *(arg.meta.get("val") for arg in node.all_input_nodes)]
    numbers = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, complex)]
    return bool(numbers) or any(_is_complex(e) for e in examples)


def _is_complex(example: Any) -> bool:
    if isinstance(example, (list, tuple)):
        return any(_is_complex(e) for e in example)
    return isinstance(example, torch.Tensor) and example.is_complex()


def convert(g: GraphContext, node: Any, env: dict) -> ir.Value:
    """The ONNX value (a real view) of an FX node that reads or makes complex tensors."""
    name = node.target._opname if isinstance(node.target, torch._ops.OpOverload) else str(node.target)
    handler = _HANDLERS.get(name)
    result = node.meta.get("val")
    if handler is None or not isinstance(result, torch.Tensor):
        raise UnsupportedOperatorError(f"aten::{name} on complex tensors", g.opset,
                                       reason="ONNX has no complex numbers; on their real views (a trailing axis of "
                                              "2) only " + ", ".join(sorted(_HANDLERS)) + " are converted")
    value = handler(g, node, [_operand(g, arg, env) for arg in node.args], result)
    value.dtype = dtypes.onnx_from_torch(_part_type(result))
    value.shape = tuple(d if isinstance(d, int) else None for d in dtypes.real_view(result).shape) \
        if result.is_complex() else tuple(d if isinstance(d, int) else None for d in result.shape)
    return value


class _Operand:
    """An argument of a complex op: its ONNX value (a real view when ``is_complex``), or a Python number."""

    def __init__(self, value: Any, is_complex: bool, rank: int | None):
        self.value, self.is_complex, self.rank = value, is_complex, rank


def _operand(g: GraphContext, arg: Any, env: dict) -> _Operand:
    if isinstance(arg, torch.fx.Node):
        example = arg.meta.get("val")
        held = env[arg]
        is_complex = _is_complex(example)
        rank = example.dim() if isinstance(example, torch.Tensor) else 0
        if isinstance(held, torch.Tensor):  # a constant of the program (computed at export time)
            held = g.const(dtypes.real_view(held))
        return _Operand(held, is_complex, rank)
    if isinstance(arg, complex):
        return _Operand(arg, True, 0)
    return _Operand(arg, False, None)


def _part_type(example: torch.Tensor) -> torch.dtype:
    return _PART_TYPES.get(example.dtype, example.dtype)


def _parts(g: GraphContext, x: _Operand, part_type: torch.dtype) -> tuple[Any, Any]:
    """The real and imaginary parts of a complex operand (ONNX values, or Python numbers for a number)."""
    if isinstance(x.value, complex):
        return g.const(torch.tensor(x.value.real, dtype=part_type)), g.const(torch.tensor(x.value.imag, dtype=part_type))
    if not x.is_complex:
        real = x.value if isinstance(x.value, ir.Value) else g.const(torch.tensor(x.value, dtype=part_type))
        return real, None
    axis = g.const(torch.tensor(0)), g.const(torch.tensor(1))
    return (g.op("Gather", x.value, axis[0], axis_i=x.rank), g.op("Gather", x.value, axis[1], axis_i=x.rank))


def _stacked(g: GraphContext, real: Any, imag: Any, rank: int) -> ir.Value:
    """The real view of ``real + imag * i`` (both of rank ``rank``)."""
    return g.op("Concat", unsqueeze(g, real, [rank]), unsqueeze(g, imag, [rank]), axis_i=rank)


def _as_view(g: GraphContext, x: _Operand, part_type: torch.dtype, rank: int) -> Any:
    """An operand as a real view: a real tensor gets an imaginary part of zeros (not ``x * 0``: inf * 0 is NaN)."""
    if x.is_complex and isinstance(x.value, ir.Value):
        return x.value
    real, imag = _parts(g, x, part_type)
    if imag is None:
        real = g.op("Cast", real, to_i=dtypes.onnx_from_torch(part_type))
        column = unsqueeze(g, real, [x.rank or 0])
        zeros = g.op("ConstantOfShape", g.op("Shape", column),
                     value_t=torch.zeros(1, dtype=part_type))
        return g.op("Concat", column, zeros, axis_i=x.rank or 0)
    return _stacked(g, real, imag, 0)


def _add_or_sub(op_type: str):
    def convert_op(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
        alpha = node.kwargs.get("alpha", args[2].value if len(args) > 2 else 1)
        part_type = _part_type(result)
        a, b = (_as_view(g, x, part_type, result.dim()) for x in args[:2])
        if alpha != 1:
            if isinstance(alpha, complex):
                raise UnsupportedOperatorError(f"aten::{node.target._opname} with a complex alpha", g.opset)
            b = g.op("Mul", b, g.const(torch.tensor(alpha, dtype=part_type)))
        return g.op(op_type, a, b)
    return convert_op


def _mul(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
    a, b = args[:2]
    part_type = _part_type(result)
    if not a.is_complex:
        a, b = b, a
    if not b.is_complex:  # complex times real: both parts scaled (a tensor's trailing axis of 1 meets the 2)
        scale = g.op("Cast", _parts(g, b, part_type)[0], to_i=dtypes.onnx_from_torch(part_type))
        return g.op("Mul", a.value, unsqueeze(g, scale, [b.rank or 0]) if isinstance(b.value, ir.Value) else scale)
    (ar, ai), (br, bi) = _parts(g, a, part_type), _parts(g, b, part_type)
    real = g.op("Sub", g.op("Mul", ar, br), g.op("Mul", ai, bi))
    imag = g.op("Add", g.op("Mul", ar, bi), g.op("Mul", ai, br))
    return _stacked(g, real, imag, result.dim())


def _same(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
    """Ops that leave the real view as it is: copies, and the conversions between a complex tensor and its view."""
    return g.op("Identity", g.value(args[0].value))


def _neg(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
    return g.op("Neg", args[0].value)


def _complex(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
    part_type = _part_type(result)
    real, imag = (g.op("Cast", g.value(x.value), to_i=dtypes.onnx_from_torch(part_type)) for x in args[:2])
    return _stacked(g, real, imag, result.dim())


def _abs(g: GraphContext, node: Any, args: list[_Operand], result: torch.Tensor) -> ir.Value:
    x = args[0].value
    return g.op("Sqrt", reduce_op(g, "ReduceSum", g.op("Mul", x, x), [args[0].rank or 0], keepdims=False))


_HANDLERS = {
    "add": _add_or_sub("Add"), "sub": _add_or_sub("Sub"), "mul": _mul, "neg": _neg, "abs": _abs,
    "complex": _complex, "clone": _same, "detach": _same, "alias": _same, "lift_fresh_copy": _same,
    "view_as_real": _same, "view_as_complex": _same, "contiguous": _same,
}
