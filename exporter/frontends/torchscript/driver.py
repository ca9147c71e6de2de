"""The TorchScript driver: one symbolic call per TorchScript node, building the in-memory ONNX graph (the lookup, the
call and the folding policy it shares with the FX driver are ``exporter.conversion_core``'s).

Nodes whose inputs are all Python or tensor constants are evaluated with PyTorch itself (TorchScript-level
constant folding: shape arithmetic on static shapes, constant tensors), so the ONNX graph only carries
what really depends on the inputs or parameters.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from exporter import dtypes, ir, provenance
from exporter.conversion_core import (
    NOT_EVALUATED,
    TAKES_OPTIONALS,
    Symbolics,
    annotate,
    any_empty,
    call_symbolic,
    copy_type,
    foldable_kind,
    is_constant,
)
from exporter.errors import OnnxExporterError, UnsupportedOperatorError
from exporter.frontends.base import Captured, Driver
from exporter.frontends.torchscript.capture import MODE_FRAME
from exporter.frontends.torchscript.facts import (
    TORCHSCRIPT_FACTS,
    blocks_of,
    declared_element_type,
    outputs_of,
    ts_value_type,
)
from exporter.frontends.torchscript.mutation import is_in_place
from exporter.graph_context import ExportSession, GraphContext
from exporter.lowering import optional, qdq
from exporter.options import OperatorExportTypes
from exporter.registry import REGISTRY

ATEN_DOMAIN = "org.pytorch.aten"
PYTHON_OP = "prim::PythonOp"

_FACTORIES_OF_SELF_TYPE = frozenset({"aten::new_zeros", "aten::new_ones", "aten::new_full"})
_COLLECTION_KINDS = frozenset({"prim::ListConstruct", "prim::TupleConstruct"})


class Converter(Driver):
    def __init__(self, session: ExportSession, source_locations: bool = False):
        self.session = session
        self.source_locations = source_locations  # verbose export: node doc_strings name the model's source line
        session.facts = session.facts or TORCHSCRIPT_FACTS
        session.convert_block = self._convert_block
        session.inline_block = self._inline_block
        # ONNX node name -> TorchScript scope of the node it came from (export_modules_as_functions groups by it).
        self.node_scopes: dict[str, str] = {}
        self.record = provenance.RECORD  # stamp ONNX nodes and values with their TorchScript origin
        self._symbolics = Symbolics(session)  # op kind -> its symbolic at the session's opset, as looked up

    def convert(self, captured: Captured, input_values: list) -> ir.Graph:
        return self.convert_graph(captured.graph, input_values)

    # -- graphs and blocks ------------------------------------------------------------------------------
    def convert_graph(self, ts_graph, input_values: list[ir.Value | qdq.QTensor]) -> ir.Graph:
        graph = ir.Graph("main_graph")
        g = GraphContext(self.session, graph)
        env: dict[int, Any] = {}
        graph.inputs = [v for value in input_values for v in qdq.boundary_values(value)]
        for ts_input, value in zip(ts_graph.inputs(), input_values, strict=True):
            if isinstance(value, qdq.QTensor):
                value = qdq.typed_input(g, value)
            else:
                self._annotate(value, ts_input)
                value.argument = ts_input
                if _optional_input(ts_input) and g.opset >= optional.OPTIONAL_OPSET:
                    # An ``Optional[Tensor]`` parameter: an optional input, which a caller may leave out (None).
                    value.kind = ir.OPTIONAL
                if self.record:
                    value.origin = ts_input
            env[ts_input.unique()] = _number_list_as_tensor(g, value)
        self._convert_nodes(g, ts_graph.nodes(), env)
        g.node = None
        graph.outputs = [self._as_output(g, v, ts_output=ts_output) for ts_output in ts_graph.return_node().inputs()
                         for v in qdq.boundary_values(env[ts_output.unique()])]
        return graph

    def _convert_block(self, g: GraphContext, block, input_values: list[ir.Value], name: str) -> ir.Graph:
        graph = ir.Graph(self.session.fresh_name(name), parent=g.graph, inputs=list(input_values))
        sub = g.subcontext(graph)
        env = dict(self._env_stack[-1])
        for ts_input, value in zip(block.inputs(), input_values, strict=True):
            env[ts_input.unique()] = value
        self._convert_nodes(sub, block.nodes(), env)
        graph.outputs = [self._as_output(sub, env[v.unique()], force_local=True) for v in block.returnNode().inputs()]
        return graph

    def _inline_block(self, g: GraphContext, block, inputs: list[Any]) -> list[Any]:
        """Convert a TorchScript block into ``g``'s own graph (a branch chosen at export time); its results."""
        env = dict(self._env_stack[-1])
        for ts_input, value in zip(block.inputs(), inputs, strict=True):
            env[ts_input.unique()] = value
        self._convert_nodes(g, block.nodes(), env)
        return [env[v.unique()] for v in block.returnNode().inputs()]

    def _as_output(self, g: GraphContext, result: Any, force_local: bool = False, ts_output=None) -> ir.Value:
        """``result`` as an output of ``g``'s graph. A None is an empty optional: a block's output (If and Loop
        decide what it becomes, see symbolics/control_flow.py and symbolics/loop.py) or, from opset 15, a graph
        output ONNX Runtime returns as None (``ts_output``, the TorchScript value, tells its element type where it
        has one)."""
        if result is None:
            if ts_output is not None:
                optional.require_optional(g, "the model returns None", op="a None graph output")
            return optional.empty(g, declared_element_type(ts_output) if ts_output is not None else None)
        if isinstance(result, (list, tuple)) and any(isinstance(x, ir.Value) for x in result):
            result = _sequence_output(g, result)
        if not isinstance(result, ir.Value):
            return g.const(result)
        produced_here = result.producer is not None and result.producer in g.graph.nodes
        if force_local and not produced_here:
            if result.kind == ir.OPTIONAL:
                return optional.pass_through(g, result)
            return copy_type(g.op("Identity", result), result)
        return result

    # -- nodes --------------------------------------------------------------------------------------------
    _env_stack: list[dict[int, Any]]

    def _convert_nodes(self, g: GraphContext, nodes, env: dict[int, Any]) -> None:
        if not hasattr(self, "_env_stack"):
            self._env_stack = []
        self._env_stack.append(env)
        try:
            for node in nodes:
                self._convert_node(g, node, env)
        finally:
            self._env_stack.pop()

    def _convert_node(self, g: GraphContext, node, env: dict[int, Any]) -> None:
        kind = node.kind()
        if kind == "prim::Constant":
            output = node.output()
            env[output.unique()] = output.toIValue()
            return
        args = [env[node.inputsAt(i).unique()] for i in range(node.inputsSize())]
        if kind in _COLLECTION_KINDS and all(is_constant(a) for a in args):
            env[node.output().unique()] = args  # a list of values known at export time is one (a Conv's strides)
            return
        known = _known_arguments(node, args)
        if known is not None:
            folded = _evaluate_with_torch(node, known)
            if folded is not NOT_EVALUATED:
                self._bind(node, folded, env)
                return
        if self.session.static_shapes:
            empty = _empty_results(node, args)
            if empty is not None:
                for arg in args:
                    if isinstance(arg, ir.Value) and arg.producer is None and arg.const is None:
                        arg.read_by_folded_op = True
                self._bind(node, empty[0] if len(empty) == 1 else empty, env)
                return
        g.node = node
        scope = node.scopeName()
        g.scope = _scope_prefix(scope)
        first_new = len(g.graph.nodes)
        result = self._convert_with_fallback(g, node, args)
        g.node = node
        for onnx_node in g.graph.nodes[first_new:]:
            if self.record and onnx_node.origin is None:  # an inlined block's nodes already name their own
                onnx_node.origin = node
            if scope:
                self.node_scopes.setdefault(onnx_node.name, scope)
        if self.source_locations:
            _record_source_location(node, g.graph.nodes[first_new:])
        self._bind(node, result, env)
        _infer_missing_shapes(g, node, g.graph.nodes[first_new:], result)

    def _convert_with_fallback(self, g: GraphContext, node, args: list[Any]) -> Any:
        """Convert one node as ``operator_export_type`` asks: symbolic, ATen node, or the node as it is."""
        kind = node.kind()
        export_type = self.session.operator_export_type or OperatorExportTypes.ONNX
        is_aten = kind.startswith("aten::")
        if export_type == OperatorExportTypes.ONNX_ATEN and is_aten:
            return _emit_aten(g, node, args)
        if kind == PYTHON_OP and not REGISTRY.is_supported(PYTHON_OP, self.session.opset):
            return self._convert_python_op(g, node, args, export_type)
        try:
            return self._call_symbolic(g, node, args)
        except UnsupportedOperatorError:
            # Nodes a failed symbolic may have emitted are unused and removed by dead-code elimination.
            if export_type == OperatorExportTypes.ONNX_ATEN_FALLBACK and is_aten:
                return _emit_aten(g, node, args)
            if export_type == OperatorExportTypes.ONNX_FALLTHROUGH:
                return _emit_unconverted(g, node, args)
            raise

    def _call_symbolic(self, g: GraphContext, node, args: list[Any]) -> Any:
        kind = node.kind()
        table = self.session.translations  # the caller's custom_translation_table, by schema name ("aten::add.Tensor")
        translated = table.symbolic(None, node.schema().partition("(")[0]) if table is not None else None
        result = call_symbolic(g, translated or self._symbolics.lookup(kind), kind, args)
        if result is None and any(o.type().kind() == "TensorType" for o in outputs_of(node)):
            # As documented, a symbolic returns None when it cannot convert this use of the op.
            raise UnsupportedOperatorError(kind, self.session.opset, reason="its symbolic returned None")
        return _keep_in_place_type(g, kind, args, result)

    # -- torch.autograd.Function calls ------------------------------------------------------------------
    def _convert_python_op(self, g: GraphContext, node, args: list[Any], export_type: int) -> Any:
        """An autograd.Function: its static ``symbolic`` if it has one; else kept (fallthrough) or inlined."""
        function_class = python_op_class(node)
        symbolic_fn = getattr(function_class, "symbolic", None)
        if symbolic_fn is not None:
            try:
                return symbolic_fn(g, *python_op_arguments(node, args))
            except OnnxExporterError as error:
                if isinstance(error, UnsupportedOperatorError):
                    raise
                raise type(error)(f"{node.pyname()}.symbolic: {error}") from error
        if export_type in (OperatorExportTypes.ONNX_FALLTHROUGH, OperatorExportTypes.ONNX_ATEN_FALLBACK):
            return _emit_unconverted(g, node, args)
        if not node.hasAttribute("Subgraph"):
            raise UnsupportedOperatorError(
                f"{PYTHON_OP} {node.pyname()}", self.session.opset,
                reason="the autograd.Function has no `symbolic` and tracing recorded no subgraph to inline",
            )
        return self._inline_subgraph(g, node.g("Subgraph"), args)

    def _inline_subgraph(self, g: GraphContext, subgraph, args: list[Any]) -> Any:
        """Convert the ops the traced Function ran, in place of the Function node."""
        env: dict[int, Any] = {}
        for ts_input, value in zip(subgraph.inputs(), args, strict=True):
            env[ts_input.unique()] = value
        self._convert_nodes(g, subgraph.nodes(), env)
        results = [env[v.unique()] for v in subgraph.return_node().inputs()]
        return results[0] if len(results) == 1 else tuple(results)

    def _bind(self, node, result: Any, env: dict[int, Any]) -> None:
        outputs = outputs_of(node)
        if not outputs:
            return  # a side effect only (aten::warn, ...): nothing to bind
        if len(outputs) == 1:
            results = [result]
        else:
            if not isinstance(result, (tuple, list)) or len(result) != len(outputs):
                raise OnnxExporterError(
                    f"{node.kind()}: the symbolic returned {type(result).__name__}, expected {len(outputs)} outputs"
                )
            results = list(result)
        for ts_value, value in zip(outputs, results, strict=True):
            if isinstance(value, ir.Value):
                self._annotate(value, ts_value)
                # A value bound to several TorchScript values holds the last one, except a graph input, which stays
                # the input it is (a symbolic may return its input: a full slice, say).
                if self.record and not (value.origin is not None and value.origin.node().kind() == "prim::Param"):
                    value.origin = ts_value
            elif isinstance(value, qdq.QTensor):
                self._annotate(value.value, ts_value)  # its shape; the integers keep their own element type
                value.value.origin = ts_value  # the integers stand for the quantized tensor
            env[ts_value.unique()] = value

    def _annotate(self, value: ir.Value, ts_value) -> None:
        elem, shape, is_number = ts_value_type(ts_value, self.session.static_shapes)
        annotate(value, elem, shape)
        if is_number:  # a scripted model's int/float/bool input too
            value.is_number = True


