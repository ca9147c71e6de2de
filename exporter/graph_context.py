"""The ``g`` handed to every symbolic: emits ONNX nodes into the graph under construction.

``g.op("Name", *inputs, alpha_f=1.0, axes_i=[0], value_t=tensor, outputs=2)`` follows the documented
attribute-suffix convention (``_i`` int, ``_f`` float, ``_s`` string, ``_t`` tensor, ``_g`` graph, and the
list forms ``_is``/``_fs``/``_ss``); ``"domain::Name"`` emits into a custom domain.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from onnx import AttributeProto, TensorProto

from exporter import dtypes, ir
from exporter.errors import UnsupportedOperatorError
from exporter.lowering.runtime import missing_kernel

_SUFFIX_TYPES = {
    "i": AttributeProto.INT,
    "f": AttributeProto.FLOAT,
    "s": AttributeProto.STRING,
    "t": AttributeProto.TENSOR,
    "g": AttributeProto.GRAPH,
    "is": AttributeProto.INTS,
    "fs": AttributeProto.FLOATS,
    "ss": AttributeProto.STRINGS,
}

# Ops whose output element type is fixed or follows an attribute; everything else follows its first input.
_BOOL_OUTPUT_OPS = frozenset(
    {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf",
     "OptionalHasElement"}
)
_INT64_OUTPUT_OPS = frozenset({"Shape", "Size", "ArgMax", "ArgMin", "NonZero", "NonMaxSuppression"})


class NodeFacts:
    """What a symbolic may ask about the op it converts beyond its arguments' values, answered by the front end
    that captured the graph (``exporter.frontends.torchscript.facts.TorchScriptFacts``,
    ``exporter.frontends.export.facts.FxFacts``). ``node`` is the front end's own node; a symbolic never reads it, only these answers (through its
    :class:`GraphContext`)."""

    def kind(self, node) -> str:
        """The op as "namespace::name" (``aten::add``)."""
        raise NotImplementedError

    def overload(self, node) -> str:
        """The schema's overload name ("Tensor", "out", "" for the default one)."""
        raise NotImplementedError

    def argument_names(self, node) -> list[str]:
        """The schema's argument names, in the order the symbolic receives its arguments."""
        raise NotImplementedError

    def input_count(self, node) -> int:
        """How many arguments the symbolic receives (every schema argument, defaults included)."""
        raise NotImplementedError

    def input_type(self, node, index: int) -> str:
        """The type of argument ``index`` as the schema spells it ("Tensor", "int[]", "Device", "NoneType" for an
        argument given as None)."""
        raise NotImplementedError

    def input_layout(self, node, index: int) -> tuple[tuple | None, tuple | None]:
        """(sizes, strides) the capture recorded for tensor argument ``index`` (None where unknown)."""
        raise NotImplementedError

    def input_storage_offset(self, node, index: int) -> int | None:
        """Where tensor argument ``index`` starts in its storage, as the capture recorded it (None where unknown)."""
        raise NotImplementedError

    def input_producer(self, node, index: int) -> tuple[str, str]:
        """(kind, overload) of the op that computed argument ``index`` (kind "" for a graph input or constant)."""
        raise NotImplementedError

    def input_is_size_of(self, node, index: int, of_index: int, dim: int) -> bool:
        """Whether argument ``index`` is ``size(dim)`` of argument ``of_index`` (through int/tensor conversions)."""
        raise NotImplementedError

    def output_count(self, node) -> int:
        raise NotImplementedError

    def output_type(self, node, index: int, static_shapes: bool) -> tuple[int | None, tuple | None]:
        """(ONNX element type, shape) the capture recorded for output ``index``; dims are None unless static."""
        raise NotImplementedError

    def output_readers(self, node, index: int) -> list[tuple[str, str, int]]:
        """The ops that read output ``index``: (kind, overload, argument position) each."""
        raise NotImplementedError

    def output_is_quantized(self, node, index: int) -> bool:
        """Whether output ``index`` holds quantized tensors (a tensor or a list of them)."""
        raise NotImplementedError

    def output_is_optional(self, node, index: int) -> bool:
        """Whether output ``index`` is typed Optional (may be None at run time)."""
        raise NotImplementedError

    def list_output_length(self, node, index: int) -> int | None:
        """How many tensors the list that output ``index`` returns holds, where the capture knows it."""
        raise NotImplementedError


