"""Convert: one symbolic call per TorchScript node, building the in-memory ONNX graph.

Nodes whose inputs are all Python or tensor constants are evaluated with PyTorch itself (TorchScript-level
constant folding: shape arithmetic on static shapes, constant tensors), so the ONNX graph only carries
what really depends on the inputs or parameters.
"""

from __future__ import annotations

from typing import Any

import torch

from exporter import dtypes, ir
from exporter.errors import OnnxExporterError, SymbolicValueError, UnsupportedOperatorError
from exporter.graph_context import ExportSession, GraphContext
from exporter.registry import REGISTRY

# Ops never evaluated at export time even when their inputs are constant.
_NOT_FOLDABLE_WORDS = ("rand", "dropout", "bernoulli", "normal", "uniform", "multinomial", "empty", "poisson")
_PASS_THROUGH_KINDS = frozenset({"prim::Constant"})


def ts_value_type(ts_value, static_shapes: bool) -> tuple[int | None, tuple | None, bool]:
    """(ONNX element type, shape, is_number) of a TorchScript value, from its recorded type."""
    t = ts_value.type()
    kind = t.kind()
    if kind == "TensorType":
        scalar = t.scalarType()
        elem = dtypes.onnx_from_torch(dtypes.SCALAR_NAME_TO_TORCH[scalar]) if scalar else None
        sizes = t.varyingSizes()
        if sizes is None:
            return elem, None, False
        shape = tuple(sizes) if static_shapes else tuple(None for _ in sizes)
        return elem, shape, False
    if kind == "IntType":
        return dtypes.onnx_from_torch(torch.int64), (), True
    if kind == "FloatType":
        return dtypes.onnx_from_torch(torch.float64), (), True
    if kind == "BoolType":
        return dtypes.onnx_from_torch(torch.bool), (), True
    return None, None, False


class Converter:
    def __init__(self, session: ExportSession):
        self.session = session
        session.convert_block = self._convert_block

    # -- graphs and blocks ------------------------------------------------------------------------------
    def convert_graph(self, ts_graph, input_values: list[ir.Value]) -> ir.Graph:
        graph = ir.Graph("main_graph", inputs=list(input_values))
        ctx = GraphContext(self.session, graph)
        env: dict[int, Any] = {}
        for ts_input, value in zip(ts_graph.inputs(), input_values):
            self._annotate(value, ts_input)
            env[ts_input.unique()] = value
        self._convert_nodes(ctx, ts_graph.nodes(), env)
        graph.outputs = [self._as_output(ctx, env[v.unique()]) for v in ts_graph.return_node().inputs()]
        return graph

    def _convert_block(self, ctx: GraphContext, block, input_values: list[ir.Value], name: str) -> ir.Graph:
        graph = ir.Graph(self.session.fresh_name(name), parent=ctx.graph, inputs=list(input_values))
        sub = ctx.subcontext(graph)
        env = dict(self._env_stack[-1])
        for ts_input, value in zip(block.inputs(), input_values):
            env[ts_input.unique()] = value
        self._convert_nodes(sub, block.nodes(), env)
        graph.outputs = [self._as_output(sub, env[v.unique()], force_local=True) for v in block.returnNode().inputs()]
        return graph

    def _as_output(self, ctx: GraphContext, result: Any, force_local: bool = False) -> ir.Value:
        if not isinstance(result, ir.Value):
            if isinstance(result, (list, tuple)) and any(isinstance(x, ir.Value) for x in result):
                raise SymbolicValueError("a list of tensors cannot be a graph output here")
            return ctx.const(result)
        produced_here = result.producer is not None and result.producer in ctx.graph.nodes
        if force_local and not produced_here:
            return _copy_type(ctx.op("Identity", result), result)
        return result

    # -- nodes --------------------------------------------------------------------------------------------
    _env_stack: list[dict[int, Any]]

    def _convert_nodes(self, ctx: GraphContext, nodes, env: dict[int, Any]) -> None:
        if not hasattr(self, "_env_stack"):
            self._env_stack = []
        self._env_stack.append(env)
        try:
            for node in nodes:
                self._convert_node(ctx, node, env)
        finally:
            self._env_stack.pop()

    def _convert_node(self, ctx: GraphContext, node, env: dict[int, Any]) -> None:
        kind = node.kind()
        if kind == "prim::Constant":
            env[node.output().unique()] = node.output().toIValue()
            return
        args = [env[v.unique()] for v in node.inputs()]
        if _foldable(node, args):
            folded = _evaluate_with_torch(node, args)
            if folded is not _NOT_EVALUATED:
                self._bind(node, folded, env)
                return
        symbolic_fn = self._lookup(node)
        ctx.node = node
        ctx.scope = _scope_of(node)
        try:
            result = symbolic_fn(ctx, *args)
        except OnnxExporterError as error:
            if isinstance(error, UnsupportedOperatorError) or str(error).startswith(kind):
                raise
            raise type(error)(f"{kind}: {error}") from error
        self._bind(node, result, env)

    def _lookup(self, node):
        return REGISTRY.lookup(node.kind(), self.session.opset)

    def _bind(self, node, result: Any, env: dict[int, Any]) -> None:
        outputs = list(node.outputs())
        if len(outputs) == 1:
            results = [result]
        else:
            if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
                raise OnnxExporterError(
                    f"{node.kind()}: the symbolic returned {type(result).__name__}, expected {len(outputs)} outputs"
                )
            results = list(result)
        for ts_value, value in zip(outputs, results):
            if isinstance(value, ir.Value):
                self._annotate(value, ts_value)
            env[ts_value.unique()] = value

    def _annotate(self, value: ir.Value, ts_value) -> None:
        elem, shape, is_number = ts_value_type(ts_value, self.session.static_shapes)
        if value.dtype is None and elem is not None:
            value.dtype = elem
        if value.shape is None and shape is not None:
            value.shape = shape
        if is_number and value.producer is not None:
            value.is_number = True


def _copy_type(value: ir.Value, like: ir.Value) -> ir.Value:
    value.dtype, value.shape, value.kind = like.dtype, like.shape, like.kind
    return value


def _scope_of(node) -> str:
    scope = node.scopeName()
    return f"/{scope.replace('__module.model', '').strip('.').replace('.', '/')}/" if scope else ""


_NOT_EVALUATED = object()


def _is_constant(arg: Any) -> bool:
    if isinstance(arg, ir.Value):
        return False
    if isinstance(arg, (list, tuple)):
        return all(_is_constant(a) for a in arg)
    return True


def _foldable(node, args: list[Any]) -> bool:
    kind = node.kind()
    if not kind.startswith("aten::") or kind.endswith("_") or any(w in kind for w in _NOT_FOLDABLE_WORDS):
        return False
    if node.blocks() if hasattr(node, "blocks") else False:
        return False
    return all(_is_constant(a) for a in args)


def _evaluate_with_torch(node, args: list[Any]) -> Any:
    """Run a constant aten node eagerly; _NOT_EVALUATED when PyTorch cannot (unknown overload, error)."""
    try:
        schema = node.schema()
    except RuntimeError:
        return _NOT_EVALUATED
    if schema == "(no schema)":
        return _NOT_EVALUATED
    name, _, _ = schema.partition("(")
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base.split("::")[1], None)
    if packet is None:
        return _NOT_EVALUATED
    op = getattr(packet, overload or "default", None)
    if op is None:
        return _NOT_EVALUATED
    try:
        with torch.no_grad():
            return op(*args)
    except Exception:
        return _NOT_EVALUATED
