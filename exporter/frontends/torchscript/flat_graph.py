"""A captured TorchScript graph made flat for conversion: inlined, module attributes lifted to graph inputs (named
after their ``state_dict`` keys, in its order) or constants, scripted code's None tests and casts resolved, tuples
lowered, mutation removed."""

from __future__ import annotations

import time
from typing import Any

import torch

import exporter.frontends.torchscript.module_state as module_state
import exporter.frontends.torchscript.mutation as mutation
import exporter.frontends.torchscript.script_passes as script_passes
from exporter.errors import CaptureError
from exporter.frontends.base import Captured


def as_given(flat: list[torch.Tensor]) -> list[torch.Tensor]:
    """Copies of the flat arguments as the caller gave them: the model's run may change them in place (``set_``,
    ``resize_``), and the graph's inputs must have the shapes and types the caller passes."""
    return [tensor.detach().clone() for tensor in flat]


def finish(graph, module_c, flat, prefix, state_dict, outputs=None, traced: bool = False) -> Captured:
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
    return Captured(graph=graph, user_inputs=list(flat), params=params, example_outputs=outputs,
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