@dataclass
class ExportSession:
    """State shared by every graph context of one export."""

    opset: int
    static_shapes: bool = True
    training: bool = False
    # Parameters may be folded into new constants (do_constant_folding in eval mode): a symbolic may then compute a
    # constant from them itself, instead of emitting nodes that constant folding would evaluate.
    fold_params: bool = False
    operator_export_type: Any = None
    custom_opsets: dict[str, int] = field(default_factory=dict)
    convert_block: Callable | None = None  # set by the converter: (g, ts_block, input_values) -> ir.Graph
    inline_block: Callable | None = None  # set by the converter: (g, ts_block, inputs) -> block results
    _counter: Any = field(default_factory=lambda: itertools.count())
    used_domains: set[str] = field(default_factory=set)
    facts: NodeFacts | None = None  # set by the front end's driver: what symbolics may ask about its nodes
    workarounds: frozenset[str] | None = None  # runtime workarounds enabled (None: all); see exporter/lowering/runtime.py
    used_workarounds: set[str] = field(default_factory=set)  # the ones this export's model depends on
    translations: Any = None  # the caller's custom_translation_table (exporter/custom_translation.py), this export's

    def fresh_name(self, hint: str) -> str:
        return f"{hint}_{next(self._counter)}"


class GraphContext:
    """Emits nodes into ``graph``; one context per (sub)graph under construction."""

    def __init__(self, session: ExportSession, graph: ir.Graph):
        self.session = session
        self.graph = graph
        self.node: Any = None  # the captured node being converted (the front end's own; symbolics ask through facts)
        self.scope = ""

    # -- basic facts -------------------------------------------------------------------------------------
    @property
    def opset(self) -> int:
        return self.session.opset

    @property
    def static_shapes(self) -> bool:
        return self.session.static_shapes

    @property
    def training(self) -> bool:
        return self.session.training

    # -- the op being converted, as its front end recorded it -------------------------------------------------------
    @property
    def _facts(self) -> NodeFacts:
        facts = self.session.facts
        if facts is None:
            raise RuntimeError("the session has no node facts: its front end's driver sets them before converting")
        return facts

    @property
    def op_kind(self) -> str:
        """The op being converted ("aten::add"), for dispatch on a shared symbolic and for error texts."""
        return self._facts.kind(self.node) if self.node is not None else "this op"

    @property
    def overload(self) -> str:
        return self._facts.overload(self.node)

    def has_argument(self, name: str) -> bool:
        """Whether the op's schema has an argument called ``name`` (which overload this is)."""
        return name in self._facts.argument_names(self.node)

    def argument(self, args: Any, name: str) -> Any:
        """The value of the schema argument called ``name`` among ``args`` (all of them, from the first); None if
        the schema has none."""
        # not strict: a call may leave trailing arguments with defaults out
        for argument, value in zip(self._facts.argument_names(self.node), args, strict=False):
            if argument == name:
                return value
        return None

    @property
    def input_count(self) -> int:
        return self._facts.input_count(self.node)

    def input_type(self, index: int) -> str:
        return self._facts.input_type(self.node, index)

    def input_layout(self, index: int = 0) -> tuple[tuple | None, tuple | None]:
        return self._facts.input_layout(self.node, index)

    def input_storage_offset(self, index: int = 0) -> int | None:
        return self._facts.input_storage_offset(self.node, index)

    def input_producer(self, index: int) -> tuple[str, str]:
        return self._facts.input_producer(self.node, index)

    def input_is_size_of(self, index: int, of_index: int, dim: int) -> bool:
        return self._facts.input_is_size_of(self.node, index, of_index, dim)

    @property
    def output_count(self) -> int:
        return self._facts.output_count(self.node)

    def output_dtype(self, index: int = 0) -> int | None:
        """The element type the capture recorded for output ``index``."""
        return self._facts.output_type(self.node, index, True)[0]

    def output_shape(self, index: int = 0) -> tuple | None:
        return self._facts.output_type(self.node, index, self.static_shapes)[1]

    def output_readers(self, index: int = 0) -> list[tuple[str, str, int]]:
        return self._facts.output_readers(self.node, index)

    def output_used(self, index: int = 0) -> bool:
        return bool(self.output_readers(index))

    def output_is_quantized(self, index: int = 0) -> bool:
        return self._facts.output_is_quantized(self.node, index)

    def output_is_optional(self, index: int = 0) -> bool:
        return self._facts.output_is_optional(self.node, index)

    def list_output_length(self, index: int = 0) -> int | None:
        return self._facts.list_output_length(self.node, index)

    def subcontext(self, graph: ir.Graph) -> GraphContext:
        sub = GraphContext(self.session, graph)
        sub.node = self.node
        sub.scope = self.scope
        return sub

    # -- node emission -----------------------------------------------------------------------------------
    def op(self, name: str, *inputs: Any, outputs: int = 1, **attributes: Any):
        """Append an ONNX node and return its output value (or a tuple of them when ``outputs > 1``)."""
        domain, _, op_type = name.rpartition("::")
        if domain in ("onnx", "ai.onnx"):
            domain = ""
        if domain:
            self.session.used_domains.add(domain)
        elif (gap := missing_kernel(op_type, self.opset)) is not None:
            raise UnsupportedOperatorError(self.op_kind, self.opset, reason=gap)
        in_values = [None if x is None else self.value(x) for x in inputs]
        attrs, attr_types = _parse_attributes(attributes)
        out_values = [ir.Value(self.session.fresh_name(op_type)) for _ in range(outputs)]
        node = ir.Node(
            op_type, in_values, out_values, attrs, domain=domain, name=self.session.fresh_name(f"{self.scope}{op_type}")
        )
        node.attr_types = attr_types
        for value in out_values:
            value.producer = node
        if outputs == 1:
            out_values[0].dtype = _infer_dtype(op_type, domain, in_values, attrs)
        elif not domain:
            # not strict: the types known may be fewer than the outputs asked for, or an endless repeat
            for value, dtype in zip(out_values, _infer_dtypes(op_type, in_values), strict=False):
                value.dtype = dtype
        self.graph.nodes.append(node)
        return out_values[0] if outputs == 1 else tuple(out_values)

    def const(self, payload: Any, dtype: torch.dtype | int | None = None) -> ir.Value:
        """A Constant node holding ``payload`` (a Python scalar or list, numpy array or torch tensor)."""
        array = _to_array(payload, dtype)
        value = self.op("Constant", value_t=array)
        value.const = array
        value.dtype = dtypes.onnx_from_numpy(array.dtype)
        value.shape = tuple(array.shape)
        return value

    def value(self, x: Any, dtype: torch.dtype | int | None = None) -> ir.Value:
        """``x`` as a graph value: values pass through, Python and tensor constants become Constant nodes."""
        if isinstance(x, ir.Value):
            return x
        if x is None:
            raise TypeError("None cannot be used as a tensor input")
        return self.const(x, dtype)

    # -- type facts --------------------------------------------------------------------------------------
    def dtype(self, x: Any) -> int | None:
        """The ONNX element type of a value or constant (Python ints are int64, floats float32)."""
        if isinstance(x, ir.Value):
            return x.dtype
        if isinstance(x, torch.Tensor):
            return dtypes.onnx_from_torch(x.dtype)
        if isinstance(x, bool):
            return TensorProto.BOOL
        if isinstance(x, int):
            return TensorProto.INT64
        if isinstance(x, float):
            return TensorProto.FLOAT
        if isinstance(x, np.ndarray):
            return dtypes.onnx_from_numpy(x.dtype)
        return None

    def rank(self, x: Any) -> int | None:
        if isinstance(x, ir.Value):
            return x.rank
        if isinstance(x, (torch.Tensor, np.ndarray)):
            return x.ndim
        if isinstance(x, (int, float, bool)):
            return 0
        return None

    def shape(self, x: Any) -> tuple | None:
        if isinstance(x, ir.Value):
            return x.shape
        if isinstance(x, (torch.Tensor, np.ndarray)):
            return tuple(x.shape)
        return ()

    def dims(self, x: Any) -> list | None:
        """Per-dim sizes that may be baked into the graph: ints where known, None or a name where not."""
        if isinstance(x, ir.Value) and x.const is None and not self.static_shapes:
            shape = self.inferred_shape(x)
            if shape is None and x.shape is not None:  # ONNX inference lost it; the rank still holds
                shape = tuple(None for _ in x.shape)
        else:
            shape = self.shape(x)
        return None if shape is None else [d if isinstance(d, int) else None for d in shape]

    def static_dims(self, x: Any) -> list[int] | None:
        """The full shape as ints when every dim is known and may be baked in; else None."""
        dims = self.dims(x)
        if dims is None or any(d is None for d in dims):
            return None
        return dims

    def inferred_shape(self, x: ir.Value) -> tuple | None:
        """Shape of ``x`` from ONNX shape inference over the graph built so far; symbolic dims are str."""
        if x.producer is None or self.graph.parent is not None:
            return x.shape  # inside a subgraph: what the symbolics and local inference recorded
        if not x.shape_inferred:
            from exporter.shape_inference import infer_value_shape

            infer_value_shape(self.graph, x, self.opset, self.session.used_domains)
        return x.inferred_shape

    def set_type(self, value: ir.Value, dtype: int | None = None, shape: tuple | None = None) -> ir.Value:
        if dtype is not None:
            value.dtype = dtype
        if shape is not None:
            value.shape = tuple(shape)
        return value

    # -- subgraphs -----------------------------------------------------------------------------------------
    def convert_block(self, block, input_values: list[ir.Value], name: str) -> ir.Graph:
        """Convert a TorchScript block into an ONNX subgraph whose inputs are ``input_values``."""
        if self.session.convert_block is None:
            raise RuntimeError("this front end's driver converts no TorchScript blocks")
        return self.session.convert_block(self, block, input_values, name)

    def inline_block(self, block, inputs: list[Any]) -> list[Any]:
        """Convert a TorchScript block into this graph (no subgraph) and return its results."""
        if self.session.inline_block is None:
            raise RuntimeError("this front end's driver converts no TorchScript blocks")
        return self.session.inline_block(self, block, inputs)


