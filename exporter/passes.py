"""Graph optimizations on the in-memory ONNX graph: constant folding, identity removal, dead-code elimination,
Conv+BatchNormalization fusion, merging of Transposes and of nested Concats, common subexpression elimination, and
de-duplication of equal constants."""

from __future__ import annotations

import functools

import numpy as np
import onnx
from onnx import helper, numpy_helper

from exporter import dtypes, ir
from exporter.timing import StageTimes

_NON_DETERMINISTIC = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"}
)
# QDQ nodes stay one per reader, as ONNX Runtime's QDQ fusions (QLinearConv, QLinearAdd, ...) expect them: merged,
# they change what it fuses and so how it rounds (measured: quantized ShuffleNetV2 at opset 13 and ORT level "all"
# differs from PyTorch's quantized kernels by 0.12 with its DequantizeLinear nodes merged, and passes without).
_ONE_PER_READER = frozenset({"QuantizeLinear", "DequantizeLinear"})
# A quantized weight stays quantized: DequantizeLinear of a constant is the QDQ form in which ONNX Runtime runs
# integer kernels (QLinearConv, QLinearMatMul), whose results are PyTorch's quantized kernels' to the last step;
# folded, the weight is a float constant four times the size, computed in float (one step off in 6 % of a quantized
# conv's outputs). onnx.reference, which folding evaluates with, knows DequantizeLinear from opset 19 only: before
# this, quantized models changed form from 19 up.
_KEPT_QUANTIZED = frozenset({"DequantizeLinear"})
# Ops that onnx.reference (onnx 1.23) computes wrong below an opset, never folded there: its BatchNormalization-9
# (opsets 9-13) takes the schema's default momentum for a training run and normalizes with the batch's own
# statistics, where an inference BatchNormalization (one output) normalizes with the running ones.
_MISEVALUATED_BELOW = {"BatchNormalization": 14}
_MAX_FOLDED_ELEMENTS = 1 << 26
_SMALL_CONSTANT_BYTES = 4096
_INITIALIZER_MIN_BYTES = 4096


def optimize(graph: ir.Graph, opset: int, do_constant_folding: bool, fold_params: bool,
             keep_module_boundaries: bool = False, times: StageTimes | None = None) -> None:
    """Run the passes in place on the main graph and its subgraphs, timing each as stage ``pass:<name>``.

    ``keep_module_boundaries`` (modules exported as local functions) skips the rewrites that let a node read
    values from another module instance (shared constants, merged Transposes), which would change outlining.
    """
    times = times or StageTimes()

    def run(fn, *args, **kwargs):
        with times.stage(f"pass:{fn.__name__}"):
            fn(graph, *args, **kwargs)

    if do_constant_folding:
        run(fold_constants, opset, fold_params)
        if fold_params:
            run(fuse_conv_batchnorm)
    run(eliminate_identities)
    if not keep_module_boundaries:
        run(merge_transposes)
        run(merge_concats)
        if do_constant_folding:
            run(eliminate_common_subexpressions)
    run(remove_dead_nodes)
    if not keep_module_boundaries:
        run(deduplicate_constants)
    if opset < 9:
        run(hoist_constants, graph)
    elif do_constant_folding and not keep_module_boundaries:
        # Folded weights become initializers, as parameters are: tools (quantizers, optimizers) look for weights
        # there, and a tensor attribute would cost extra copies when the model is assembled.
        run(hoist_constants, graph, min_bytes=_INITIALIZER_MIN_BYTES)


def hoist_constants(graph: ir.Graph, main: ir.Graph, min_bytes: int = 0) -> None:
    """Turn Constant nodes into main-graph initializers (Constant only holds floats before opset 9).

    ``min_bytes`` hoists only constants at least that large (external data: large tensors must be initializers).
    """
    kept = []
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            hoist_constants(sub, main, min_bytes)
        payload = node.outputs[0].const if node.op_type == "Constant" and not node.domain else None
        if payload is not None and payload.nbytes >= min_bytes:
            value = node.outputs[0]
            if graph is not main and any(v is value for v in graph.outputs):
                kept.append(_identity_of_initializer(value, main))
                continue
            value.producer = None
            main.initializers.append(value)
            continue
        kept.append(node)
    graph.nodes = kept


