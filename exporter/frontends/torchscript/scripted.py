"""The scripted front end: a ``ScriptModule``'s or ``ScriptFunction``'s own graph, its arguments bound as PyTorch's
exporter binds them (a Python number or a list argument stays one graph input), and list inputs split into one input
per item where ONNX has no sequences."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from exporter.errors import CaptureError, ExportArgumentError
from exporter.frontends.base import SCALARS, Capture, Captured, flatten, number_tensor
from exporter.frontends.torchscript.flat_graph import as_given, finish
from exporter.frontends.torchscript.warning_filter import quiet_torchscript


def capture_scripted(model, graph, module_c, positional, kwargs, state_dict) -> Captured:
    """A scripted model's own graph; a Python number argument stays a graph input (a 0-d tensor), as in PyTorch's
    exporter, and so does a list argument (one input: an ONNX sequence, see :func:`split_list_inputs`)."""
    _check_no_none_arguments(positional, kwargs)
    positional = _script_arguments(model, positional, kwargs)
    graph = graph.copy()
    first = 1 if module_c is not None else 0
    for index in reversed(range(min(len(positional), len(list(graph.inputs())) - first))):
        if positional[index] is None:  # a None argument is a constant of the graph, not an input
            graph.setInsertPoint(next(iter(graph.nodes()), graph.return_node()))
            list(graph.inputs())[first + index].replaceAllUsesWith(graph.insertConstant(None))
            graph.eraseInput(first + index)
    graph.setInsertPoint(graph.return_node())
    present = [argument for argument in positional if argument is not None]
    flat = _scripted_inputs(list(graph.inputs())[first:], present)
    user_inputs = list(graph.inputs())[first:]
    # One graph input per argument (tuples are lowered later); not strict: extra arguments have no graph input and a
    # trailing parameter without an argument keeps its scripted type.
    for value, tensor in zip(user_inputs, present, strict=False):
        if value.type().kind() == "TensorType" and isinstance(tensor, torch.Tensor):
            value.setType(torch._C.TensorType.create_from_tensor(tensor))
    # Captured before the example run: a forward that assigns module attributes changes them, and the export
    # starts from their values at the time of the call, as PyTorch's exporter does.
    captured = finish(graph, module_c, flat, "", state_dict)
    captured.capture = Capture.SCRIPT
    try:
        with quiet_torchscript(), torch.no_grad():
            captured.example_outputs = _scripted_example_outputs(model(*positional))
    except Exception as error:
        raise CaptureError(f"running the scripted model failed: {type(error).__name__}: {error}") from error
    return captured


def _check_no_none_arguments(positional: tuple, kwargs: dict) -> None:
    """A scripted model is exported for the types of the arguments given, and None has none to give: an
    ``Optional[Tensor]`` parameter becomes an optional input of the tensor type its example has (opset 15+), and a
    None inside a tuple leaves the tuple's element without one at any opset. PyTorch's exporter refuses any None
    argument given to a ScriptModule or ScriptFunction with this message; so does this one. A parameter that
    defaults to None and is left out is bound to its default, a constant of the graph."""
    count = _none_count((positional, kwargs))
    if count:
        raise ExportArgumentError(
            f"args contained {count} None's after flattening. When exporting a ScriptModule or ScriptFunction, no "
            "args may be None because that breaks type propagation (leave out a parameter that defaults to None, "
            "or pass a tensor)"
        )


def _none_count(obj: Any) -> int:
    """The None leaves of nested tuples, lists and dicts."""
    if obj is None:
        return 1
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (tuple, list)) else ()
    return sum(_none_count(item) for item in items)


def _scripted_inputs(inputs, positional) -> list:
    """The flat example inputs of a scripted graph: a list argument (``pad: list[int]``, ``xs: list[Tensor]``) whose
    graph input is a list stays one entry, the list of its items as tensors (numbers as 0-d tensors); the other
    arguments are flattened."""
    flat: list = []
    for value, argument in zip(inputs, positional, strict=False):  # arguments past the inputs are handled below
        if _is_list_input(value, argument):
            flat.append(as_given(flatten(list(argument), numbers_as_tensors=True)[0]))
        else:
            flat.extend(as_given(flatten(argument, numbers_as_tensors=True)[0]))
    for argument in positional[len(inputs):]:
        flat.extend(as_given(flatten(argument, numbers_as_tensors=True)[0]))
    return flat


def _is_list_input(value, argument) -> bool:
    return (value.type().kind() == "ListType" and isinstance(argument, (list, tuple))
            and not any(isinstance(item, (list, tuple, dict)) for item in argument))


def _script_arguments(model, positional: tuple, kwargs: dict) -> tuple:
    """The arguments of a scripted forward, bound as PyTorch's exporter binds them: after the positional ones, each
    parameter takes its keyword argument, else its default (None included); a parameter with neither ends the
    list."""
    # torch's stubs declare ScriptFunction.schema a method; it is a property.
    schema: torch._C.FunctionSchema = (
        model.schema if isinstance(model, torch.jit.ScriptFunction) else model.forward.schema  # type: ignore[assignment]
    )
    params = [arg for arg in schema.arguments if arg.name != "self"]
    unknown = sorted(set(kwargs) - {arg.name for arg in params})
    if unknown:
        raise ExportArgumentError(f"keyword arguments {unknown} name no parameter of the scripted model's forward")
    args = list(positional)
    for param in params[len(args):]:
        if param.name in kwargs:
            args.append(kwargs[param.name])
        elif param.has_default_value():
            args.append(param.default_value)
        else:
            break
    return tuple(args)


def split_list_inputs(captured: Captured) -> Captured:
    """The capture with each list input (a scripted ``list[int]``/``list[Tensor]`` argument, one ONNX sequence input
    from opset 11) split into one graph input per element, gathered by a ``prim::ListConstruct`` where the list was
    used: how such an argument can be an input where ONNX has no sequences (below opset 11), with the list's length
    fixed by the example. The given capture is left unchanged."""
    if not any(isinstance(entry, list) for entry in captured.user_inputs):
        return captured
    graph = captured.graph.copy()
    inputs = list(graph.inputs())
    order, emptied, added = [], [], 0
    user_inputs: list[torch.Tensor | list[torch.Tensor]] = []
    for index, value in enumerate(inputs):
        if index >= len(captured.user_inputs):  # a parameter
            order.append(index)
            continue
        entry = captured.user_inputs[index]
        if not isinstance(entry, list):
            order.append(index)
            user_inputs.append(entry)
            continue
        items = []
        for position in range(len(entry)):
            item = graph.addInput(f"{value.debugName().split('.')[0]}_{position}")
            item.setType(value.type().getElementType())
            items.append(item)
        node = graph.create("prim::ListConstruct", items, 1)
        node.output().setType(value.type())
        graph.prependNode(node)
        value.replaceAllUsesWith(node.output())
        order.extend(range(len(inputs) + added, len(inputs) + added + len(items)))
        added += len(items)
        emptied.append(index)
        user_inputs.extend(entry)
    # Parameters stay after the user inputs; the emptied list inputs go last, then are removed.
    user_count = len(user_inputs)
    params = [i for i in order if i >= len(captured.user_inputs) and i < len(inputs)]
    users = [i for i in order if i not in params]
    graph.permuteInputs(users + params + emptied)
    for position in reversed(range(len(order), len(order) + len(emptied))):
        graph.eraseInput(position)
    assert len(list(graph.inputs())) == user_count + len(params)
    return dataclasses.replace(captured, graph=graph, user_inputs=user_inputs)


def _scripted_example_outputs(result: Any) -> list:
    """The example results, one per output of the scripted graph once its tuples are lowered: a number becomes a
    0-d tensor output and a list of tensors one output (an ONNX sequence), as PyTorch's exporter exports them."""
    if isinstance(result, tuple):
        return [item for part in result for item in _scripted_example_outputs(part)]
    return [number_tensor(result) if isinstance(result, SCALARS) else result]
