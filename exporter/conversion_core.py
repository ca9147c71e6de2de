"""The conversion core both front ends' drivers build on: how a symbolic is found (:class:`Symbolics`) and called
(:func:`call_symbolic`), which ops may be computed at export time (the folding policy), and how a converted value
takes the type the capture recorded (:func:`annotate`). It knows no capture: a driver walks its own graph and hands
this module op kinds, arguments and the types its capture recorded."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from exporter import ir
from exporter.errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from exporter.graph_context import ExportSession, GraphContext
from exporter.lowering import optional, qdq
from exporter.registry import REGISTRY

# Ops never evaluated at export time even when their inputs are constant.
_NOT_FOLDABLE_WORDS = ("rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "empty", "poisson",
                       "exponential", "geometric", "cauchy")
# In-place ops whose result is not a function of their arguments' values (uninitialized or shared memory).
_NOT_FOLDABLE_KINDS = frozenset({"aten::resize_", "aten::resize_as_", "aten::set_"})
# Ops that take an optional value (kind ir.OPTIONAL) as it is; any other op receiving one is refused.
TAKES_OPTIONALS = frozenset({"aten::__is__", "aten::__isnot__", "prim::unchecked_cast", "aten::_unwrap_optional",
                              "prim::unchecked_unwrap_optional", "prim::Loop"})


class Symbolics:
    """The op library's symbolic of each op kind at ``session``'s opset, looked up once per kind."""

    def __init__(self, session: ExportSession):
        self.session = session
        self._found: dict[str, Callable] = {}

    def lookup(self, kind: str) -> Callable:
        found = self._found.get(kind)
        if found is None:
            found = self._found[kind] = REGISTRY.lookup(kind, self.session.opset)
        return found


NOT_EVALUATED = object()  # what a fold returns where PyTorch cannot compute the op


def is_constant(arg: Any) -> bool:
    if isinstance(arg, ir.Value):
        return False
    if isinstance(arg, (list, tuple)):
        return all(is_constant(a) for a in arg)
    return True


def call_symbolic(g: GraphContext, symbolic_fn: Callable, kind: str, args: list[Any]) -> Any:
    """Call ``symbolic_fn`` (the op library's conversion of ``kind``) on ``args``, whichever front end captured the
    op: optional arguments only where the op takes them, quantized ones dequantized unless the symbolic takes them
    as they are, and the symbolic's own errors prefixed with the op."""
    has_optional, has_quantized = _special_arguments(args)
    if has_optional and kind not in TAKES_OPTIONALS:
        raise SymbolicValueError(
            f"{kind} receives a value that may be None at run time (an Optional[Tensor] input, or a value a "
            "branch or loop may set to None); only `is None` tests and the value refined by one "
            "(`if x is not None: ...x...`) are supported"
        )
    if has_quantized:
        args = qdq.constants_as_qtensors(g, args)
    try:
        if (has_quantized and kind not in qdq.STRUCTURAL_OPS
                and not getattr(symbolic_fn, "takes_quantized", False)):
            return qdq.call_on_dequantized(g, symbolic_fn, args)
        return symbolic_fn(g, *args)
    except OnnxExporterError as error:
        if isinstance(error, UnsupportedOperatorError) or str(error).startswith(kind):
            raise
        raise type(error)(f"{kind}: {error}") from error


def _special_arguments(args: list[Any]) -> tuple[bool, bool]:
    """(whether an argument, or an item of a list argument, is an optional; whether a quantized tensor is among the
    arguments, at any depth): one pass, as every symbolic call asks both."""
    has_optional = has_quantized = False
    for arg in args:
        for item in arg if isinstance(arg, (list, tuple)) else (arg,):
            if optional.is_optional(item):
                has_optional = True
            elif qdq.contains_quantized(item) or qdq.is_quantized_constant(item):
                has_quantized = True
    return has_optional, has_quantized


@functools.cache
def foldable_kind(kind: str) -> bool:
    """Whether a node of ``kind`` whose inputs are all constants may be computed at export time. In-place ops may:
    the mutation pass has made the graph functional (every later use reads the op's result, not its input), so
    such an op is computed on a copy of its input, as its symbolic computes a new value."""
    return (kind.startswith("aten::") and kind not in _NOT_FOLDABLE_KINDS
            and not any(w in kind for w in _NOT_FOLDABLE_WORDS))


def any_empty(args: list[Any]) -> bool:
    """Whether an argument, or an item of a list argument, is a tensor with no elements."""
    for arg in args:
        for item in arg if isinstance(arg, (list, tuple)) else (arg,):
            if isinstance(item, (ir.Value, torch.Tensor)) and _is_empty(item):
                return True
    return False


def _is_empty(x: ir.Value | torch.Tensor) -> bool:
    if isinstance(x, torch.Tensor):
        return x.numel() == 0
    return x.shape is not None and 0 in x.shape


def copy_type(value: ir.Value, like: ir.Value) -> ir.Value:
    value.dtype, value.shape, value.kind, value.elem_shape = like.dtype, like.shape, like.kind, like.elem_shape
    return value


def annotate(value: ir.Value, elem: int | None, shape: tuple | None) -> None:
    """Fill in what the capture recorded and the symbolic left unknown: element type and sizes."""
    if value.dtype is None and elem is not None:
        value.dtype = elem
    if value.shape is None and shape is not None:
        value.shape = shape