def _identity_of_initializer(value: ir.Value, main: ir.Graph) -> ir.Node:
    """A subgraph output must come from a node of that subgraph: read the hoisted constant through Identity."""
    hoisted = ir.Value(f"{value.name}_hoisted", dtype=value.dtype, shape=value.shape, const=value.const)
    main.initializers.append(hoisted)
    identity = ir.Node("Identity", [hoisted], [value], name=f"{value.name}_identity")
    value.producer = identity
    return identity


def _is_known(value: ir.Value | None, fold_params: bool) -> bool:
    return value is None or (value.const is not None and (fold_params or not value.is_param))


def fold_constants(graph: ir.Graph, opset: int, fold_params: bool) -> None:
    """Replace nodes whose inputs are all constant by Constant nodes holding their results."""
    folded_nodes = []
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            fold_constants(sub, opset, fold_params)
        if (node.op_type == "Constant" or node.domain or node.op_type in _NON_DETERMINISTIC | _KEPT_QUANTIZED
                or opset < _MISEVALUATED_BELOW.get(node.op_type, 0)):
            folded_nodes.append(node)
            continue
        if graph.subgraphs_of(node) or any(v.kind in (ir.SEQUENCE, ir.OPTIONAL)
                                           for v in node.outputs + node.inputs if v is not None):
            folded_nodes.append(node)  # a sequence or an optional is no tensor: a Constant cannot hold it
            continue
        if not all(_is_known(v, fold_params) for v in node.inputs):
            folded_nodes.append(node)
            continue
        results = _evaluate(node, opset)
        if results is None:
            folded_nodes.append(node)
            continue
        for value, array in zip(node.outputs, results, strict=True):
            constant = ir.Node("Constant", [], [value], {"value": array}, name=f"{node.name}_folded")
            constant.attr_types = {"value": onnx.AttributeProto.TENSOR}
            value.producer = constant
            value.const = array
            value.dtype = dtypes.onnx_from_numpy(array.dtype)
            value.shape = tuple(array.shape)
            folded_nodes.append(constant)
    graph.nodes = folded_nodes


def _evaluate(node: ir.Node, opset: int) -> list[np.ndarray] | None:
    if any(v is not None and v.const is not None and v.const.size > _MAX_FOLDED_ELEMENTS for v in node.inputs):
        return None
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(node.inputs)]
    attrs = [helper.make_attribute(k, _attr_payload(v), attr_type=node.attr_types[k]) for k, v in node.attrs.items()]
    proto = helper.make_node(node.op_type, names, [f"o{k}" for k in range(len(node.outputs))])
    proto.attribute.extend(attrs)
    feeds = {n: np.asarray(v.const) for n, v in zip(names, node.inputs, strict=True) if v is not None}
    try:
        evaluator = _evaluator(proto.SerializeToString(), tuple((n, a.dtype.str) for n, a in feeds.items()), opset)
        results = evaluator.run(None, feeds)
    except Exception:
        return None
    return [np.asarray(r) for r in results]


