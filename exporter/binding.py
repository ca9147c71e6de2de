"""How the caller's arguments bind to ``forward``'s parameters, and so the order of the graph's inputs.

A caller may give the model's arguments positionally, as a trailing dict of ``args`` or as ``kwargs=``, in any order.
PyTorch's TorchScript exporter binds them by ``forward``'s signature before tracing: the positional arguments, then
each later parameter in the signature's order from the dict, else from its default. Its torch.export exporter orders
them the same way when it translates ``dynamic_axes``. The graph's inputs follow that order, so ``input_names`` in
the signature's order name the tensors they mean, whatever order the caller's dict had.

Where torch.onnx binds wrong, we differ on purpose (docs/differences-from-torch-onnx.md):
- a parameter the caller left out keeps its default as the model's constant, as in a Python call and in torch.onnx's
  dynamo exporter (torch.onnx's TorchScript exporter passes a default number as a 0-d input, which breaks a model
  that branches on a default flag: ``nn.TransformerEncoderLayer``'s ``is_causal`` fails in it);
- a parameter with neither a value nor a default is an error (torch.onnx skips it, and the parameters after it take
  the wrong values);
- a dict key that names no parameter (or one given positionally) is dropped with a warning, where torch.onnx drops it
  silently; for a ``forward(..., **kwargs)`` it is passed on to ``**kwargs`` (torch.onnx drops every such key, so the
  model runs without them).
"""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any

import torch
from torch.utils import _pytree as pytree

from exporter.errors import ExportArgumentError
from exporter.frontends.base import split_args

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def signature_of(model: Any) -> inspect.Signature | None:
    """``forward``'s signature (a function's own), or None where Python cannot read one."""
    if isinstance(model, torch.jit.ScriptFunction):
        # torch's stubs make ScriptFunction.schema a method; the binding makes it a property
        arguments = model.schema.arguments  # type: ignore[attr-defined]
        return inspect.Signature([
            inspect.Parameter(argument.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              default=argument.default_value if argument.has_default_value() else inspect.Parameter.empty)
            for argument in arguments])
    try:
        return inspect.signature(model.forward if isinstance(model, torch.nn.Module) else model)
    except (TypeError, ValueError):
        return None


def bind_for_trace(model: Any, args: Any) -> Any:
    """``args`` bound as PyTorch's TorchScript exporter binds them (module docstring): the positional arguments, then
    the dict's in ``forward``'s order (what ``**kwargs`` takes last, in the caller's order), passed by name; a
    parameter left out keeps its default, a constant of the model (see the module docstring)."""
    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return args  # bound by its schema as it is captured (frontends/torchscript/scripted.py), a None default left a constant
    signature = signature_of(model)
    positional, keywords = split_args(args)
    if signature is None:
        return args
    parameters = [p for p in signature.parameters.values() if p.kind not in _VARIADIC]
    variadic = {p.kind for p in signature.parameters.values() if p.kind in _VARIADIC}
    by_name = {}
    for parameter in parameters[len(positional):]:
        if parameter.name in keywords:
            by_name[parameter.name] = keywords[parameter.name]
        elif parameter.default is inspect.Parameter.empty:
            raise ExportArgumentError(
                f"{_model_name(model)}.forward's argument {parameter.name!r} has no value and no default; give it "
                f"(the arguments given: {len(positional)} positional, and {sorted(keywords)} by name)")
    extra = _unbound_keys(parameters, len(positional), keywords)
    if extra and inspect.Parameter.VAR_KEYWORD in variadic:
        by_name.update((key, keywords[key]) for key in extra)
    else:
        _warn_dropped(model, extra, parameters[:len(positional)])
    return (*positional, by_name) if by_name else _as_args(list(positional))


def bind_for_export(model: Any, args: Any) -> Any:
    """``args`` for the torch.export capture, keyword arguments ordered by ``forward``'s signature (what
    ``**kwargs`` takes last, in the caller's order). torch.export fills no defaults: a default stays a constant of the
    program, as in PyTorch's exporter."""
    return ordered_by_signature(signature_of(model), args)


def ordered_by_signature(signature: inspect.Signature | None, args: Any) -> Any:
    """``args`` with the trailing dict's keyword arguments in ``signature``'s order (what ``**kwargs`` takes last, in
    the caller's order)."""
    positional, keywords = split_args(args)
    if signature is None or not keywords:
        return args
    ordered = {name: keywords[name] for name in signature.parameters if name in keywords}
    ordered.update((key, value) for key, value in keywords.items() if key not in ordered)
    return (*positional, ordered)


def graph_input_values(args: Any, capture: Any) -> list:
    """The arguments as the captured graph's inputs take them: flattened, except that a list argument that is one
    input (a scripted list, an ONNX sequence) stays one list of tensors, whatever its length. A torch.export
    program takes the tensors alone (it specialized the numbers)."""
    return capture.front_end.graph_input_values(args, capture)


def export_input_names(model: Any, args: Any) -> list[str]:
    """The names torch.export gives the placeholders of the tensor arguments in ``args`` (bound by
    :func:`bind_for_export`), as torch.onnx's dynamo exporter names the ONNX inputs: the parameter's name and the path
    into a container, joined by ``_``, lowercased, any other character than a letter or digit as ``_`` (``past_0_1``
    for ``past[0][1]``, ``d_mask`` for ``d["mask"]``); ``input_<i>`` where the arguments do not fit ``forward``."""
    positional, keywords = split_args(args)
    signature = signature_of(model)
    try:
        combined = {**({} if signature is None else signature.bind_partial(*positional).arguments), **keywords}
    except TypeError:
        combined = None
    if combined is None or (signature is None and positional):
        count = sum(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves((positional, keywords)))
        return [f"input_{i}" for i in range(count)]
    return ["_".join(_path_part(key).lower() for key in path)
            for path, leaf in pytree.tree_flatten_with_path(combined)[0] if isinstance(leaf, torch.Tensor)]


def _path_part(key: Any) -> str:
    if isinstance(key, pytree.MappingKey):
        return re.sub(r"[^a-zA-Z0-9]", "_", str(key.key))
    if isinstance(key, pytree.SequenceKey):
        return str(key.idx)
    return str(getattr(key, "name", key))  # an attribute of a dataclass-like container


def _unbound_keys(parameters: list[inspect.Parameter], given: int, keywords: dict) -> list[str]:
    """The dict's keys that bind no parameter after the positional ones, in the caller's order."""
    taken = {p.name for p in parameters[given:]}
    return [key for key in keywords if key not in taken]


def _warn_dropped(model: Any, keys: list[str], positional: list[inspect.Parameter]) -> None:
    if not keys:
        return
    given = {p.name for p in positional}
    reasons = [f"{key!r} ({'given positionally too' if key in given else 'no such parameter'})" for key in keys]
    warnings.warn(f"{_model_name(model)}.forward binds no argument to the keyword(s) {', '.join(reasons)}: ignored, "
                  "as torch.onnx ignores them", UserWarning, stacklevel=3)


def _as_args(bound: list) -> tuple:
    """``bound`` as ``args``: a last argument that is a dict gets a trailing empty dict, so it stays positional."""
    return (*bound, {}) if bound and isinstance(bound[-1], dict) else tuple(bound)


def _model_name(model: Any) -> str:
    return type(model).__name__ if isinstance(model, torch.nn.Module) else getattr(model, "__name__", "model")
