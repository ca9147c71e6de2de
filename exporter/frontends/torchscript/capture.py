"""The TorchScript front end: turn a model and its example arguments into a TorchScript graph ready for conversion.

``nn.Module``s are traced; ``ScriptModule``s and ``ScriptFunction``s contribute their own graph. Scripted
functions called inside a traced module stay scripted (their control flow survives inlining). The result
is one flat graph: inputs are the flattened arguments (Python numbers as 0-d tensors, as PyTorch's exporter makes them)
followed by the parameters and buffers it reads (named after their ``state_dict`` keys), outputs are the
flattened results.

This module traces, and keeps the model's state as it was; a scripted model's graph is ``scripted``'s, the passes
that make a graph flat are ``flat_graph``'s, and which warnings a capture shows is ``warning_filter``'s.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

import exporter.frontends.torchscript.mutation as mutation
from exporter.errors import CaptureError, ExportArgumentError
from exporter.frontends.base import Captured, flatten, flatten_outputs, split_args
from exporter.frontends.torchscript.flat_graph import as_given, finish
from exporter.frontends.torchscript.scripted import capture_scripted
from exporter.frontends.torchscript.warning_filter import quiet_torchscript

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


def capture(model: Any, args: Any) -> Captured:
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
        distinct = {id(t): t for t in tensors}.values()
        self._kept = [(tensor, tensor.detach().clone()) for tensor in distinct
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
                    tensor.set_(copy)  # type: ignore[call-overload]  # set_ takes a tensor; torch's stubs omit it
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


def _capture(model: Any, args: Any) -> Captured:
    positional, kwargs = split_args(args)
    if isinstance(model, torch.jit.ScriptFunction):
        return capture_scripted(model, model.graph, None, positional, kwargs, state_dict={})
    if isinstance(model, torch.jit.ScriptModule):
        # A ScriptModule's forward is a ScriptMethod, which torch's stubs type as a plain callable.
        return capture_scripted(model, model.forward.graph, model._c, positional, kwargs,  # type: ignore[attr-defined]
                                _state_dict(model))
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


def _capture_traced(model: torch.nn.Module, positional: tuple, kwargs: dict) -> Captured:
    flat, rebuild = flatten((positional, kwargs), numbers_as_tensors=True)
    given = as_given(flat)
    wrapper = _FlatCall(model, rebuild)
    tracer_warnings: list[str] = []
    try:
        with quiet_torchscript(tracer_warnings), torch.no_grad():
            traced = torch.jit.trace(wrapper, tuple(flat), strict=False, check_trace=False)
        if _made_tensors_from_data(tracer_warnings) and _changes_a_constant_in_place(traced.inlined_graph):
            with _retracing(), torch.no_grad():
                traced = torch.jit.trace(wrapper, tuple(as_given(given)), strict=False, check_trace=False)
        outputs = [t.detach() for t in wrapper.last_outputs]
    except ExportArgumentError:
        raise
    except Exception as error:
        raise CaptureError(f"tracing {type(model).__name__} failed: {type(error).__name__}: {error}") from error
    graph = traced.graph.copy()
    captured = finish(graph, traced._c, given, _WRAPPER_PREFIX, _state_dict(model), traced=True)
    captured.example_outputs = outputs
    captured.tracer_warnings = tracer_warnings
    return captured


def _capture_traced_graph(model: torch.nn.Module, positional: tuple, kwargs: dict) -> Captured:
    """Trace straight to a graph whose inputs are the flat arguments followed by the parameters and buffers.

    Several times faster than ``torch.jit.trace``, which first builds a ScriptModule mirroring every submodule;
    that mirror is only needed when the model holds scripted submodules (the tracer calls them as methods).
    """
    flat, rebuild = flatten((positional, kwargs), numbers_as_tensors=True)
    given = as_given(flat)
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
                graph = _trace_graph(wrapper, as_given(given), list(state))
    except ExportArgumentError:
        raise
    except Exception as error:
        raise CaptureError(f"tracing {type(model).__name__} failed: {type(error).__name__}: {error}") from error
    captured = finish(graph, None, given, "", {}, traced=True)
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
    """Drop the parameter/buffer inputs the trace never read (``graph`` is free of dead code: :func:`finish` ends
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
