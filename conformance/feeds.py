"""Feeding ONNX Runtime by name, from the caller's own arguments: the one way the harness builds a run's feeds (model
and example cases, op cases, OpInfo samples, repro bundles).

A run fed by position trusts the export's order of graph inputs, so an export that binds an argument to the wrong
input (a trailing dict of keyword arguments taken in the dict's order rather than ``forward``'s, say) feeds each
tensor to the input the export wrongly put there and agrees with itself. Here the names come from the caller's side,
computed apart from the exporter's flattening: :func:`caller_values` binds the arguments as torch.onnx does and
names each value with the name the caller gave it, and :func:`feeds_for` picks, for each graph input, the value of
that name. A binding slip then feeds another tensor than PyTorch got (a mismatch, or ONNX Runtime refusing its
shape), and a graph input that names no value of the caller's is a :class:`FeedError`, never skipped. A value whose
name the graph lacks is left out by name: the export drops an argument nothing reads, as torch.onnx does.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch

NUMBERS = (bool, int, float)

# ONNX Runtime's type strings of the graph inputs a Python number can feed (as a 0-d array of that type).
ORT_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(float16)": np.float16}


class FeedError(ValueError):
    """The model's graph inputs are not the caller's arguments: a graph input no value of the caller's is named."""


def call_arguments(args: Any) -> tuple[tuple, dict]:
    """``export``'s ``args`` as the call they stand for, (positional, keywords), as torch.onnx reads them: a tensor is
    one positional argument; a non-empty dict ending a tuple holds keyword arguments; an empty one ending it only
    marks the dict before it as positional."""
    if not isinstance(args, tuple):
        args = (args,)
    if args and isinstance(args[-1], dict):
        return (args[:-1], dict(args[-1])) if args[-1] else (args[:-1], {})
    return args, {}


def call(model: Any, args: Any) -> Any:
    """``model`` called with ``args`` as ``export`` reads them (a trailing dict as keyword arguments)."""
    positional, keywords = call_arguments(args)
    return model(*positional, **keywords)


def parameters_of(model: Any) -> list[inspect.Parameter] | None:
    """``forward``'s parameters in order (a function's, a scripted function's or module's from its schema); None
    where there is no signature to read."""
    try:
        if isinstance(model, torch.jit.ScriptFunction):
            arguments = list(model.schema.arguments)  # type: ignore[attr-defined]
        elif isinstance(model, torch.jit.ScriptModule):
            arguments = list(model.forward.schema.arguments)[1:]  # type: ignore[attr-defined]  (self)
        else:
            function = model.forward if isinstance(model, torch.nn.Module) else model
            return list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError, AttributeError, RuntimeError):
        return None
    return [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=a.default_value if a.has_default_value() else inspect.Parameter.empty)
            for a in arguments]


