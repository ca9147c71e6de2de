"""The graph's boundary: the names of its inputs and outputs, and the ONNX values they become.

PyTorch's TorchScript exporter names the inputs after the flat arguments then every parameter and buffer in
state_dict order, lays a quantized tensor out as three values (integers, scale, zero point), and drops the arguments
nothing reads; this module does the same around the converter's graph.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from exporter import binding, dtypes, ir, passes
from exporter.errors import ExportArgumentError, SymbolicValueError
from exporter.frontends.base import Captured, flatten, split_args
from exporter.graph_context import ExportSession, GraphContext
from exporter.lowering import qdq


def input_names(model: Any, args: Any, captured: Captured, given: Sequence[str] | None) -> list[str]:
    """Names of the model's inputs then of its used parameters. As in PyTorch's exporter, ``given`` names the
    inputs and then every parameter and buffer in state_dict order, used or not. The inputs' own names: torch.export's
    for its program (its placeholders', as PyTorch's torch.export-based ONNX exporter names them), else after
    ``forward``'s parameters."""
    user = captured.front_end.user_input_names(model, args, captured)
    state_names = captured.state_names or [name for name, _ in captured.params]
    names = user + state_names
    _apply_names(names, given, "input", "inputs, parameters and buffers")
    _rename_unnamed_clashes(names, len(given or []), len(user))
    renamed = dict(zip(state_names, names[len(user):], strict=True))
    names = names[: len(user)] + [renamed.get(name, name) for name, _ in captured.params]
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise ExportArgumentError(f"input names must be unique; repeated: {duplicates}")
    return names


def _rename_unnamed_clashes(names: list[str], named: int, user_count: int) -> None:
    """An input the caller left unnamed whose default name the caller gave another input (``input_names=["y"]`` for
    a model whose first argument is ``x`` and second ``y``) takes a suffix: the caller's names stand, as in
    PyTorch's exporter, whose unnamed inputs have debug names no caller gives."""
    for index in range(named, user_count):
        name, suffix = names[index], 1
        while names[index] in names[:index] + names[index + 1:]:
            names[index] = f"{name}_{suffix}"
            suffix += 1


def output_names(captured: Captured, given: Sequence[str] | None) -> list[str]:
    """Names of the graph outputs: ``given`` over the defaults ``output`` (one) or ``output_0``, ``output_1``, ..."""
    count = captured.output_count
    # A quantized output is three ONNX outputs (integers, scale, zero point).
    count += sum(len(qdq.boundary_examples(t)) - 1 for t in captured.example_outputs or [])
    names = [f"output_{i}" if count > 1 else "output" for i in range(count)]
    _apply_names(names, given, "output", "outputs")
    return names


def refuse_shared_names(names_in: list[str], names_out: list[str]) -> None:
    """An ONNX graph's values have one name each: an output named like an input would be written under another name
    than the one asked for, so it is refused."""
    shared = sorted(set(names_in) & set(names_out))
    if shared:
        raise ExportArgumentError(f"input and output names must differ; both name {shared}")


def refuse_complex_boundary(captured: Captured, names_in: list[str], names_out: list[str]) -> None:
    """ONNX declares complex element types, but its operators do not compute on them and ONNX Runtime loads no model
    that holds one: a complex input (an :class:`ExportArgumentError`) or output (a value ONNX cannot express: a
    :class:`SymbolicValueError`, as PyTorch's exporter raises) is refused rather than written into a model no one
    runs."""
    # Not strict: the parameters' names follow the inputs' in names_in; a capture may record no example outputs.
    examples: list[tuple[str, Any, type[Exception]]] = [
        (f"input {n!r}", t, ExportArgumentError) for n, t in zip(names_in, captured.user_inputs, strict=False)]
    examples += [(f"output {n!r}", t, SymbolicValueError)
                 for n, t in zip(names_out, output_examples(captured), strict=False)]
    for what, tensor, error in examples:
        if isinstance(tensor, torch.Tensor) and tensor.is_complex():
            raise error(
                f"{what} is a {tensor.dtype} tensor: ONNX operators do not compute on complex numbers and ONNX Runtime "
                "cannot load complex tensors; pass torch.view_as_real() of it (a trailing axis of 2) and rebuild it "
                "inside the model with torch.view_as_complex()"
            )


