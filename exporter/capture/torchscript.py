"""The TorchScript front end: turn a model and its example arguments into a TorchScript graph ready for conversion.

``nn.Module``s are traced; ``ScriptModule``s and ``ScriptFunction``s contribute their own graph. Scripted
functions called inside a traced module stay scripted (their control flow survives inlining). The result
is one flat graph: inputs are the flattened arguments (Python numbers as 0-d tensors, as PyTorch's exporter makes them)
followed by the parameters and buffers it reads (named after their ``state_dict`` keys), outputs are the
flattened results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import warnings
from collections.abc import Iterator
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

import exporter.capture.module_state as module_state
import exporter.capture.mutation as mutation
import exporter.capture.script_passes as script_passes
from exporter.capture.common import SCALARS, SCRIPT, Capture, flatten, flatten_outputs, number_tensor, split_args
from exporter.errors import CaptureError, ExportArgumentError

_WRAPPER_PREFIX = "model."


class _FlatCall(torch.nn.Module):
    """Calls ``model`` with its structured arguments rebuilt from flat tensors, and flattens the result."""

    def __init__(self, model: torch.nn.Module, rebuild: Callable):
        super().__init__()
        self.model = model
        self._rebuild = rebuild
        self.last_outputs: tuple = ()

    def forward(self, *flat):
        args, kwargs = self._rebuild(list(flat))
        # Kept so the trace's own run provides the example outputs (no second forward pass).
        self.last_outputs = tuple(flatten_outputs(self.model(*args, **kwargs)))
        return self.last_outputs


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_JIT_DIR = os.path.join(_TORCH_DIR, "jit") + os.sep


@contextlib.contextmanager
def quiet_torchscript(tracer_warnings: list[str] | None = None):
    """Show the model's warnings, hide TorchScript's own noise.

    Shown, once each with the source line that raised it: every TracerWarning raised by the model's code or a
    library outside torch (a value the trace froze, such as a data-dependent branch: the classic source of silently
    wrong models) and every other warning raised from code outside torch. Hidden, as PyTorch's own filters hide them:
    TracerWarnings from torch's library code (its ``nn`` shape checks all raise them), and deprecation, future and
    user warnings raised inside torch (its tracer and scripting machinery warn about their own deprecation on every
    export). A warning an earlier export in this process showed is not shown again unless the caller's filters say
    ``always``. TracerWarnings are also collected in ``tracer_warnings``, all of them.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    shown: set[tuple] = set()
    for warning in caught:
        is_tracer = issubclass(warning.category, torch.jit.TracerWarning)
        if is_tracer and tracer_warnings is not None:
            tracer_warnings.append(str(warning.message))
        key = (str(warning.message), warning.category, warning.filename, warning.lineno)
        if key in shown or not _is_shown(warning, is_tracer):
            continue
        shown.add(key)
        if _caller_action(warning) != "always":
            if key in _SHOWN_BY_EARLIER_EXPORTS:
                continue
            _SHOWN_BY_EARLIER_EXPORTS.add(key)
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


# What Python's default action ("once per source line") would have kept, were the registries it keeps not reset by
# every ``catch_warnings`` block, each export's included.
_SHOWN_BY_EARLIER_EXPORTS: set[tuple] = set()


def _is_shown(warning: warnings.WarningMessage, is_tracer: bool) -> bool:
    if _from_outside_torch(warning):
        return True
    if is_tracer:  # torch.jit's own TracerWarnings (a trace check's) stay, as in PyTorch's filter
        return os.path.abspath(warning.filename).startswith(_TORCH_JIT_DIR)
    return not _is_noise(warning.category)


def _caller_action(warning: warnings.WarningMessage) -> str:
    """The action the caller's warning filters take on ``warning`` (the first filter that matches it decides)."""
    text, module = str(warning.message), os.path.splitext(warning.filename)[0]
    for action, message, category, module_pattern, lineno in warnings.filters:
        if ((message is None or message.match(text)) and issubclass(warning.category, category)
                and (module_pattern is None or module_pattern.match(module))
                and lineno in (0, warning.lineno)):
            return action
    return warnings.defaultaction


def _from_outside_torch(warning: warnings.WarningMessage) -> bool:
    return not os.path.abspath(warning.filename).startswith(_TORCH_DIR)


def _is_noise(category: type[Warning]) -> bool:
    return issubclass(category, (DeprecationWarning, FutureWarning, UserWarning))