def bound_arguments(args: Any, parameters: Sequence[inspect.Parameter] | None,
                    defaults: bool = False) -> list[tuple[str | None, Any]]:
    """The caller's arguments in the order torch.onnx binds them, each with its parameter's name (None where no
    parameter names it): the positional ones first, then each later parameter in the order of ``forward``'s signature
    from the trailing dict, else (``defaults``: a scripted model's schema binding; any other keeps a default a
    constant) from its default. Positional arguments past the named parameters are one argument, the ``*args`` parameter's, where
    there is one; a dict key that names no parameter goes to ``**kwargs`` where there is one; one that names no
    parameter otherwise, or one given positionally, is dropped, as the export drops it. Without ``parameters`` (no signature to read), the dict's entries follow in
    its own order."""
    positional, keywords = call_arguments(args)
    if parameters is None:
        return [(None, value) for value in positional] + list(keywords.items())
    fixed = [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    by_position = [p.name for p in fixed if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rest = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    bound: list[tuple[str | None, Any]] = [(by_position[i] if i < len(by_position) else None, value)
                                           for i, value in enumerate(positional)]
    if rest is not None and len(positional) > len(by_position):
        bound[len(by_position):] = [(rest, tuple(positional[len(by_position):]))]
    later = [p for p in fixed if p.name not in by_position[:len(positional)]]
    for parameter in later:
        if parameter.name in keywords:
            bound.append((parameter.name, keywords[parameter.name]))
        elif defaults and parameter.default is not parameter.empty:
            bound.append((parameter.name, parameter.default))
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        bound += [(key, value) for key, value in keywords.items() if key not in {p.name for p in fixed}]
    return bound


def _leaves(value: Any, numbers: bool) -> list[Any]:
    """The graph inputs a value of the caller's becomes, depth first: tuple and list items in order, dict values in
    insertion order (a tensor key just before its value), a Python number where ``numbers`` (TorchScript makes it a
    0-d input; torch.export bakes it), nothing for None or a string."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, NUMBERS):
        return [value] if numbers else []
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item, numbers)]
    if isinstance(value, dict):
        return [leaf for key, item in value.items()
                for leaf in ([key] if isinstance(key, torch.Tensor) else []) + _leaves(item, numbers)]
    return []


def caller_values(args: Any, input_names: Sequence[str] | None = None, *, model: Any = None,
                  numbers: bool = True) -> dict[str, Any]:
    """{ONNX input name: value} for the caller's ``args`` (as for ``export``: positional, then a trailing dict of
    keyword arguments), from the caller's side alone.

    The values are the arguments' leaves in torch.onnx's binding order (:func:`bound_arguments`, with ``model``'s
    signature ordering the trailing dict), each argument flattened depth first; ``numbers``: Python numbers are
    inputs (TorchScript's captures), not constants (torch.export's); a scripted model's parameters left out take
    their defaults as inputs (its schema binds them), any other model's keep them as constants. ``input_names`` name
    them in that order (names
    past the leaves name parameters, which are not fed); a leaf past them takes its argument's name, ``<argument>_<k>``
    for the k-th leaf of a nested one, or ``input_<i>`` by its position where no parameter names it. A quantized
    tensor is three values, as the export lays it out: its integers, ``<name>_scale`` and ``<name>_zero_point``."""
    parameters = parameters_of(model) if model is not None else None
    named: list[tuple[str, Any]] = []
    scripted = isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction))
    for name, value in bound_arguments(args, parameters, defaults=numbers and scripted):
        leaves = _leaves(value, numbers)
        single = len(leaves) == 1 and (isinstance(value, torch.Tensor) or isinstance(value, NUMBERS))
        for k, leaf in enumerate(leaves):
            default = f"input_{len(named)}" if name is None else name if single else f"{name}_{k}"
            named.append((default, leaf))
    given = list(input_names or [])
    values: dict[str, Any] = {}
    for index, (default, leaf) in enumerate(named):
        name = given[index] if index < len(given) else default
        for part_name, part in _parts(name, leaf):
            if part_name in values:
                raise ValueError(f"two of the caller's values are named {part_name!r}: {[n for n, _ in named]}")
            values[part_name] = part
    return values


def _parts(name: str, leaf: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(leaf, torch.Tensor) and leaf.is_quantized:
        return [(name, leaf.int_repr()), (f"{name}_scale", np.array(leaf.q_scale(), np.float64)),
                (f"{name}_zero_point", np.array(leaf.q_zero_point(), np.int64))]
    return [(name, leaf)]


def session_inputs(session) -> list[tuple[str, Any]]:
    """An ONNX Runtime session's graph inputs (initializers excluded) as (name, numpy dtype or None)."""
    return [(i.name, ORT_DTYPES.get(i.type)) for i in session.get_inputs()]


def model_inputs(model) -> list[tuple[str, Any]]:
    """A ModelProto's graph inputs that are not initializers, as (name, numpy dtype or None)."""
    from onnx import helper

    initializers = {t.name for t in model.graph.initializer}
    found = []
    for graph_input in model.graph.input:
        if graph_input.name in initializers:
            continue
        tensor = graph_input.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type) if graph_input.type.HasField("tensor_type") else None
        found.append((graph_input.name, dtype))
    return found


def feeds_for(graph_inputs: Sequence[tuple[str, Any]], values: dict[str, Any]) -> dict[str, np.ndarray]:
    """The feeds of a run: for each graph input (``session_inputs``/``model_inputs``), the caller's value of its
    name, as an array (a Python number in the input's type). A value the graph has no input for is left out (an
    argument the export dropped); a graph input without a value of its name is a :class:`FeedError` naming both
    sides."""
    missing = [name for name, _ in graph_inputs if name not in values]
    if missing:
        unfed = sorted(set(values) - {name for name, _ in graph_inputs})
        raise FeedError(f"the model's graph inputs are not the caller's arguments: graph input(s) {missing} name no "
                        f"value of the caller's (the caller's values: {list(values)}; not in the model: {unfed})")
    return {name: as_array(values[name], dtype) for name, dtype in graph_inputs}


def as_array(value: Any, dtype: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value, dtype=dtype)