def output_examples(captured: Captured) -> list[Any]:
    """The example outputs as the graph outputs they become, one per ONNX output."""
    return [e for example in captured.example_outputs or [] for e in qdq.boundary_examples(example)]


def default_user_input_names(model: Any, args: Any, user_inputs: list) -> list[str]:
    """Names from ``forward``'s signature when each argument is one tensor or number (or a list that is one input, an
    ONNX sequence), a container's items numbered after it (``past_0``, ``past_1``), what ``**kwargs`` takes by its
    keys; else input_0, input_1, ..."""
    count = len(user_inputs)
    positional, kwargs = split_args(args)
    signature = binding.signature_of(model)
    try:
        bound = None if signature is None else signature.bind(*positional, **kwargs)
    except TypeError:
        bound = None
    if signature is None or bound is None:
        return [f"input_{i}" for i in range(count)]
    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        bound.apply_defaults()  # a scripted model's defaults are inputs too, bound by its schema
    names: list[str] = []
    for name, value in _named_arguments(signature, bound):
        if isinstance(value, (torch.Tensor, bool, int, float)) or (
                isinstance(value, (tuple, list)) and len(names) < count and isinstance(user_inputs[len(names)], list)):
            names.append(name)
        elif isinstance(value, (tuple, list, dict)):
            leaves, _ = flatten(value, numbers_as_tensors=True)
            names.extend(f"{name}_{k}" for k in range(len(leaves)))
    if len(names) != count or len(set(names)) != count:
        return [f"input_{i}" for i in range(count)]
    return names


def _named_arguments(signature: inspect.Signature, bound: inspect.BoundArguments):
    """The bound arguments by name, what ``**kwargs`` takes each by its key."""
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind == inspect.Parameter.VAR_KEYWORD:
            yield from value.items()
        else:
            yield name, value


def _apply_names(names: list[str], given: Sequence[str] | None, kind: str, what: str) -> None:
    """Put the caller's names over the first defaults; more names than values is an error (as in PyTorch's exporter)."""
    given = list(given or [])
    if len(given) > len(names):
        raise ExportArgumentError(
            f"{len(given)} {kind} names given for {len(names)} {what}: {given[len(names):]} name nothing"
        )
    names[: len(given)] = given


def graph_inputs(captured: Captured, names: list[str], axes: dict, export_params: bool):
    """The values the converter starts from: the model's inputs (a quantized one as a :class:`qdq.QTensor`)
    with their ``axes`` named, then the parameters, holding their data when ``export_params``."""
    user_count = len(captured.user_inputs)
    inputs: list[ir.Value | qdq.QTensor] = []
    for name, tensor in zip(names[:user_count], captured.user_inputs, strict=True):
        tensor = dtypes.real_view(tensor)  # a complex input of a torch.export capture (a TorchScript one is refused)
        if isinstance(tensor, list):
            number_type = captured.front_end.list_input_number_type(captured, len(inputs))
            inputs.append(_sequence_input(name, tensor, number_type, axes))
            continue
        shape = list(tensor.shape)
        for axis, dim_name in axes.get(name, {}).items():
            if not -len(shape) <= axis < len(shape):
                raise ExportArgumentError(f"dynamic_axes[{name!r}] names axis {axis}, but the input has rank {len(shape)}")
            shape[axis] = dim_name
        if tensor.is_quantized:
            inputs.append(qdq.input_qtensor(name, tensor, tuple(shape)))
        else:
            inputs.append(ir.Value(name, dtypes.onnx_from_torch(tensor.dtype), tuple(shape)))
    params = []
    for name, (_, tensor) in zip(names[user_count:], captured.params, strict=True):
        tensor = dtypes.real_view(tensor)
        array = dtypes.tensor_to_numpy(tensor.detach().cpu())
        value = ir.Value(name, dtypes.onnx_from_torch(tensor.dtype), dtypes.onnx_shape(tensor), is_param=True)
        value.const = array if export_params else None
        params.append(value)
    return inputs, params