def capture(model: Any, args: Any) -> Capture:
    """Capture ``model`` called with ``args`` as a flat TorchScript graph (see module docstring). The model's buffers
    and tensor attributes, and the tensors of ``args``, are left as they were, whatever its run changed in place (see
    :class:`_StateKept`)."""
    kept = _StateKept([*_buffers_and_tensor_attributes(model), *flatten(args)[0]])
    try:
        captured = _capture(model, args)
        captured.example_outputs = kept.outputs_apart(captured.example_outputs)
    finally:
        kept.restore()
    captured.graph_passes_seconds += kept.seconds  # our work, not PyTorch's capture
    return captured


class _StateKept:
    """A model's buffers and plain tensor attributes, and the caller's arguments, kept as they were before the capture
    runs the model, and written back after it.

    A forward that changes its state in place (a running statistic, a counter, a table it writes into) has changed it
    once by the end of the trace. The export, which computes one call from the model's state, would start from the
    changed values (its graph applies the change again: silently wrong numbers, as PyTorch's exporter gives), and the
    caller's model, or the arguments the forward writes into (``x.add_(1)``), would be left changed by exporting.
    Parameters are not copied: a forward seldom writes them, and they are most of a model's bytes. Changes are found
    by value: a kernel's own writes (batch norm's running statistics) move no version counter."""

    def __init__(self, tensors: list[torch.Tensor]):
        began = time.perf_counter()
        tensors = {id(t): t for t in tensors}.values()
        self._kept = [(tensor, tensor.detach().clone()) for tensor in tensors
                      if not tensor.is_inference()]  # writable only in inference mode, not the capture's
        self.seconds = time.perf_counter() - began

    def outputs_apart(self, outputs: list[Any] | None) -> list[Any] | None:
        """``outputs``, each that shares memory with a changed tensor (``return self.count``) copied first: the
        example outputs are the run's results, not the values written back."""
        began = time.perf_counter()
        self._kept = [(tensor, copy) for tensor, copy in self._kept if not _same_values(tensor, copy)]
        storages = {tensor.untyped_storage().data_ptr() for tensor, _ in self._kept}
        if storages and outputs:
            outputs = [output.clone() if isinstance(output, torch.Tensor)
                       and output.untyped_storage().data_ptr() in storages else output for output in outputs]
        self.seconds += time.perf_counter() - began
        return outputs

    def restore(self) -> None:
        """Write back the tensors the run changed (all kept ones when the run failed before :meth:`outputs_apart`)."""
        began = time.perf_counter()
        with torch.no_grad():
            for tensor, copy in self._kept:
                if tensor.shape == copy.shape:
                    tensor.copy_(copy)
                else:  # resized in place (``x.set_(y)``, ``resize_``): it takes the copy's shape and values back
                    tensor.set_(copy)
        self.seconds += time.perf_counter() - began


def _same_values(tensor: torch.Tensor, copy: torch.Tensor) -> bool:
    """Whether ``tensor`` still holds ``copy``'s values (one holding a NaN counts as changed: writing the copy back
    changes nothing)."""
    try:
        return torch.equal(tensor, copy)
    except (RuntimeError, TypeError):  # a kind of tensor torch.equal does not compare (quantized): left as it is
        return True


def _buffers_and_tensor_attributes(model: Any) -> Iterator[torch.Tensor]:
    """The buffers and the tensors held as plain attributes of ``model`` and its submodules (a scripted module names
    its attributes in its concrete type; one loaded from a file, only its buffers)."""
    if not isinstance(model, torch.nn.Module):
        return
    for module in model.modules():
        if isinstance(module, torch.jit.RecursiveScriptModule) and hasattr(module, "_concrete_type"):
            values = [getattr(module, name) for name, (_, is_parameter)
                      in module._concrete_type.get_attributes().items() if not is_parameter]
        else:
            values = [*module._buffers.values(), *vars(module).values()]
        yield from (value for value in values
                    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter))


def _capture(model: Any, args: Any) -> Capture:
    positional, kwargs = split_args(args)
    if isinstance(model, torch.jit.ScriptFunction):
        return _capture_scripted(model, model.graph, None, positional, kwargs, state_dict={})
    if isinstance(model, torch.jit.ScriptModule):
        return _capture_scripted(model, model.forward.graph, model._c, positional, kwargs, _state_dict(model))
    if isinstance(model, torch.nn.Module):
        if any(isinstance(sub, torch.jit.ScriptModule) or _holds_script_object(sub) for sub in model.modules()):
            return _capture_traced(model, positional, kwargs)
        return _capture_traced_graph(model, positional, kwargs)
    raise ExportArgumentError(
        f"model must be a torch.nn.Module, torch.jit.ScriptModule or torch.jit.ScriptFunction, got {type(model).__name__}"
    )