# Where an optional input may go as it is: ``is None`` tests and refinements, a loop carrying it, a block or the
# graph returning it (If and Loop then pass an optional on).
_OPTIONAL_INPUT_USES = TAKES_OPTIONALS | {"prim::Return"}


def _optional_input(ts_input) -> bool:
    """Whether a graph input is an ``Optional[Tensor]`` that becomes an ONNX optional input (opset 15+): one that
    the model only tests (``is None``) and refines before reading. One that an op reads as it is (a ``Tensor?``
    argument, such as linear's bias) stays a tensor input, taken as given (``is None`` is then False), as before
    opset 15: that op's symbolic reads a tensor."""
    ts_type = ts_input.type()
    if ts_type.kind() != "OptionalType" or ts_type.getElementType().kind() != "TensorType":
        return False
    return all(use.user.kind() in _OPTIONAL_INPUT_USES for use in ts_input.uses())


def _sequence_output(g: GraphContext, items: list | tuple) -> ir.Value:
    """A scripted model's list of tensors returned as an ONNX sequence, as PyTorch's exporter does (opset 11+)."""
    from exporter.lowering.sequence import SEQUENCE_OPSET, as_sequence

    if g.opset < SEQUENCE_OPSET:
        raise UnsupportedOperatorError(
            "a list of tensors as a graph output", g.opset, SEQUENCE_OPSET, f"needs ONNX sequences: needs opset >= {SEQUENCE_OPSET}"
        )
    return as_sequence(g, list(items))