def _sequence_input(name: str, items: list[torch.Tensor], number_type: torch.dtype | None, axes: dict) -> ir.Value:
    """A list input: an ONNX sequence of its items' element type (a list of numbers: int64, double or bool, as
    PyTorch's exporter feeds them; ``number_type``, where the list holds numbers). Its items may have any shape and
    the list any length at run time."""
    if name in axes:
        raise ExportArgumentError(f"dynamic_axes[{name!r}] names axes of a list input, an ONNX sequence: its items "
                                  "have no fixed shape to make dynamic")
    types = {t.dtype for t in items} or {number_type or torch.get_default_dtype()}
    if len(types) > 1:
        raise ExportArgumentError(f"the list input {name!r} holds tensors of several element types "
                                  f"({sorted(str(t) for t in types)}); an ONNX sequence holds one")
    ranks = {t.dim() for t in items}
    value = ir.Value(name, dtypes.onnx_from_torch(types.pop()), None, kind=ir.SEQUENCE)
    # Items of a list[int]/float/bool are numbers (0-d); the rank of tensor items is taken from the example where
    # they agree, their sizes are left free.
    value.elem_shape = () if number_type is not None else (
        (None,) * ranks.pop() if len(ranks) == 1 else None)
    return value


def lay_out_inputs(
    graph: ir.Graph, inputs: list[Any], params: list[ir.Value], names: list[str], export_params: bool
) -> list[str]:
    """Make ``inputs`` (a quantized one as three values) and ``params`` the graph's inputs and initializers; without
    ``export_params`` the parameters are plain inputs. The names of the graph's inputs, parameters last."""
    values = [v for value in inputs for v in qdq.boundary_values(value)]
    graph.inputs = values if export_params else values + params
    graph.initializers = params if export_params else []
    return [v.name for v in values] + names[len(inputs):]


def name_outputs(graph: ir.Graph, names: list[str], session: ExportSession) -> None:
    """Give outputs their names; an output that is an input, a parameter or a repeated value gets an Identity."""
    g = GraphContext(session, graph)  # the export's own session: node names stay unique
    seen: set[int] = set()
    protected = {id(v) for v in graph.inputs} | {id(v) for v in graph.initializers}
    renamed = []
    for value, name in zip(graph.outputs, names, strict=True):
        if id(value) in seen or id(value) in protected or value.producer is None:
            copy = g.op("Identity", value)
            copy.dtype, copy.shape, copy.kind = value.dtype, value.shape, value.kind
            value = copy
        seen.add(id(value))
        value.name = name
        renamed.append(value)
    graph.outputs = renamed


def drop_unused_inputs(graph: ir.Graph, names: list[str], param_count: int, opset: int,
                       read_at_run_time: Callable[[ir.Value, int], bool]) -> list[str]:
    """Remove the model's own inputs that no node reads, as PyTorch's exporter does, except those it keeps reading at
    run time even where this converter folded the read (``read_at_run_time``, the capture's front end's), so callers
    feed the inputs they would feed its model. The names of the inputs left, the ``param_count`` parameters last."""
    user_count = len(names) - param_count
    used = passes.used_values(graph)
    unused = {id(v) for v in graph.inputs[:user_count]
              if id(v) not in used and not v.read_by_folded_op
              and not read_at_run_time(v, opset)}
    graph.inputs = [v for v in graph.inputs if id(v) not in unused]
    return [v.name for v in graph.inputs[:user_count - len(unused)]] + names[user_count:]
