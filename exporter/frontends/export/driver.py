"""The FX driver: one symbolic call per node of a torch.export program's ATen graph, building the in-memory ONNX graph
with the same op library as the TorchScript driver (``frontends/torchscript/driver.py``).

Each ``call_function`` node of an ATen op calls the symbolic registered for its op (``aten::add`` for
``aten.add.Tensor``) with every schema argument in order, defaults filled in, as a TorchScript node holds them; dtype,
layout and memory-format arguments are passed as TorchScript passes them (ScalarType codes, ints). What the symbolics
ask about the node beyond its arguments, :class:`exporter.frontends.export.facts.FxFacts` answers. Nodes whose arguments are
all known at export time are computed with PyTorch (a constant), as the TorchScript driver folds them.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.export.graph_signature import InputKind

from exporter import dtypes, ir, provenance
from exporter.conversion_core import Symbolics, annotate, any_empty, call_symbolic, copy_type, foldable_kind
from exporter.errors import UnsupportedOperatorError
from exporter.frontends.base import Captured, Driver
from exporter.frontends.export import complex_numbers
from exporter.frontends.export.capture import ASSERTION_OPS, SYMBOLIC_NUMBERS, SYMBOLIC_OF, state_tensor, user_outputs
from exporter.frontends.export.facts import FX_FACTS, op_kind, returns_several, schema_arguments, value_type
from exporter.graph_context import ExportSession, GraphContext

# The higher-order ops of control flow, by the converter method that makes their ONNX If, Loop or Scan.
_CONTROL_FLOW = {torch.ops.higher_order.cond: "_cond", torch.ops.higher_order.while_loop: "_while_loop",
                 torch.ops.higher_order.scan: "_scan"}


class FxConverter(Driver):
    def __init__(self, session: ExportSession):
        session.facts = FX_FACTS
        self.session = session
        self.record = provenance.RECORD
        self.node_scopes: dict[str, str] = {}
        self._symbolics = Symbolics(session)

    def convert(self, captured: Captured, input_values: list) -> ir.Graph:
        """The ONNX graph of ``captured.program``: ``input_values`` are the user inputs then the parameters, as
        ``naming.graph_inputs`` makes them for ``captured``."""
        program = captured.program
        graph = ir.Graph("main_graph")
        g = GraphContext(self.session, graph)
        graph.inputs = list(input_values)
        env = self._bind_placeholders(g, captured, input_values)
        output_node = self._convert_nodes(g, program.graph_module, env)
        graph.outputs = self._outputs(g, program, output_node, env)
        g.node = None
        return graph

    def _convert_nodes(self, g: GraphContext, module: torch.fx.GraphModule, env: dict) -> torch.fx.Node:
        """Convert every op call of ``module``'s graph into ``g``'s graph (its placeholders bound in ``env``);
        its output node. A computation whose results only run-time assertions read (a view's storage offset,
        say) is skipped with them."""
        checks_only = _feeding_assertions_only(module.graph)
        for node in module.graph.nodes:
            if node.op == "call_function":
                if node not in checks_only:
                    self._convert_node(g, node, env)
            elif node.op == "get_attr":  # a branch or loop body of cond / while_loop: a GraphModule
                env[node] = getattr(module, node.target)
            elif node.op == "output":
                return node
            elif node.op != "placeholder":
                raise UnsupportedOperatorError(f"a {node.op} node ({node.target})", self.session.opset,
                                               reason="the FX driver converts ATen op calls only")
        raise AssertionError("an FX graph without an output node")

    # -- the program's boundary -----------------------------------------------------------------------------------
    def _bind_placeholders(self, g: GraphContext, captured: Captured, input_values: list[ir.Value]) -> dict:
        program = captured.program
        user_values = iter(input_values[:len(captured.user_inputs)])
        params = {name: value for (name, _), value in zip(captured.params, input_values[len(captured.user_inputs):],
                                                          strict=True)}
        placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
        env: dict[torch.fx.Node, Any] = {}
        for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True):
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

    def _outputs(self, g: GraphContext, program, output_node, env: dict) -> list[ir.Value]:
        outputs = []
        for arg in user_outputs(program):  # not a buffer or input the program mutates (ONNX holds no state), no None
            value = env[arg] if isinstance(arg, torch.fx.Node) else arg
            if value is None and isinstance(arg, torch.fx.Node):
                computed_by = arg.args[0] if arg.target is operator.getitem else arg  # getitem: one of its results
                kind = op_kind(computed_by) if isinstance(computed_by, torch.fx.Node) else str(computed_by)
                raise UnsupportedOperatorError(f"{kind} (an output the model returns)", self.session.opset,
                                               reason="the symbolic does not compute this output")
            example = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
            if isinstance(example, tuple(SYMBOLIC_NUMBERS)):
                value = self._number_output(g, value, SYMBOLIC_NUMBERS[type(example)])
            outputs.append(value if isinstance(value, ir.Value) else g.const(dtypes.real_view(value)))
        return outputs

    @staticmethod
    def _number_output(g: GraphContext, value: Any, dtype: torch.dtype) -> ir.Value:
        """A number the program computes from sizes, as the 0-d tensor of ``dtype`` torch.onnx returns for it."""
        if not isinstance(value, ir.Value):
            return g.const(torch.tensor(value, dtype=dtype))
        if value.rank != 0:
            value = g.op("Reshape", value, g.const(torch.tensor([], dtype=torch.int64)))
        wanted = dtypes.onnx_from_torch(dtype)
        return value if value.dtype == wanted else g.op("Cast", value, to_i=wanted)

    # -- nodes ----------------------------------------------------------------------------------------------------
    def _convert_node(self, g: GraphContext, node: torch.fx.Node, env: dict) -> None:
        target = node.target
        if target is operator.getitem:
            env[node] = self._item(g, node, env)
            return
        if target is torch.ops.higher_order.with_effects:
            env[node] = self._effect(node)
            return
        if target in _CONTROL_FLOW:
            g.node = node
            g.scope = _scope_prefix(node)
            control = getattr(self, _CONTROL_FLOW[target])
            first_new = len(g.graph.nodes)
            self._bind(node, control(g, node, env), env)
            self._stamp(g.graph.nodes[first_new:], node)  # the If or Loop (its bodies' nodes name their own)
            return
        if isinstance(target, torch._ops.OpOverload):
            kind = op_kind(node)
            if kind in ASSERTION_OPS:
                return
            args = [_materialize(arg, env, self.session.opset) for arg in schema_arguments(node)]
        elif target in SYMBOLIC_OF:
            kind = op_kind(node)
            args = [_materialize(arg, env, self.session.opset) for arg in node.args]
        else:
            raise UnsupportedOperatorError(op_kind(node), self.session.opset,
                                           reason="a Python function the FX driver does not convert")
        translated = self._translated(node)
        if translated is None and not any(_holds_value(arg) for arg in args) and (
                foldable_kind(kind) or target in SYMBOLIC_OF):
            env[node] = self._evaluate(node, env)
            return
        if complex_numbers.touches_complex(node):  # held as real views: their own op family
            g.node = node
            env[node] = complex_numbers.convert(g, node, env)
            return
        empty = _empty_results(node, args)
        if empty is not None:
            env[node] = empty if returns_several(node) else empty[0]
            return
        g.node = node
        g.scope = _scope_prefix(node)
        first_new = len(g.graph.nodes)
        symbolic = translated or self._symbolics.lookup(SYMBOLIC_OF.get(target, SYMBOLIC_OF.get(kind, kind)))
        result = call_symbolic(g, symbolic, kind, args)
        if result is None and any(isinstance(v, torch.Tensor) for v in _recorded(node)):
            raise UnsupportedOperatorError(kind, self.session.opset, reason="its symbolic returned None")
        self._stamp(g.graph.nodes[first_new:], node)
        if g.scope:
            for onnx_node in g.graph.nodes[first_new:]:
                self.node_scopes.setdefault(onnx_node.name, g.scope)
        self._bind(node, result, env)

    def _stamp(self, onnx_nodes: list[ir.Node], node: torch.fx.Node) -> None:
        """Record ``node`` as the origin of the ONNX nodes its conversion emitted (those without one already)."""
        if self.record:
            for onnx_node in onnx_nodes:
                if onnx_node.origin is None:
                    onnx_node.origin = node

    # -- control flow: torch.cond and torch.while_loop -------------------------------------------------------------
    def _cond(self, g: GraphContext, node: torch.fx.Node, env: dict) -> tuple:
        """``cond(pred, true_graph, false_graph, operands)``: ONNX If, whose branches read the operands from the
        enclosing graph; a predicate known at export time keeps only the taken branch."""
        pred, true_graph, false_graph, operands = node.args
        condition = _materialize(pred, env, self.session.opset)
        operands = [_materialize(operand, env, self.session.opset) for operand in _operand_list(operands)]
        if not _holds_value(condition):
            taken = true_graph if bool(condition) else false_graph
            return tuple(self._inline(g, env[taken], operands, env))
        branches = [self._subgraph(g, env[gm], operands, [], name, env)
                    for gm, name in ((true_graph, "then_branch"), (false_graph, "else_branch"))]
        condition = g.op("Cast", condition, to_i=dtypes.BOOL) if g.dtype(condition) != dtypes.BOOL else condition
        results = g.op("If", condition, then_branch_g=branches[0], else_branch_g=branches[1],
                         outputs=len(branches[0].outputs))
        return _typed_like(results, branches[0].outputs)

    def _while_loop(self, g: GraphContext, node: torch.fx.Node, env: dict) -> tuple:
        """``while_loop(cond_graph, body_graph, carried, additional)``: ONNX Loop with no trip count. The condition is
        computed once before the loop on the initial values, and in the body on the values it computed; the
        additional inputs are read from the enclosing graph."""
        cond_graph, body_graph, carried, additional = node.args
        opset = self.session.opset
        initial = [g.value(_materialize(value, env, opset)) for value in _operand_list(carried)]
        additional = [_materialize(value, env, opset) for value in _operand_list(additional)]
        condition = g.value(self._inline(g, env[cond_graph], [*initial, *additional], env)[0])
        iteration = self._loop_input("iteration", dtypes.INT64, ())
        running = self._loop_input("condition", dtypes.BOOL, ())
        carried_in = [self._loop_input("carried", value.dtype, _loose_shape(example))
                      for value, example in zip(initial, _recorded(node), strict=True)]
        body = self._subgraph(g, env[body_graph], [*carried_in, *additional], [iteration, running, *carried_in],
                              "loop_body", env, then=env[cond_graph])
        results = g.op("Loop", None, condition, *initial, body_g=body, outputs=len(initial))
        return _typed_like(results, initial)

    def _scan(self, g: GraphContext, node: torch.fx.Node, env: dict) -> tuple:
        """``scan(combine_graph, init, xs, additional)``: ONNX Scan over axis 0 of each of ``xs``, carrying ``init``;
        its results are the final carries, then each per-step output stacked on axis 0 (as torch's). The additional
        inputs are read from the enclosing graph."""
        combine, init_args, xs_args, additional_args = node.args
        opset = self.session.opset
        if opset < 9:  # opset 8's Scan takes a batch axis first and no scan axes
            raise UnsupportedOperatorError("higher_order.scan", opset, reason="ONNX Scan over axis 0 needs opset 9")
        scanned = _operand_list(xs_args)
        init = [g.value(_materialize(value, env, opset)) for value in _operand_list(init_args)]
        xs = [g.value(_materialize(value, env, opset)) for value in scanned]
        additional = [_materialize(value, env, opset) for value in _operand_list(additional_args)]
        carried_in = [self._loop_input("carried", value.dtype, _loose_shape(example))
                      for value, example in zip(init, _recorded(node), strict=False)]
        slices_in = [self._loop_input("slice", value.dtype, _loose_shape(_recorded_value(arg))[1:])
                     for value, arg in zip(xs, scanned, strict=True)]
        body = self._subgraph(g, env[combine], [*carried_in, *slices_in, *additional], [*carried_in, *slices_in],
                              "scan_body", env)
        results = g.op("Scan", *init, *xs, body_g=body, num_scan_inputs_i=len(xs), outputs=len(body.outputs))
        return _typed_like(results, body.outputs)

    def _subgraph(self, g: GraphContext, module: torch.fx.GraphModule, bound: list[Any], inputs: list[ir.Value],
                  name: str, env: dict, then: torch.fx.GraphModule | None = None) -> ir.Graph:
        """``module`` converted into an ONNX subgraph with ``inputs``, its placeholders bound to ``bound``; with
        ``then`` (a while_loop's condition), the condition of the results comes first among the outputs."""
        graph = ir.Graph(self.session.fresh_name(name), parent=g.graph, inputs=inputs)
        sub = g.subcontext(graph)
        results = self._inline(sub, module, bound, env)
        if then is not None:
            results = [self._inline(sub, then, [*results, *bound[len(results):]], env)[0], *results]
        graph.outputs = [_local_output(sub, result) for result in results]
        return graph

    def _inline(self, g: GraphContext, module: torch.fx.GraphModule, bound: list[Any], env: dict) -> list[Any]:
        """The results of ``module``'s graph converted into ``g``'s graph, its placeholders bound to ``bound``
        (the enclosing graph's values stay visible: a subgraph reads them from the outer scope)."""
        inner = dict(env)
        placeholders = [node for node in module.graph.nodes if node.op == "placeholder"]
        inner.update(zip(placeholders, bound, strict=True))
        output_node = self._convert_nodes(g, module, inner)
        results = output_node.args[0]
        results = results if isinstance(results, (tuple, list)) else [results]
        return [_materialize(result, inner, self.session.opset) for result in results]

    def _loop_input(self, hint: str, dtype: int | None, shape: tuple | None) -> ir.Value:
        return ir.Value(self.session.fresh_name(hint), dtype=dtype, shape=shape)

    def _item(self, g: GraphContext, node: torch.fx.Node, env: dict) -> Any:
        """``results[i]`` of an op with several results or a list result (a sequence: SequenceAt). The item's
        provenance is the getitem node: in an FX graph each node is one value, and the getitem is that result's."""
        container, index = env[node.args[0]], node.args[1]
        if isinstance(container, ir.Value):
            g.node = node
            item = call_symbolic(g, self._symbolics.lookup("aten::__getitem__"), "aten::__getitem__", [container, index])
        else:
            item = container[index]
            if isinstance(item, ir.Value):
                self._annotate(item, node.meta.get("val"))
        if self.record and isinstance(item, ir.Value) and item.origin is None:
            item.origin = node
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
        if not callable(node.target):
            raise TypeError(f"{node.format_node()}: a call_function node's target is a function")
        with torch.no_grad():
            return node.target(*args, **kwargs)

    def _translated(self, node: torch.fx.Node):
        """The caller's custom_translation_table entry for ``node``, as a symbolic (None where it has none)."""
        table = self.session.translations
        if table is None:
            return None
        target = node.target
        return table.symbolic(target, target.name() if isinstance(target, torch._ops.OpOverload) else op_kind(node))

    def _bind(self, node: torch.fx.Node, result: Any, env: dict) -> None:
        recorded = node.meta.get("val")
        if isinstance(result, (tuple, list)) and isinstance(recorded, (tuple, list)):
            for value, example in zip(result, recorded, strict=True):
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
        if shape is not None and (value.kind != ir.TENSOR or not self.session.static_shapes):
            shape = None if value.kind != ir.TENSOR else tuple(
                d if isinstance(d, int) and not _is_symbolic(example, i) else None for i, d in enumerate(shape))
        annotate(value, elem, shape)


def _local_output(g: GraphContext, result: Any) -> ir.Value:
    """``result`` as an output of ``g``'s subgraph: a constant made there, and a value of an enclosing graph passed
    through an Identity (an ONNX subgraph's outputs are its own values)."""
    if not isinstance(result, ir.Value):
        return g.const(result)
    if result.producer is not None and result.producer in g.graph.nodes:
        return result
    return copy_type(g.op("Identity", result), result)


def _typed_like(results: ir.Value | tuple, values: list[ir.Value]) -> tuple:
    """The results of an If or Loop, each of the element type of the branch output or loop-carried value it gives
    (what ``GraphContext.op`` infers from the op's first input, the condition, is not theirs); the sizes come from
    the program."""
    results = results if isinstance(results, tuple) else (results,)
    for result, value in zip(results, values, strict=True):
        result.dtype, result.shape, result.kind = value.dtype, None, value.kind
    return results


def _recorded_value(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None


def _loose_shape(example: Any) -> tuple:
    """A loop-carried value's shape: the sizes the program records as fixed, the others unknown."""
    if not isinstance(example, torch.Tensor):
        return ()
    return tuple(d if isinstance(d, int) else None for d in example.shape)


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


def _operand_list(arg: torch.fx.node.Argument) -> list[torch.fx.node.Argument]:
    """A higher-order op's list argument: cond's operands, while_loop's carried and additional values."""
    if not isinstance(arg, (list, tuple)):
        raise TypeError(f"expected a list of operands, got {type(arg).__name__}")
    return list(arg)


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


def _feeding_assertions_only(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The op calls of ``graph`` that are run-time assertions or whose results only such calls read, transitively:
    the ONNX graph checks none of them (as a trace checks none)."""
    skipped: set[torch.fx.Node] = set()
    for node in reversed(graph.nodes):
        if node.op != "call_function":
            continue
        asserts = isinstance(node.target, torch._ops.OpOverload) and op_kind(node) in ASSERTION_OPS
        if asserts or (node.users and all(user in skipped for user in node.users)):
            skipped.add(node)
    return skipped