def _number_list_as_tensor(g: GraphContext, value: Any) -> Any:
    """A list-of-numbers input (an ONNX sequence of 0-d tensors) as the 1-d tensor that holds an int list whose items
    are known only at run time (``lowering.sequence.is_list_tensor``): its items stacked, in their own type."""
    if not (isinstance(value, ir.Value) and value.kind == ir.SEQUENCE and value.elem_shape == ()):
        return value
    from exporter.lowering.sequence import concat_from_sequence

    out = concat_from_sequence(g, value, 0, new_axis=True)
    out.shape = (None,)
    return out


def _record_source_location(node, onnx_nodes) -> None:
    """Put the model source line that produced ``node`` in the doc_string of the ONNX nodes made from it."""
    try:
        location = node.sourceRange().strip()
    except RuntimeError:
        return
    first_line = next((line for line in location.splitlines() if not line.startswith(MODE_FRAME)), "")
    for onnx_node in onnx_nodes:
        if not onnx_node.doc_string:
            onnx_node.doc_string = first_line


def python_op_class(node):
    """The autograd.Function subclass a traced ``prim::PythonOp`` node calls."""
    apply = node.pyobj()
    return getattr(apply, "__self__", apply)


def python_op_arguments(node, tensor_args: list[Any]) -> list[Any]:
    """The Function's arguments in call order: tensors from the graph, non-tensors from the node's scalars.

    ``cconv`` lists the call order: ``d`` for a graph input, ``c`` for a Python scalar argument.
    """
    tensors, scalars = iter(tensor_args), iter(node.scalar_args())
    return [next(tensors) if kind == "d" else next(scalars) for kind in node.cconv()]