def _holds_script_object(module: torch.nn.Module) -> bool:
    """Whether the module holds a TorchScript object, such as the packed weights of a quantized convolution: only
    ``torch.jit.trace``, which mirrors the module, can trace a call that takes one."""
    return any(isinstance(value, torch.ScriptObject) for value in vars(module).values())


def _state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return dict(model.state_dict(keep_vars=True))


def _capture_traced(model: torch.nn.Module, positional: tuple, kwargs: dict) -> Capture:
    flat, rebuild = flatten((positional, kwargs), numbers_as_tensors=True)
    given = _as_given(flat)
    wrapper = _FlatCall(model, rebuild)
    tracer_warnings: list[str] = []
    try:
        with quiet_torchscript(tracer_warnings), torch.no_grad():
            traced = torch.jit.trace(wrapper, tuple(flat), strict=False, check_trace=False)
        if _made_tensors_from_data(tracer_warnings) and _changes_a_constant_in_place(traced.inlined_graph):
            with _retracing(), torch.no_grad():
                traced = torch.jit.trace(wrapper, tuple(_as_given(given)), strict=False, check_trace=False)
        outputs = [t.detach() for t in wrapper.last_outputs]
    except ExportArgumentError:
        raise
    except Exception as error:
        raise CaptureError(f"tracing {type(model).__name__} failed: {type(error).__name__}: {error}") from error
    graph = traced.graph.copy()
    captured = _finish(graph, traced._c, given, _WRAPPER_PREFIX, _state_dict(model), traced=True)
    captured.example_outputs = outputs
    captured.tracer_warnings = tracer_warnings
    return captured


def _capture_traced_graph(model: torch.nn.Module, positional: tuple, kwargs: dict) -> Capture:
    """Trace straight to a graph whose inputs are the flat arguments followed by the parameters and buffers.

    Several times faster than ``torch.jit.trace``, which first builds a ScriptModule mirroring every submodule;
    that mirror is only needed when the model holds scripted submodules (the tracer calls them as methods).
    """
    flat, rebuild = flatten((positional, kwargs), numbers_as_tensors=True)
    given = _as_given(flat)
    wrapper = _FlatCall(model, rebuild)
    state: dict[torch.Tensor, str] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        state.setdefault(tensor, name)  # a tied tensor takes its first state_dict name
    tracer_warnings: list[str] = []
    try:
        with quiet_torchscript(tracer_warnings), torch.no_grad(), _module_scopes(wrapper):
            graph = _trace_graph(wrapper, flat, list(state))
        if _made_tensors_from_data(tracer_warnings) and _changes_a_constant_in_place(graph):
            with _retracing(), torch.no_grad(), _module_scopes(wrapper):
                graph = _trace_graph(wrapper, _as_given(given), list(state))
    except ExportArgumentError:
        raise
    except Exception as error:
        raise CaptureError(f"tracing {type(model).__name__} failed: {type(error).__name__}: {error}") from error
    captured = _finish(graph, None, given, "", {}, traced=True)
    began = time.perf_counter()
    captured.params = _prune_state_inputs(graph, len(flat), list(state.items()))
    captured.graph_passes_seconds += time.perf_counter() - began
    captured.state_names = list(state.values())
    captured.example_outputs = [t.detach() for t in wrapper.last_outputs]
    captured.tracer_warnings = tracer_warnings
    return captured


def _trace_graph(wrapper: torch.nn.Module, flat: list[torch.Tensor], state: list[torch.Tensor]):
    graph, _ = torch._C._create_graph_by_tracing(
        lambda *tensors: wrapper(*tensors[: len(flat)]), flat + state, lambda _: "", False, False
    )
    return graph


