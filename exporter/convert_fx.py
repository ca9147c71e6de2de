"""The FX driver: one symbolic call per node of a torch.export program's ATen graph, building the in-memory ONNX graph
with the same op library as the TorchScript driver (``convert.py``).

Each ``call_function`` node of an ATen op calls the symbolic registered for its op (``aten::add`` for
``aten.add.Tensor``) with every schema argument in order, defaults filled in, as a TorchScript node holds them; dtype,
layout and memory-format arguments are passed as TorchScript passes them (ScalarType codes, ints). What the symbolics
ask about the node beyond its arguments, :class:`exporter.capture.fx_facts.FxFacts` answers. Nodes whose arguments are
all known at export time are computed with PyTorch (a constant), as the TorchScript driver folds them.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind

from exporter import dtypes, ir, provenance
from exporter.capture.common import Capture
from exporter.capture.export import ASSERTION_OPS, state_tensor
from exporter.capture.fx_facts import FX_FACTS, op_kind, returns_several, schema_arguments, value_type
from exporter.convert import any_empty, call_symbolic, foldable_kind
from exporter.errors import UnsupportedOperatorError
from exporter.graph_context import ExportSession, GraphContext
from exporter.registry import REGISTRY

# The ATen ops of SymInt arithmetic and the Python operators torch.export records on sizes, by the op whose symbolic
# computes them (the one a scripted model's int arithmetic calls).
_SYMBOLIC_OF = {
    "aten::sym_size": "aten::size", "aten::sym_numel": "aten::numel",
    operator.add: "aten::add", operator.sub: "aten::sub", operator.mul: "aten::mul",
    operator.floordiv: "aten::floordiv", operator.truediv: "aten::div", operator.mod: "aten::remainder",
    operator.neg: "aten::neg", operator.eq: "aten::eq", operator.ne: "aten::ne", operator.lt: "aten::lt",
    operator.le: "aten::le", operator.gt: "aten::gt", operator.ge: "aten::ge", torch.sym_max: "aten::maximum",
    torch.sym_min: "aten::minimum", torch.sym_float: "aten::Float", torch.sym_int: "aten::Int",
    math.floor: "aten::floor", math.ceil: "aten::ceil", math.trunc: "aten::trunc", operator.pow: "aten::pow",
}


class FxConverter:
    def __init__(self, session: ExportSession):
        session.facts = FX_FACTS
        self.session = session
        self.record = provenance.RECORD
        self.node_scopes: dict[str, str] = {}
        self._symbolics: dict[str, Any] = {}

    def convert_program(self, captured: Capture, input_values: list[ir.Value]) -> ir.Graph:
        """The ONNX graph of ``captured.program``: ``input_values`` are the user inputs then the parameters, as
        ``naming.graph_inputs`` makes them for ``captured``."""
        program = captured.program
        graph = ir.Graph("main_graph")
        ctx = GraphContext(self.session, graph)
        graph.inputs = list(input_values)
        env = self._bind_placeholders(ctx, captured, input_values)
        for node in program.graph.nodes:
            if node.op == "call_function":
                self._convert_node(ctx, node, env)
            elif node.op == "output":
                graph.outputs = self._outputs(ctx, program, node, env)
            elif node.op != "placeholder":
                raise UnsupportedOperatorError(f"a {node.op} node ({node.target})", self.session.opset,
                                               reason="the FX driver converts ATen op calls only")
        ctx.node = None
        return graph

    # -- the program's boundary -----------------------------------------------------------------------------------
    def _bind_placeholders(self, ctx: GraphContext, captured: Capture, input_values: list[ir.Value]) -> dict:
        program = captured.program
        user_values = iter(input_values[:len(captured.user_inputs)])
        params = {name: value for (name, _), value in zip(captured.params, input_values[len(captured.user_inputs):])}
        placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
        env: dict[torch.fx.Node, Any] = {}
        for spec, node in zip(program.graph_signature.input_specs, placeholders):
            if spec.kind == InputKind.USER_INPUT:
                example = node.meta.get("val")
                if isinstance(example, torch.Tensor):
                    value = next(user_values)
                    self._annotate(value, example)
                    env[node] = value
                else:  # a number torch.export specialized: a constant of the program
                    env[node] = example
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                env[node] = state_tensor(program, spec.target)
            elif spec.kind == InputKind.TOKEN:  # orders the program's side effects: nothing an ONNX graph holds
                env[node] = None
            else:
                env[node] = params[spec.target]
            if self.record and isinstance(env[node], ir.Value):
                env[node].origin = node
        return env

    def _outputs(self, ctx: GraphContext, program, output_node, env: dict) -> list[ir.Value]:
        outputs = []
        for spec, arg in zip(program.graph_signature.output_specs, output_node.args[0]):
            if spec.kind != OutputKind.USER_OUTPUT:
                continue  # a buffer or input the program mutates: the ONNX model has no state to write back
            value = env[arg] if isinstance(arg, torch.fx.Node) else arg
            if value is None and isinstance(arg, torch.fx.Node):
                raise UnsupportedOperatorError(f"{op_kind(arg.args[0]) if arg.target is operator.getitem else op_kind(arg)}"
                                               " (an output the model returns)", self.session.opset,
                                               reason="the symbolic does not compute this output")
            outputs.append(value if isinstance(value, ir.Value) else ctx.const(value))
        return outputs

    # -- nodes ----------------------------------------------------------------------------------------------------
    def _convert_node(self, ctx: GraphContext, node: torch.fx.Node, env: dict) -> None:
        target = node.target
        if target is operator.getitem:
            env[node] = self._item(ctx, node, env)
            return
        if target is torch.ops.higher_order.with_effects:
            env[node] = self._effect(node)
            return
        if isinstance(target, torch._ops.OpOverload):
            kind = op_kind(node)
            if kind in ASSERTION_OPS:
                return
            args = [_materialize(arg, env, self.session.opset) for arg in schema_arguments(node)]
        elif target in _SYMBOLIC_OF:
            kind = op_kind(node)
            args = [_materialize(arg, env, self.session.opset) for arg in node.args]
        else:
            raise UnsupportedOperatorError(op_kind(node), self.session.opset,
                                           reason="a Python function the FX driver does not convert")
        if not any(_holds_value(arg) for arg in args) and (foldable_kind(kind) or target in _SYMBOLIC_OF):
            env[node] = self._evaluate(node, env)
            return
        empty = _empty_results(node, args)
        if empty is not None:
            env[node] = empty if returns_several(node) else empty[0]
            return
        ctx.node = node
        ctx.scope = _scope_prefix(node)
        first_new = len(ctx.graph.nodes)
        result = call_symbolic(ctx, self._lookup(_SYMBOLIC_OF.get(target, _SYMBOLIC_OF.get(kind, kind))), kind, args)
        if result is None and any(isinstance(v, torch.Tensor) for v in _recorded(node)):
            raise UnsupportedOperatorError(kind, self.session.opset, reason="its symbolic returned None")
        for onnx_node in ctx.graph.nodes[first_new:]:
            if self.record and onnx_node.origin is None:
                onnx_node.origin = node
            if ctx.scope:
                self.node_scopes.setdefault(onnx_node.name, ctx.scope)
        self._bind(node, result, env)

    def _item(self, ctx: GraphContext, node: torch.fx.Node, env: dict) -> Any:
        """``results[i]`` of an op with several results or a list result (a sequence: SequenceAt)."""
        container, index = env[node.args[0]], node.args[1]
        if isinstance(container, ir.Value):
            ctx.node = node
            return call_symbolic(ctx, self._lookup("aten::__getitem__"), "aten::__getitem__", [container, index])
        item = container[index]
        if isinstance(item, ir.Value):
            self._annotate(item, node.meta.get("val"))
        return item

    def _effect(self, node: torch.fx.Node) -> tuple:
        """``with_effects(token, op, ...)``: an op run for its side effect, ordered by a token. The assertions torch
        raises at run time (``_linalg_check_errors``) are dropped as the other assertions are; any other effect
        has no ONNX form."""
        op = node.args[1]
        kind = op.name().partition(".")[0] if isinstance(op, torch._ops.OpOverload) else str(op)
        if kind not in ASSERTION_OPS:
            raise UnsupportedOperatorError(kind, self.session.opset, reason="an op with side effects (with_effects)")
        return (None,) * len(_recorded(node))

    def _evaluate(self, node: torch.fx.Node, env: dict) -> Any:
        """The node computed with PyTorch on its constant arguments."""
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        with torch.no_grad():
            return node.target(*args, **kwargs)

    def _lookup(self, kind: str):
        found = self._symbolics.get(kind)
        if found is None:
            found = self._symbolics[kind] = REGISTRY.lookup(kind, self.session.opset)
        return found

    def _bind(self, node: torch.fx.Node, result: Any, env: dict) -> None:
        recorded = node.meta.get("val")
        if isinstance(result, (tuple, list)) and isinstance(recorded, (tuple, list)):
            for value, example in zip(result, recorded):
                if isinstance(value, ir.Value):
                    self._annotate(value, example)
        elif isinstance(result, ir.Value):
            self._annotate(result, recorded)
            if self.record and result.origin is None:
                result.origin = node
        env[node] = result

    def _annotate(self, value: ir.Value, example: Any) -> None:
        """Fill in what the program recorded and the symbolic left unknown: element type and sizes."""
        elem, shape = value_type(example, True)
        if value.dtype is None and elem is not None:
            value.dtype = elem
        if value.shape is None and shape is not None and value.kind == ir.TENSOR:
            value.shape = shape if self.session.static_shapes else tuple(
                d if isinstance(d, int) and not _is_symbolic(example, i) else None for i, d in enumerate(shape))


def _empty_results(node: torch.fx.Node, args: list[Any]) -> tuple | None:
    """The results of an op on an empty tensor whose results the program records as empty at fixed sizes: empty
    constants. ONNX's shape inference and ONNX Runtime reject an empty tensor reshaped with -1, normalized over or
    gathered from, which PyTorch defines (the TorchScript driver folds the same)."""
    if not any_empty(args):
        return None
    recorded = _recorded(node)
    if not all(isinstance(v, torch.Tensor) and all(isinstance(d, int) for d in v.shape) and v.numel() == 0
               for v in recorded):
        return None
    return tuple(torch.empty(tuple(v.shape), dtype=v.dtype) for v in recorded)


def _is_symbolic(example: Any, axis: int) -> bool:
    return isinstance(example, torch.Tensor) and not isinstance(example.shape[axis], int)


def _recorded(node: torch.fx.Node) -> list[Any]:
    value = node.meta.get("val")
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _materialize(arg: Any, env: dict, opset: int) -> Any:
    """An FX argument as a symbolic receives it from the TorchScript driver: nodes by their values, lists as lists,
    dtypes as ScalarType codes, layouts and memory formats as their TorchScript ints."""
    if isinstance(arg, torch.fx.Node):
        return env[arg]
    if isinstance(arg, (list, tuple)):
        return [_materialize(item, env, opset) for item in arg]
    if isinstance(arg, torch.dtype):
        if arg in (torch.quint8, torch.qint8, torch.qint32, torch.quint4x2, torch.quint2x4):
            raise UnsupportedOperatorError(f"a {arg} tensor", opset, reason="quantized tensors in a torch.export program "
                                           "are not converted; export a quantized model with dynamo=False")
        return dtypes.code_from_torch_dtype(arg)
    if isinstance(arg, torch.layout):
        return 0 if arg == torch.strided else 1
    if isinstance(arg, torch.memory_format):
        return _MEMORY_FORMATS.get(arg, 0)
    return arg


_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2,
                   torch.channels_last_3d: 3}


def _holds_value(arg: Any) -> bool:
    if isinstance(arg, ir.Value):
        return True
    return isinstance(arg, (list, tuple)) and any(_holds_value(item) for item in arg)


def _scope_prefix(node: torch.fx.Node) -> str:
    """Node-name prefix from the module path torch.export recorded (``/layer1/0/conv1/``), as the TorchScript
    driver names nodes by their scope."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    path = path.removeprefix("L['self'].").replace("L['self']", "")
    return f"/{path.replace('.', '/')}/" if path else "/"