def _emit_aten(g: GraphContext, node, args: list[Any]) -> Any:
    """An ``ATen`` node in domain org.pytorch.aten naming the operator (and overload), as documented."""
    name, overload = _schema_name(node)
    return _emit_node(g, node, args, f"{ATEN_DOMAIN}::ATen", operator_s=name, overload_name_s=overload)


def _emit_unconverted(g: GraphContext, node, args: list[Any]) -> Any:
    """The TorchScript node as it is, in a custom domain named after its namespace (ONNX_FALLTHROUGH)."""
    namespace, _, op_name = node.kind().partition("::")
    domain = ATEN_DOMAIN if namespace == "aten" else namespace
    if node.kind() == PYTHON_OP:
        function_class = python_op_class(node)
        return _emit_node(g, node, args, f"{domain}::PythonOp", name_s=node.pyname(),
                          module_s=getattr(function_class, "__module__", ""))
    return _emit_node(g, node, args, f"{domain}::{op_name}")


def _emit_node(g: GraphContext, node, args: list[Any], name: str, **attributes: Any) -> Any:
    """Emit one unconverted node: constant arguments become Constant inputs, None an empty input."""
    inputs: list[ir.Value | None] = []
    for arg in args:
        if isinstance(arg, (list, tuple)) and any(isinstance(a, ir.Value) and a.rank not in (0, None) for a in arg):
            inputs.extend(arg)  # a tensor list: one input per tensor
        elif isinstance(arg, (list, tuple)) and any(isinstance(a, ir.Value) for a in arg):
            from exporter.lowering.core import to_int64_list_value

            inputs.append(to_int64_list_value(g, arg))
        elif isinstance(arg, str):
            inputs.append(g.const(np.array([arg], dtype=object)))
        elif isinstance(arg, (torch.device, torch.dtype, torch.layout, torch.memory_format)):
            inputs.append(None)  # placement and storage choices mean nothing to the runtime
        else:
            inputs.append(arg)
    count = node.outputsSize()
    return g.op(name, *inputs, outputs=count, **attributes)