# -- tensors made from Python data and changed in place ---------------------------------------------------------
# The tracer records a tensor the model makes from Python data (``torch.tensor(...)``) as a constant, by reference.
# If the model then changes it in place (``mask = torch.tensor(...); mask[i] = v``), the traced run changes the
# recorded constant too, and the graph would change it again: a silently wrong export (PyTorch's exporter's, for
# such models). Such a trace is made again, from the arguments as given, with those tensors handed to the model as
# copies of themselves, so that the constant keeps the values it was made with (the model runs twice then).
def _made_tensors_from_data(tracer_warnings: list[str]) -> bool:
    """Whether the model made tensors from Python data while traced: the tracer warns of each such call (tests pin
    the wording), which spares most traces the walk below."""
    return any("results are registered as constants" in warning for warning in tracer_warnings)


def _changes_a_constant_in_place(graph) -> bool:
    """Whether an in-place op may write a tensor constant of ``graph``: its first input is the constant or the
    result of a chain of ops from it (any op's result counts as a possible view of its first input, so no view op
    is missed; no zoo model's trace has such a chain). Only the constants' uses are walked, not the graph."""
    pending = [node.output() for node in graph.findAllNodes("prim::Constant", True)
               if node.output().type().kind() == "TensorType"]
    seen: set[int] = set()
    while pending:
        value = pending.pop()
        if value.unique() in seen:
            continue
        seen.add(value.unique())
        for use in value.uses():
            if use.offset != 0:
                continue
            if mutation.is_in_place(use.user.kind()):
                return True
            pending.extend(use.user.outputs())
    return False


@contextlib.contextmanager
def _retracing():
    """The second trace's conditions: tensors from Python data made fresh, and its warnings dropped (the first
    trace raised the same ones, at the model's own lines; here they would point at the mode's frame)."""
    with warnings.catch_warnings(record=True), _FreshTensorsFromData():
        warnings.simplefilter("always")
        yield


class _FreshTensorsFromData(TorchFunctionMode):
    """Hands the model a copy of each tensor it makes from Python data (``torch.tensor``, ``torch.as_tensor`` of a
    list or number): the tracer records the original as the constant and the copy as a clone of it. A mode sees
    every op of the run (about 10 ms more for a mid-sized model), so only a trace that needs it is made with it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func is torch.tensor or (func is torch.as_tensor and args and _is_python_data(args[0])):
            return result.clone()
        return result


def _is_python_data(data: Any) -> bool:
    """Numbers and (nested) lists of them: ``torch.as_tensor`` copies these (a tensor or an array it may share)."""
    return isinstance(data, (bool, int, float, complex, list, tuple))


# The frame of _FreshTensorsFromData, which a retraced node's source location starts with.
MODE_FRAME = f"{__file__}("


@contextlib.contextmanager
def _module_scopes(wrapper: torch.nn.Module):
    """Record module scopes as ``torch.jit.trace`` names them (``__module.model.layer1``): local functions use them."""
    names: dict[Any, str] = {}
    for path, module in wrapper.named_modules(prefix="__module"):
        names.setdefault(module, path)
    saved = torch.jit._trace._trace_module_map
    torch.jit._trace._trace_module_map = names
    try:
        yield
    finally:
        torch.jit._trace._trace_module_map = saved


def _prune_state_inputs(graph, user_count: int, state: list[tuple[torch.Tensor, str]]) -> list[tuple[str, torch.Tensor]]:
    """Drop the parameter/buffer inputs the trace never read (``graph`` is free of dead code: :func:`_finish` ends
    with dead code elimination); the rest keep state_dict order and names."""
    inputs = list(graph.inputs())
    params = []
    for index in reversed(range(user_count, len(inputs))):
        if inputs[index].uses():
            tensor, name = state[index - user_count]
            params.append((name, tensor.detach()))
        else:
            graph.eraseInput(index)
    return params[::-1]


def _capture_scripted(model, graph, module_c, positional, kwargs, state_dict) -> Capture:
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
    for value, tensor in zip(user_inputs, present):  # one graph input per argument (tuples are lowered later)
        if value.type().kind() == "TensorType" and isinstance(tensor, torch.Tensor):
            value.setType(torch._C.TensorType.create_from_tensor(tensor))
    # Captured before the example run: a forward that assigns module attributes changes them, and the export
    # starts from their values at the time of the call, as PyTorch's exporter does.
    captured = _finish(graph, module_c, flat, "", state_dict)
    captured.front_end = SCRIPT
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
    for value, argument in zip(inputs, positional):
        if _is_list_input(value, argument):
            flat.append(_as_given(flatten(list(argument), numbers_as_tensors=True)[0]))
        else:
            flat.extend(_as_given(flatten(argument, numbers_as_tensors=True)[0]))
    for argument in positional[len(inputs):]:
        flat.extend(_as_given(flatten(argument, numbers_as_tensors=True)[0]))
    return flat


def _is_list_input(value, argument) -> bool:
    return (value.type().kind() == "ListType" and isinstance(argument, (list, tuple))
            and not any(isinstance(item, (list, tuple, dict)) for item in argument))


def _script_arguments(model, positional: tuple, kwargs: dict) -> tuple:
    """The arguments of a scripted forward, bound as PyTorch's exporter binds them: after the positional ones, each
    parameter takes its keyword argument, else its default (None included); a parameter with neither ends the
    list."""
    schema = model.schema if isinstance(model, torch.jit.ScriptFunction) else model.forward.schema
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


def split_list_inputs(captured: Capture) -> Capture:
    """The capture with each list input (a scripted ``list[int]``/``list[Tensor]`` argument, one ONNX sequence input
    from opset 11) split into one graph input per element, gathered by a ``prim::ListConstruct`` where the list was
    used: how such an argument can be an input where ONNX has no sequences (below opset 11), with the list's length
    fixed by the example. The given capture is left unchanged."""
    if not any(isinstance(entry, list) for entry in captured.user_inputs):
        return captured
    graph = captured.graph.copy()
    inputs = list(graph.inputs())
    order, emptied, added, user_inputs = [], [], 0, []
    for index, value in enumerate(inputs):
        entry = captured.user_inputs[index] if index < len(captured.user_inputs) else None
        if not isinstance(entry, list):
            order.append(index)
            if index < len(captured.user_inputs):
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


def _as_given(flat: list[torch.Tensor]) -> list[torch.Tensor]:
    """Copies of the flat arguments as the caller gave them: the model's run may change them in place (``set_``,
    ``resize_``), and the graph's inputs must have the shapes and types the caller passes."""
    return [tensor.detach().clone() for tensor in flat]