def _to_array(payload: Any, dtype: torch.dtype | int | None) -> np.ndarray:
    if isinstance(payload, torch.Tensor):
        tensor = payload.detach().cpu()
        if dtype is not None:
            tensor = tensor.to(dtype if isinstance(dtype, torch.dtype) else dtypes.torch_from_onnx(dtype))
        return dtypes.tensor_to_numpy(tensor).copy()
    if isinstance(payload, np.ndarray):
        array = payload
    elif dtype is not None and (
        isinstance(payload, float) or (isinstance(payload, (list, tuple)) and any(isinstance(p, float) for p in payload))
    ):
        # Straight to the target type: a detour through float32 would round double constants (0.1, pi).
        elem = dtype if isinstance(dtype, int) else dtypes.onnx_from_torch(dtype)
        array = np.array(payload, dtype=dtypes.numpy_from_onnx(elem))
    elif isinstance(payload, bool) or (isinstance(payload, (list, tuple)) and payload and isinstance(payload[0], bool)):
        array = np.array(payload, dtype=np.bool_)
    elif isinstance(payload, (list, tuple)) and any(isinstance(p, float) for p in payload):
        array = np.array(payload, dtype=np.float32)
    elif isinstance(payload, (list, tuple)):
        array = np.array(payload, dtype=np.int64)
    elif isinstance(payload, int):
        array = np.array(payload, dtype=np.int64)
    elif isinstance(payload, float):
        array = np.array(payload, dtype=np.float32)
    else:
        array = np.asarray(payload)
    if dtype is not None:
        elem = dtype if isinstance(dtype, int) else dtypes.onnx_from_torch(dtype)
        array = array.astype(dtypes.numpy_from_onnx(elem))
    # np.ascontiguousarray turns 0-d arrays into 1-d ones; keep scalars scalar.
    return np.ascontiguousarray(array).reshape(array.shape)