def _schema_name(node) -> tuple[str, str]:
    try:
        schema = node.schema()
    except RuntimeError:
        schema = "(no schema)"
    if schema == "(no schema)":
        return node.kind().partition("::")[2], ""
    qualified = schema.partition("(")[0]
    base, _, overload = qualified.partition(".")
    return base.partition("::")[2], overload


def _infer_missing_shapes(g: GraphContext, node, new_nodes: list, result: Any) -> None:
    """Scripted code records no shapes: learn the ones symbolics need (ranks at least) from ONNX shape inference
    over just the nodes emitted for ``node``, when a result's shape is still unknown."""
    results = result if isinstance(result, (list, tuple)) else [result]
    if new_nodes and any(isinstance(v, ir.Value) and v.shape is None and v.kind == ir.TENSOR for v in results):
        from exporter.shape_inference import infer_local_shapes

        infer_local_shapes(new_nodes, g.opset, g.session.used_domains)


@functools.lru_cache(maxsize=4096)
def _scope_prefix(scope: str) -> str:
    """Node-name prefix from the module path: scope ``__module.model/.../__module.model.a.lin`` -> ``/a/lin/``."""
    from exporter.local_functions import instance_paths

    if not scope:
        return ""
    paths = instance_paths(scope)
    return f"/{paths[-1].replace('.', '/')}/" if paths else "/"


def _keep_in_place_type(g: GraphContext, kind: str, args: list[Any], result: Any) -> Any:
    """An in-place op writes into ``self``, so its result keeps ``self``'s type: ``half.add_(float)`` is half, where
    the functional form the symbolics share promotes to float."""
    if not (is_in_place(kind) and args and isinstance(args[0], ir.Value) and isinstance(result, ir.Value)):
        return result
    self_type = args[0].dtype
    if (self_type is None or result.dtype is None or result.dtype == self_type
            or ir.TENSOR != args[0].kind or result.kind != ir.TENSOR):
        return result
    out = g.op("Cast", result, to_i=self_type)
    out.dtype, out.shape, out.is_number = self_type, result.shape, result.is_number
    return out


def _known_arguments(node, args: list[Any]) -> list[Any] | None:
    """The arguments with which ``node`` is computed at export time, or None when its result is not known before
    run time: its arguments when all are constants; for ``self.new_zeros(size)`` and its kin, which read only
    ``self``'s element type, an empty tensor of that type in place of ``self``."""
    kind = node.kind()
    if not foldable_kind(kind):  # an aten:: node owns no blocks
        return None
    if kind in _FACTORIES_OF_SELF_TYPE and args and isinstance(args[0], ir.Value):
        if args[0].kind != ir.TENSOR or args[0].dtype not in dtypes.ONNX_TO_TORCH:
            return None
        args = [torch.empty(0, dtype=dtypes.torch_from_onnx(args[0].dtype)), *args[1:]]
    return args if all(is_constant(a) for a in args) else None