def _finish(graph, module_c, flat, prefix, state_dict, outputs=None, traced: bool = False) -> Capture:
    """The capture of ``graph``, flattened and cleaned up for conversion (``traced``: a trace, not a scripted
    graph)."""
    began = time.perf_counter()
    scripted_code = not traced or _calls_scripted_code(graph)
    torch._C._jit_pass_inline(graph)
    if module_c is not None:
        module_state.thread_assigned_attributes(graph)
    params = _lift_attributes(graph, module_c, prefix, state_dict) if module_c is not None else []
    if scripted_code:
        script_passes.erase_exception_branches(graph)
    if scripted_code and (not traced or _tests_none_or_passes_tuples(graph)):
        # ``x is None`` on a value whose type cannot be None is False, and a cast to a type the value already has is
        # the value: scripted library modules (nn.LSTM's optional state tuple) need both before tuples can be
        # lowered. Shape peepholes stay off: they would freeze sizes that dynamic axes leave free. A pure trace has
        # none of these forms (the converter folds its constant nodes itself), nor do most traces that call scripted
        # library code (torchvision's detection ops), and these two passes cost more than converting what they
        # fold: they are skipped there.
        torch._C._jit_pass_peephole(graph, True)
        torch._C._jit_pass_constant_propagation(graph)
    torch._C._jit_pass_lower_all_tuples(graph)
    mutation.functionalize(graph)  # ends with dead code elimination
    state_names = list({id(tensor): name for name, tensor in reversed(state_dict.items())}.values())[::-1]
    return Capture(graph=graph, user_inputs=list(flat), params=params, example_outputs=outputs,
                   state_names=state_names, graph_passes_seconds=time.perf_counter() - began)


def _calls_scripted_code(graph) -> bool:
    """Whether a trace called scripted code (a scripted function or module: its control flow, None checks and casts
    stay as they were compiled). The tracer itself records only the ops that ran."""
    return any(graph.findAllNodes(kind, True) for kind in ("prim::CallFunction", "prim::CallMethod"))


def _tests_none_or_passes_tuples(graph) -> bool:
    """Whether ``graph`` tests for None, casts a value to a refined type, or has a branch or loop whose results hold
    tuples or optionals: the forms the peephole and constant propagation passes resolve (tuples are lowered only
    where no control flow carries them)."""
    if any(graph.findAllNodes(kind, True) for kind in ("aten::__is__", "aten::__isnot__", "prim::unchecked_cast")):
        return True
    return any(output.type().kind() in ("TupleType", "OptionalType")
               for kind in ("prim::If", "prim::Loop") for node in graph.findAllNodes(kind, True)
               for output in node.outputs())