def _parse_attributes(attributes: dict[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    attrs: dict[str, Any] = {}
    types: dict[str, int] = {}
    for key, raw in attributes.items():
        if raw is None:
            continue
        name, _, suffix = key.rpartition("_")
        if suffix not in _SUFFIX_TYPES or not name:
            name, attr_type = key, _infer_attribute_type(raw)
        else:
            attr_type = _SUFFIX_TYPES[suffix]
            if attr_type == AttributeProto.INT and isinstance(raw, (list, tuple)):
                attr_type = AttributeProto.INTS
            elif attr_type == AttributeProto.FLOAT and isinstance(raw, (list, tuple)):
                attr_type = AttributeProto.FLOATS
            elif attr_type == AttributeProto.STRING and isinstance(raw, (list, tuple)):
                attr_type = AttributeProto.STRINGS
        attrs[name] = _coerce_attribute(raw, attr_type)
        types[name] = attr_type
    return attrs, types


def _infer_attribute_type(raw: Any) -> int:
    if isinstance(raw, bool) or isinstance(raw, int):
        return AttributeProto.INT
    if isinstance(raw, float):
        return AttributeProto.FLOAT
    if isinstance(raw, str):
        return AttributeProto.STRING
    if isinstance(raw, (torch.Tensor, np.ndarray)):
        return AttributeProto.TENSOR
    if isinstance(raw, ir.Graph):
        return AttributeProto.GRAPH
    if isinstance(raw, (list, tuple)):
        if all(isinstance(x, (int, bool)) for x in raw):
            return AttributeProto.INTS
        if all(isinstance(x, (int, float)) for x in raw):
            return AttributeProto.FLOATS
        if all(isinstance(x, str) for x in raw):
            return AttributeProto.STRINGS
    raise TypeError(f"cannot infer the ONNX attribute type of {raw!r}")


def _coerce_attribute(raw: Any, attr_type: int) -> Any:
    if attr_type == AttributeProto.INT:
        return int(raw)
    if attr_type == AttributeProto.FLOAT:
        return float(raw)
    if attr_type == AttributeProto.STRING:
        return str(raw)
    if attr_type == AttributeProto.INTS:
        return [int(x) for x in raw]
    if attr_type == AttributeProto.FLOATS:
        return [float(x) for x in raw]
    if attr_type == AttributeProto.STRINGS:
        return [str(x) for x in raw]
    if attr_type == AttributeProto.TENSOR:
        return _to_array(raw, None)
    return raw


# Multi-output ONNX ops: the element type of each output, "in" for the first input's.
_MULTI_OUTPUT_TYPES = {
    "Split": None,  # every output: the input's
    "TopK": ("in", TensorProto.INT64),
    "Unique": ("in", TensorProto.INT64, TensorProto.INT64, TensorProto.INT64),
    "MaxPool": ("in", TensorProto.INT64),
    "LSTM": None,
    "GRU": None,
    "RNN": None,
}


def _infer_dtypes(op_type: str, inputs: list[ir.Value | None]):
    """The element types of a multi-output ONNX op's outputs, as far as the op alone tells them."""
    if op_type not in _MULTI_OUTPUT_TYPES:
        return ()
    first = inputs[0].dtype if inputs and inputs[0] is not None else None
    kinds = _MULTI_OUTPUT_TYPES[op_type]
    if kinds is None:
        return itertools.repeat(first)
    return tuple(first if kind == "in" else kind for kind in kinds)


def _infer_dtype(op_type: str, domain: str, inputs: list[ir.Value | None], attrs: dict[str, Any]) -> int | None:
    if domain:
        return None
    if op_type in _BOOL_OUTPUT_OPS:
        return TensorProto.BOOL
    if op_type in _INT64_OUTPUT_OPS:
        return TensorProto.INT64
    if op_type == "Cast":
        return attrs.get("to")
    if op_type in ("Constant", "ConstantOfShape"):
        value = attrs.get("value")
        return dtypes.onnx_from_numpy(value.dtype) if value is not None else TensorProto.FLOAT
    if op_type in ("Where",) and len(inputs) > 1 and inputs[1] is not None:
        return inputs[1].dtype
    if op_type in ("EyeLike", "RandomNormalLike", "RandomUniformLike") and "dtype" in attrs:
        return attrs["dtype"]
    if op_type in ("Range",):
        return inputs[0].dtype if inputs and inputs[0] is not None else None
    first = next((v for v in inputs if v is not None), None)
    return first.dtype if first is not None else None