def _empty_results(node, args: list[Any]) -> tuple | None:
    """The outputs of an op on empty tensors, in a static export: when an input is empty and every output is a tensor
    whose recorded shape has zero elements, the result is an empty constant of that shape and dtype. None otherwise:
    in-place ops, ops inside blocks, and any op with an input whose size the trace recorded from data (only graph
    inputs, parameters and constants count, as a value computed by a node, such as nonzero's, may be empty only for
    the traced data).

    Folding them keeps ONNX from ever seeing an empty tensor reshaped with -1, normalized over, or gathered from, which
    its shape inference and ONNX Runtime reject although PyTorch defines them."""
    if not any_empty(args):  # first: nearly every node of nearly every model leaves here
        return None
    tensors = [a for arg in args for a in (arg if isinstance(arg, (list, tuple)) else (arg,))
               if isinstance(a, (ir.Value, torch.Tensor))]
    kind = node.kind()
    if not kind.startswith("aten::") or is_in_place(kind) or node.owningBlock().owningNode() is not None:
        return None
    if not all(_fixed_size(t) for t in tensors):
        return None
    results = []
    for output in outputs_of(node):
        kind_of_type = output.type()
        if kind_of_type.kind() != "TensorType":
            return None
        sizes, dtype = kind_of_type.sizes(), kind_of_type.dtype()
        if sizes is None or dtype is None or any(s is None for s in sizes) or 0 not in sizes:
            return None
        results.append(torch.empty(sizes, dtype=dtype))
    return tuple(results) if results else None


def _fixed_size(x: ir.Value | torch.Tensor) -> bool:
    """A constant, a parameter, or a graph input (whose sizes a static export fixes): never sized by traced data."""
    return isinstance(x, torch.Tensor) or x.const is not None or x.producer is None


def _evaluate_with_torch(node, args: list[Any]) -> Any:
    """Run a constant aten node eagerly; NOT_EVALUATED when PyTorch cannot (unknown overload, error)."""
    try:
        schema = node.schema()
    except RuntimeError:
        return NOT_EVALUATED
    op, keyword_only = _eager_op(schema)
    if op is None:
        return NOT_EVALUATED
    if is_in_place(node.kind()):
        if not (args and isinstance(args[0], torch.Tensor)):
            return NOT_EVALUATED
        args = [args[0].clone(), *args[1:]]  # the constant itself stays as it is (see _foldable_kind)
    positional = [value for value, keyword in zip(args, keyword_only, strict=True) if not keyword]
    keywords = {keyword: value for value, keyword in zip(args, keyword_only, strict=True) if keyword}
    try:
        with torch.no_grad():
            return op(*positional, **keywords)
    except Exception:
        return NOT_EVALUATED


@functools.lru_cache(maxsize=1024)
def _eager_op(schema: str) -> tuple[Any, tuple[str, ...]]:
    """The ATen overload a schema names (None when PyTorch has none), and for each argument its name where it is
    keyword-only, else '': ops such as aten::zeros take dtype/device by keyword only. Once per schema: parsing it
    costs more than running the op."""
    if schema == "(no schema)":
        return None, ()
    name, _, _ = schema.partition("(")
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base.split("::")[1], None)
    op = None if packet is None else getattr(packet, overload or "default", None)
    try:
        arguments = torch._C.parse_schema(schema).arguments
    except RuntimeError:
        return None, ()
    return op, tuple(argument.name if argument.kwarg_only else "" for argument in arguments)


def collect_unconvertible(nodes, opset: int, missing: list[str]) -> None:
    """Add to ``missing`` each op kind among ``nodes`` (and the blocks and traced autograd.Function subgraphs within)
    that has no symbolic at ``opset``: ``exporter.unconvertible_ops``."""
    for node in nodes:
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        if kind == PYTHON_OP and not REGISTRY.is_supported(kind, opset):
            if getattr(python_op_class(node), "symbolic", None) is None and node.hasAttribute("Subgraph"):
                collect_unconvertible(node.g("Subgraph").nodes(), opset, missing)
            continue
        if not REGISTRY.is_supported(kind, opset) and kind not in missing:
            missing.append(kind)
        for block in blocks_of(node):
            collect_unconvertible(block.nodes(), opset, missing)