def _lift_attributes(graph, module_c, prefix: str, state_dict: dict[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    """Replace ``prim::GetAttr`` chains rooted at ``self`` by graph inputs (tensors) or constants (the rest)."""
    self_value = next(iter(graph.inputs()))
    objects: dict[Any, tuple[Any, str]] = {self_value.unique(): (module_c, "")}
    lifted: dict[int, Any] = {}  # TensorImpl address -> graph input
    lifted_params: list[tuple[str, torch.Tensor, Any]] = []
    state_names = {}
    for state_name, tensor in reversed(state_dict.items()):
        if isinstance(tensor, torch.Tensor):  # a quantized module's state also holds packed-parameter tuples
            state_names[tensor._cdata] = prefix + state_name

    def lift(attr: torch.Tensor, attr_path: str):
        """The graph input holding ``attr`` (one per distinct tensor), named after ``attr_path``."""
        key = attr._cdata
        if key not in lifted:
            param_name = attr_path[len(prefix):] if attr_path.startswith(prefix) else attr_path
            graph_input = graph.addInput(param_name.replace(".", "_"))
            graph_input.setType(torch._C.TensorType.create_from_tensor(attr))
            lifted[key] = graph_input
            lifted_params.append((param_name, attr.detach(), graph_input))
        return lifted[key]

    for node in graph.findAllNodes("prim::GetAttr", True):
        owner = node.input()
        if owner.unique() not in objects:
            raise CaptureError(f"unsupported attribute access {node.s('name')!r}: its owner is not a module")
        obj, path = objects[owner.unique()]
        name = node.s("name")
        attr = obj.getattr(name) if hasattr(obj, "getattr") else getattr(obj, name)
        attr_path = f"{path}.{name}" if path else name
        output = node.output()
        if isinstance(attr, torch.Tensor):
            output.replaceAllUsesWith(lift(attr, attr_path))
        elif _is_tensor_list(attr):
            # A list of tensors (nn.LSTM's ``_flat_weights``): a list of the lifted tensors, each named after its
            # state_dict key where it has one.
            graph.setInsertPoint(node)
            items = [lift(item, state_names.get(item._cdata, f"{attr_path}.{index}"))
                     for index, item in enumerate(attr)]
            items_node = graph.insertNode(graph.create("prim::ListConstruct", items, 1))
            items_node.output().setType(torch._C.ListType.ofTensors())
            output.replaceAllUsesWith(items_node.output())
        elif _is_constant_like(attr):
            graph.setInsertPoint(node)
            output.replaceAllUsesWith(graph.insertConstant(attr))
        else:
            objects[output.unique()] = (attr, attr_path)
    graph.setInsertPoint(graph.return_node())
    torch._C._jit_pass_dce(graph)
    if not self_value.uses():
        graph.eraseInput(0)
    else:
        raise CaptureError("the model passes `self` to an operation that cannot be exported")
    order = {name: index for index, name in enumerate(state_dict)}
    lifted_params.sort(key=lambda item: order.get(item[0], len(order)))
    _reorder_inputs(graph, [item[2] for item in lifted_params])
    return [(name, tensor) for name, tensor, _ in lifted_params]


def _reorder_inputs(graph, param_inputs) -> None:
    """Put the lifted parameter inputs last, in ``param_inputs`` order (TorchScript appends them in use order)."""
    count = len(param_inputs)
    if count == 0:
        return
    current = list(graph.inputs())[-count:]
    if [v.unique() for v in current] == [v.unique() for v in param_inputs]:
        return
    replacements = []
    for value in param_inputs:
        fresh = graph.addInput(value.debugName())
        fresh.setType(value.type())
        value.replaceAllUsesWith(fresh)
        replacements.append(fresh)
    for index in reversed(range(len(list(graph.inputs())) - 2 * count, len(list(graph.inputs())) - count)):
        graph.eraseInput(index)


def _is_tensor_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, torch.Tensor) for v in value)


def _is_constant_like(value: Any) -> bool:
    if isinstance(value, torch.ScriptObject):
        # A TorchScript object (packed quantized weights) is a constant the symbolics unpack; a module is not.
        return not isinstance(value, torch._C.ScriptModule)
    if value is None or isinstance(value, (bool, int, float, str, torch.device, torch.dtype)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_constant_like(v) for v in value)
    return False