@functools.lru_cache(maxsize=256)
def _evaluator(node_bytes: bytes, input_types: tuple, opset: int):
    """A ReferenceEvaluator of one node (its inputs typed, shapes free), built once for the many nodes of a graph
    that differ only in their constant inputs (each build costs more than the evaluation)."""
    from onnx.reference import ReferenceEvaluator

    proto = onnx.NodeProto.FromString(node_bytes)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.dtype(t)), None)
              for n, t in input_types]
    outputs = [helper.make_empty_tensor_value_info(n) for n in proto.output]
    # A model, not a bare node: only a model's opset import makes the evaluator pick the operator version of the
    # target opset (a bare node gets the latest, e.g. Unsqueeze-13, which rejects an axes attribute).
    model = helper.make_model(helper.make_graph([proto], "fold", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(model)


def _attr_payload(value):
    if isinstance(value, np.ndarray):
        return numpy_helper.from_array(value)
    return value


def fuse_conv_batchnorm(graph: ir.Graph) -> None:
    """Fold an inference BatchNormalization into the Conv that feeds it (new weight and bias initializers)."""
    users = ir.consumers(graph)
    outputs = {id(v) for v in graph.outputs}
    kept = []
    for node in graph.nodes:
        conv = _fusable_conv(node, users, outputs)
        if conv is None:
            kept.append(node)
            continue
        scale, shift, mean, var = (_constant_array(v).astype(np.float64) for v in node.inputs[1:5])
        factor = scale / np.sqrt(var + node.attrs.get("epsilon", 1e-5))
        weight_input = conv.inputs[1]
        assert weight_input is not None and weight_input.const is not None  # _fusable_conv found it constant
        weight = weight_input.const
        has_bias = len(conv.inputs) > 2 and conv.inputs[2] is not None
        bias = _constant_array(conv.inputs[2]) if has_bias else np.zeros(len(factor))
        # The weight's product is deferred to the writer, a chunk at a time, in the weight's precision (float32 at
        # least): a product made here would allocate a copy of every Conv weight (100 MB for resnet50, fresh pages
        # that cost more than the product), and a float64 product costs more still for at most one rounding step.
        if isinstance(weight, ir.RowScaled):
            fused_weight = weight.scaled(factor)
        else:
            fused_weight = ir.RowScaled(weight, factor.astype(np.promote_types(weight.dtype, np.float32)))
        fused_bias = ((bias - mean) * factor + shift).astype(weight.dtype)
        conv.inputs = [conv.inputs[0], _initializer(graph, weight_input, fused_weight, "fused_weight"),
                       _initializer(graph, weight_input, fused_bias, "fused_bias")]
        # The Conv now computes the normalized values: it takes over the BatchNormalization's output (its name, its
        # readers, its place among the graph outputs, its provenance).
        conv.outputs = [node.outputs[0]]
        node.outputs[0].producer = conv
    graph.nodes = kept


def deferred_seconds(graph: ir.Graph) -> float:
    """Seconds spent so far computing the graph's deferred constants (the products :func:`fuse_conv_batchnorm`
    leaves to the writer)."""
    return sum(v.const.seconds for v in graph.initializers if isinstance(v.const, ir.RowScaled))


def _fusable_conv(node: ir.Node, users: dict[int, list[ir.Node]], outputs: set[int]) -> ir.Node | None:
    if node.op_type != "BatchNormalization" or node.domain or len(node.outputs) != 1 or node.attrs.get("training_mode"):
        return None
    conv = node.inputs[0].producer if node.inputs[0] is not None else None
    if conv is None or conv.op_type != "Conv" or conv.domain or id(conv.outputs[0]) in outputs:
        return None
    if len(users.get(id(conv.outputs[0]), [])) != 1:
        return None
    constants = list(node.inputs[1:5]) + list(conv.inputs[1:])
    if not all(v is not None and v.const is not None for v in constants):
        return None
    return conv


def _constant_array(value: ir.Value | None) -> np.ndarray:
    """The payload of an operand that :func:`_fusable_conv` found constant."""
    if value is None or value.const is None:
        raise ValueError(f"{value!r} is not a constant")
    return np.asarray(value.const)


def _initializer(graph: ir.Graph, like: ir.Value, payload: np.ndarray | ir.RowScaled, suffix: str) -> ir.Value:
    value = ir.Value(f"{like.name}_{suffix}", like.dtype, tuple(payload.shape))
    value.const = payload
    graph.initializers.append(value)
    return value


def deduplicate_constants(graph: ir.Graph) -> None:
    """Let equal Constant nodes of one graph share the first one (symbolics emit the same indices many times)."""
    protected = {id(v) for v in graph.outputs}
    for node in graph.all_nodes():
        for sub in graph.subgraphs_of(node):
            protected.update(id(v) for v in sub.outputs)
    _deduplicate_in(graph, protected)


def _deduplicate_in(graph: ir.Graph, protected: set[int]) -> None:
    small: dict[tuple, ir.Value] = {}
    large: dict[tuple, list[tuple[ir.Value, np.ndarray]]] = {}  # each value with its payload
    replacements: dict[int, ir.Value] = {}
    kept = []
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            _deduplicate_in(sub, protected)
        value = node.outputs[0] if node.op_type == "Constant" and not node.domain else None
        payload = None if value is None or value.const is None else np.asarray(value.const)
        if value is None or payload is None or payload.dtype == object or id(value) in protected:
            kept.append(node)
            continue
        # Bytes, not values, decide equality: 0.0 and -0.0 differ, and equal NaN payloads may merge.
        key = (value.dtype, payload.dtype.str, payload.shape)
        if payload.nbytes <= _SMALL_CONSTANT_BYTES:
            twin = small.setdefault((*key, payload.tobytes()), value)
        else:  # large payloads: a sample of elements finds the candidates, a byte comparison confirms
            candidates = large.setdefault((*key, _sample(payload)), [])
            twin = next((c for c, c_payload in candidates if _same_bytes(c_payload, payload)), value)
            if twin is value:
                candidates.append((value, payload))
        if twin is value:
            kept.append(node)
        else:
            replacements[id(value)] = twin
    graph.nodes = kept
    if replacements:
        _rewire(graph, replacements)


def _sample(payload: np.ndarray, count: int = 64) -> bytes:
    """Bytes of ``count`` evenly spread elements: tells different weights apart without reading all of them."""
    return np.asarray(payload.flat[np.linspace(0, payload.size - 1, count, dtype=np.int64)]).tobytes()


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal payload bytes of two arrays of one dtype and shape (flattened: ascontiguousarray makes 0-d 1-d)."""
    flat_a, flat_b = (np.ascontiguousarray(x).reshape(-1).view(np.uint8) for x in (a, b))
    return np.array_equal(flat_a, flat_b)


def merge_transposes(graph: ir.Graph) -> None:
    """Read Transpose(Transpose(x)) as one Transpose of x with the composed permutation (none if it is identity).

    The inner Transpose is left to dead-code elimination once nothing else reads it.
    """
    outputs = {id(v) for v in graph.outputs}
    replacements: dict[int, ir.Value] = {}
    kept = []
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            merge_transposes(sub)
        source = node.inputs[0] if node.op_type == "Transpose" and not node.domain else None
        inner = source.producer if source is not None else None
        if inner is None or inner.op_type != "Transpose" or inner.domain or "perm" not in inner.attrs \
                or "perm" not in node.attrs or inner.inputs[0] is None:
            kept.append(node)
            continue
        perm = [inner.attrs["perm"][axis] for axis in node.attrs["perm"]]
        if perm == sorted(perm) and id(node.outputs[0]) not in outputs:
            replacements[id(node.outputs[0])] = inner.inputs[0]
            continue
        node.inputs = [inner.inputs[0]]
        node.attrs = {**node.attrs, "perm": perm}
        kept.append(node)
    graph.nodes = kept
    if replacements:
        _rewire(graph, replacements)


def merge_concats(graph: ir.Graph) -> None:
    """Read Concat(..., Concat(x, y), ...) along one axis as Concat(..., x, y, ...) where the inner Concat has no
    other reader (``torch.cat`` of a ``torch.cat``: Inception's blocks).

    The inner Concat is left to dead-code elimination.
    """
    readers = ir.consumers(graph)
    outputs = {id(v) for v in graph.outputs}
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            merge_concats(sub)
        if node.op_type == "Concat" and not node.domain:
            node.inputs = [part for value in node.inputs for part in _concatenated_parts(node, value, readers, outputs)]


def _concatenated_parts(concat: ir.Node, value: ir.Value | None, readers: dict[int, list[ir.Node]],
                        outputs: set[int]) -> list:
    """The inputs of the Concat that makes ``value``, when ``concat`` is its one reader and joins along its axis;
    else ``value`` alone."""
    inner = value.producer if value is not None else None
    if (inner is None or inner.op_type != "Concat" or inner.domain or len(readers.get(id(value), [])) != 1
            or id(value) in outputs or _concat_axis(inner) is None or _concat_axis(inner) != _concat_axis(concat)):
        return [value]
    return [part for inner_value in inner.inputs for part in _concatenated_parts(inner, inner_value, readers, outputs)]


def _concat_axis(node: ir.Node) -> int | None:
    """The Concat's axis counted from the front (None where a negative axis meets an unknown rank)."""
    axis = node.attrs.get("axis")
    if axis is None or axis >= 0:
        return axis
    rank = node.outputs[0].rank
    return None if rank is None else axis + rank


def eliminate_common_subexpressions(graph: ir.Graph) -> None:
    """Let a node that computes what an earlier node of its graph computes (one op, equal attributes, the same
    input values) read that node's outputs instead. Symbolics recompute shapes and their pieces for each use
    (Shape -> Gather -> Unsqueeze per dimension read: 24 Shape nodes in a 4-layer BERT); ONNX values are immutable,
    so the first computation serves every reader. Random ops, custom domains, nodes with subgraphs and QDQ nodes
    (``_ONE_PER_READER``) keep their own nodes, as does a node whose output is a graph output. The duplicate is left to dead-code elimination."""
    outputs = {id(v) for v in graph.outputs}
    seen: dict[tuple, ir.Node] = {}
    replacements: dict[int, ir.Value] = {}
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            eliminate_common_subexpressions(sub)
        key = _expression_key(graph, node, replacements)
        if key is None:
            continue
        twin = seen.setdefault(key, node)
        if twin is not node and not any(id(v) in outputs for v in node.outputs):
            replacements.update((id(mine), theirs) for mine, theirs in zip(node.outputs, twin.outputs, strict=True))
    if replacements:
        _rewire(graph, replacements)


def _expression_key(graph: ir.Graph, node: ir.Node, replacements: dict[int, ir.Value]) -> tuple | None:
    """What ``node`` computes, as a key (None for a node that must keep its own outputs): its op, attributes, and
    input values (each read through the replacements found so far, so chains of duplicates merge)."""
    if (node.domain or node.op_type in _NON_DETERMINISTIC or node.op_type in _ONE_PER_READER
            or node.op_type == "Constant" or graph.subgraphs_of(node)):
        return None
    attrs = []
    for name, value in sorted(node.attrs.items()):
        if isinstance(value, np.ndarray):
            value = (value.dtype.str, value.shape, value.tobytes())
        elif isinstance(value, list):
            value = tuple(value)
        attrs.append((name, node.attr_types.get(name), value))
    inputs = tuple(None if v is None else id(replacements.get(id(v), v)) for v in node.inputs)
    try:
        key = (node.op_type, len(node.outputs), inputs, tuple(attrs))
        hash(key)
    except TypeError:  # an attribute of a kind with no value equality (a graph, a list of tensors): kept apart
        return None
    return key


def eliminate_identities(graph: ir.Graph) -> None:
    """Drop Identity nodes whose output is not a graph output, reading their input directly instead."""
    outputs = {id(v) for v in graph.outputs}
    replacements: dict[int, ir.Value] = {}
    kept = []
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            eliminate_identities(sub)
        if node.op_type == "Identity" and not node.domain and id(node.outputs[0]) not in outputs \
                and node.inputs[0] is not None:
            source = node.inputs[0]
            replacements[id(node.outputs[0])] = replacements.get(id(source), source)
            continue
        kept.append(node)
    graph.nodes = kept
    if replacements:
        _rewire(graph, replacements)


def _rewire(graph: ir.Graph, replacements: dict[int, ir.Value]) -> None:
    for node in graph.all_nodes():
        node.inputs = [replacements.get(id(v), v) if v is not None else None for v in node.inputs]
    for sub_node in graph.all_nodes():
        for sub in graph.subgraphs_of(sub_node):
            sub.outputs = [replacements.get(id(v), v) for v in sub.outputs]


def remove_dead_nodes(graph: ir.Graph) -> None:
    """Remove nodes (and initializers) that no graph output depends on; subgraph reads count as uses."""
    live: set[int] = {id(v) for v in graph.outputs}
    kept: list[ir.Node] = []
    for node in reversed(graph.nodes):
        if any(id(v) in live for v in node.outputs):
            kept.append(node)
            for value in _reads(graph, node):
                live.add(id(value))
    graph.nodes = list(reversed(kept))
    for node in graph.nodes:
        for sub in graph.subgraphs_of(node):
            remove_dead_nodes(sub)
    graph.initializers = [v for v in graph.initializers if id(v) in live]


def used_values(graph: ir.Graph) -> set[int]:
    """ids of the values some node (subgraphs included) reads, or that are outputs of ``graph``."""
    used = {id(v) for v in graph.outputs}
    for node in graph.nodes:
        used.update(id(v) for v in _reads(graph, node))
    return used


def _reads(graph: ir.Graph, node: ir.Node):
    for value in node.inputs:
        if value is not None:
            yield value
    for sub in graph.subgraphs_of(node):
        for inner in sub.all_nodes():
            for value in inner.inputs:
                if value is not None:
                    yield value
        yield from sub.outputs
