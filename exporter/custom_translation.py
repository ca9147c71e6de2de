"""``custom_translation_table``: onnxscript functions that convert chosen torch ops in one export, as torch.onnx's
``export(..., custom_translation_table=...)`` takes them.

The table maps an op overload (``torch.ops.aten.add.Tensor``, a custom op's ``torch.ops.mylib.foo.default``), an
op overload packet (every overload of it) or a Python operator torch.export records (``operator.floordiv``) to an
onnxscript function or a list of them. Each call of the op is converted by calling the function, and what it builds
is emitted into our graph, inlined at the export's opset:

- a plain Python function or a ``TracedOnnxFunction`` (torchlib's trace-only form) is called with our values; each
  ``op.X(...)`` it calls lands in :class:`_Recorder`, which emits one node (attributes as our attribute values);
- an ``@onnxscript.script()`` function (``OnnxFunction``) is inlined from its FunctionProto: its nodes, with its
  attribute parameters replaced by the values of the call, the functions it calls inlined in turn, and the graphs of
  its If/Loop nodes as our subgraphs.

Inlining rather than a model-local function: local functions need IR version 8 (opset 15), and the export may be at
any opset from 7; the optimizer sees the nodes as any others. A default-domain op of a function written against
another opset than the export's (``opset18`` at opset 13 or 20) is used where it means the same at the export's opset
(its versions in between only added types, or optional attributes that keep the old defaults:
``exporter/lowering/definitions.py``); otherwise the export stops, naming the op and both versions. torch.onnx instead
stamps the node with the model's opset, and returns a model that onnx.checker and ONNX Runtime reject (ReduceSum-11's
``axes`` attribute at opset 18) or that computes the newer version's semantics. The table applies to one export only:
the op library's registry is never changed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnx.shape_inference
import torch

from exporter import dtypes, ir
from exporter.errors import ExportArgumentError, SymbolicValueError, UnsupportedOperatorError
from exporter.lowering.definitions import check_same_definition

_SUFFIX: dict[int, str] = {onnx.AttributeProto.INT: "i", onnx.AttributeProto.FLOAT: "f", onnx.AttributeProto.STRING: "s",
           onnx.AttributeProto.TENSOR: "t", onnx.AttributeProto.GRAPH: "g", onnx.AttributeProto.INTS: "is",
           onnx.AttributeProto.FLOATS: "fs", onnx.AttributeProto.STRINGS: "ss"}


class TranslationTable:
    """The caller's table, checked once per export: op name (``aten::add.Tensor``, ``aten::add`` for a packet) or
    Python operator -> the functions to try, in order."""

    def __init__(self, table: Mapping[Any, Any]):
        if not isinstance(table, Mapping):
            raise ExportArgumentError("custom_translation_table must be a dict from torch ops to onnxscript functions, "
                                      f"got {type(table).__name__}")
        self._by_name: dict[str, list[Callable]] = {}
        self._by_operator: dict[Any, list[Callable]] = {}
        self.overloads: set[torch._ops.OpOverload] = set()
        for target, functions in table.items():
            functions = list(functions) if isinstance(functions, (list, tuple)) else [functions]
            if not functions or not all(callable(f) for f in functions):
                raise ExportArgumentError(f"custom_translation_table[{target!r}] must be an onnxscript function or a "
                                          f"non-empty list of them, got {table[target]!r}")
            if isinstance(target, torch._ops.OpOverload):
                self._by_name[target.name()] = functions
                self.overloads.add(target)
            elif isinstance(target, torch._ops.OpOverloadPacket):
                self._by_name[target._qualified_op_name] = functions
                self.overloads.update(getattr(target, name) for name in target.overloads())
            elif callable(target) and getattr(target, "__module__", None) in ("_operator", "math", "torch"):
                self._by_operator[target] = functions
            else:
                raise ExportArgumentError("custom_translation_table keys are torch op overloads (torch.ops.aten.add."
                                          f"Tensor), overload packets or Python operators, got {target!r}")

    def functions_for(self, target: Any, name: str) -> list[Callable] | None:
        """The functions for a call of ``target`` (an FX target; None for a TorchScript node) whose schema name is
        ``name`` ("aten::add.Tensor", "custom::add" for a default overload)."""
        found = self._by_operator.get(target) if target is not None and not isinstance(
            target, torch._ops.OpOverload) else None
        return found or self._by_name.get(name) or self._by_name.get(name.partition(".")[0])

    def symbolic(self, target: Any, name: str) -> Callable | None:
        """A symbolic ``(g, *schema_arguments)`` for the call, or None when the table has no entry for it."""
        functions = self.functions_for(target, name)
        if functions is None:
            return None
        return lambda g, *args: translate(g, functions, list(args))


def as_table(table: Mapping[Any, Any] | None) -> TranslationTable | None:
    return None if table is None else TranslationTable(table)


# -- one call ---------------------------------------------------------------------------------------------------
def translate(g, functions: list[Callable], schema_args: list[Any]) -> Any:
    """The results of the first function of ``functions`` that fits the call (by its annotated input types), called
    on the op's arguments as torch.onnx passes them: the positional ones, then the keyword-only ones by name."""
    positional, keywords = _call_arguments(g, schema_args)
    function = _pick(g, functions, positional)
    positional, keywords = _fitted(g, function, positional, keywords)
    from onnxscript import evaluator  # only exports with a table import onnxscript

    recorder = _Recorder(g)
    with evaluator.default_as(recorder):
        if _is_script_function(function):
            result = recorder.eval_function(function, positional, keywords)
        else:
            result = function(*[_wrap(a) for a in positional], **{k: _wrap(v) for k, v in keywords.items()})
    return _unwrapped_results(g, result)


def _call_arguments(g, schema_args: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    schema = _schema(g)
    arguments = list(schema.arguments) if schema is not None else []
    positional, keywords = [], {}
    for index, value in enumerate(schema_args):
        argument = arguments[index] if index < len(arguments) else None
        if argument is not None and str(argument.type).startswith("ScalarType") and isinstance(value, int):
            value = dtypes.onnx_from_torch(dtypes.torch_dtype_from_code(value))  # torch.onnx passes ONNX element types
        if argument is not None and argument.kwarg_only:
            keywords[argument.name] = value
        else:
            positional.append(value)
    return positional, keywords


def _schema(g):
    """The schema of the op being converted, from PyTorch's op registry (None for an op it does not hold)."""
    namespace, _, name = g.op_kind.partition("::")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), g.overload or "default")._schema
    except (AttributeError, RuntimeError):
        return None


def _fitted(g, function: Callable, positional: list[Any], keywords: dict[str, Any]):
    """The call's arguments cut to what ``function`` takes: a trailing argument or a keyword it has no parameter for
    is dropped when it holds the schema's default, else the call is refused (torch.onnx drops it silently, and the
    function then computes the op without it)."""
    try:
        signature = inspect.signature(_python_function(function))
    except (TypeError, ValueError):
        return positional, keywords
    parameters = list(signature.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        capacity = len(positional)
    else:
        capacity = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    takes_any_keyword = any(p.kind == p.VAR_KEYWORD for p in parameters)
    schema = _schema(g)
    defaults = _schema_defaults(schema)
    names = [argument.name for argument in schema.arguments] if schema is not None else []
    for index in range(capacity, len(positional)):
        name = names[index] if index < len(names) else f"#{index}"
        _check_dropped(g, function, name, positional[index], defaults)
    kept = {}
    for name, value in keywords.items():
        if takes_any_keyword or name in signature.parameters:
            kept[name] = value
        else:
            _check_dropped(g, function, name, value, defaults)
    return positional[:capacity], kept


def _check_dropped(g, function, name: str, value: Any, defaults: dict[str, Any]) -> None:
    if name in defaults and _same(value, defaults[name]):
        return
    raise SymbolicValueError(f"{g.op_kind}: the custom_translation_table function {_name_of(function)} takes no "
                             f"argument {name!r}, which this call passes ({value!r}, not its default)")


def _schema_defaults(schema) -> dict[str, Any]:
    return {} if schema is None else {a.name: a.default_value for a in schema.arguments if a.has_default_value()}


def _same(value: Any, default: Any) -> bool:
    if isinstance(value, ir.Value):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - a value that cannot be compared is no default
        return False


def _pick(g, functions: list[Callable], positional: list[Any]) -> Callable:
    """The one function given, or of a list, the first whose annotated tensor types admit the element types of the
    call's tensor arguments (an unannotated or generic parameter admits any)."""
    if len(functions) == 1:  # used whatever its annotations say, as torch.onnx uses it
        return functions[0]
    for function in functions:
        if _admits(function, positional):
            return function
    got = [onnx.TensorProto.DataType.Name(a.dtype) for a in positional if isinstance(a, ir.Value) and a.dtype]
    raise UnsupportedOperatorError(g.op_kind, g.opset, reason="no custom_translation_table function takes inputs of "
                                   f"types {got}")


def _admits(function: Callable, positional: list[Any]) -> bool:
    try:  # the annotations evaluated: a module with ``from __future__ import annotations`` holds them as strings
        parameters = list(inspect.signature(_python_function(function), eval_str=True).parameters.values())
    except Exception:  # noqa: BLE001 - annotations that do not evaluate say nothing about the types admitted
        return True
    for parameter, value in zip(parameters, positional, strict=False):
        wanted = getattr(parameter.annotation, "dtype", None)
        if isinstance(wanted, int) and isinstance(value, ir.Value) and value.dtype and value.dtype != wanted:
            return False
    return True


def _python_function(function: Any) -> Callable:
    """The Python function behind ``function`` (a script function's own), whose signature the call binds to."""
    return function.function if _is_script_function(function) else function


def _is_script_function(function: Any) -> bool:
    return type(function).__name__ == "OnnxFunction" and hasattr(function, "to_function_proto")


def _name_of(function: Any) -> str:
    return getattr(function, "__name__", None) or getattr(function, "name", None) or repr(function)


def _unwrapped_results(g, result: Any) -> Any:
    if isinstance(result, (tuple, list)):
        return tuple(_unwrapped_results(g, item) for item in result)
    if isinstance(result, Traced):
        return result.value
    if result is None or isinstance(result, ir.Value):
        return result
    return g.const(result)


# -- values as the function sees them -----------------------------------------------------------------------------
class Traced:
    """One of our values as an onnxscript function receives it: what torchlib-style functions read of torch.onnx's
    values (``dtype`` and ``shape`` as onnx_ir gives them, ``const_value``, ``name``, ``rank``), and the arithmetic
    operators, each emitting its ONNX op."""

    def __init__(self, value: ir.Value):
        self.value = value

    @property
    def name(self) -> str:
        return self.value.name

    @property
    def dtype(self):
        import onnx_ir

        return None if self.value.dtype is None else onnx_ir.DataType(self.value.dtype)

    @property
    def shape(self):
        import onnx_ir

        return None if self.value.shape is None else onnx_ir.Shape(list(self.value.shape))

    @property
    def rank(self) -> int | None:
        return self.value.rank

    @property
    def const_value(self):
        import onnx_ir

        return None if self.value.const is None else onnx_ir.tensor(np.asarray(self.value.const))

    def _binary(self, op_type: str, other: Any, reverse: bool = False) -> Traced:
        from onnxscript import evaluator

        recorder = evaluator.default()
        if not isinstance(recorder, _Recorder):
            raise TypeError(f"{op_type} of a traced value outside a custom_translation_table call")
        operands = (other, self) if reverse else (self, other)
        return recorder.emit("", op_type, list(operands), {}, 1, recorder.g.opset)[0]

    def __add__(self, other): return self._binary("Add", other)
    def __radd__(self, other): return self._binary("Add", other, True)
    def __sub__(self, other): return self._binary("Sub", other)
    def __rsub__(self, other): return self._binary("Sub", other, True)
    def __mul__(self, other): return self._binary("Mul", other)
    def __rmul__(self, other): return self._binary("Mul", other, True)
    def __truediv__(self, other): return self._binary("Div", other)
    def __matmul__(self, other): return self._binary("MatMul", other)
    def __pow__(self, other): return self._binary("Pow", other)
    def __neg__(self): return self._binary("Neg", None)

    def __repr__(self) -> str:
        return f"Traced({self.value.name!r})"


def _wrap(value: Any) -> Any:
    if isinstance(value, ir.Value):
        return Traced(value)
    if isinstance(value, (list, tuple)):
        return [_wrap(item) for item in value]
    return value


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, Traced) else value


# -- the evaluator the function's op calls land in ------------------------------------------------------------------
class _Recorder:
    """An onnxscript evaluator (its ``eval_op`` / ``eval_function`` interface) that emits each op into ``g``."""

    def __init__(self, g):
        self.g = g

    def eval_op(self, op, args: Sequence[Any], kwargs: Mapping[str, Any]):
        schema = op.op_schema
        if schema is None:
            raise UnsupportedOperatorError(f"{op.domain}::{op.name}", self.g.opset, reason="onnx.defs has no schema")
        inputs, attributes = _split_by_schema(schema, list(args), dict(kwargs))
        outputs = _output_count(schema, attributes, len(inputs))
        results = self.emit(op.domain, op.name, inputs, attributes, outputs, op.opset.version)
        return results[0] if len(results) == 1 else results

    def eval_function(self, function, args: Sequence[Any], kwargs: Mapping[str, Any]):
        if not _is_script_function(function):  # a TracedOnnxFunction: its Python body, traced
            return getattr(function, "func", function)(*args, **kwargs)
        from exporter.function_inlining import inline_function

        bound = inspect.signature(function.function).bind(*args, **kwargs)
        results = inline_function(self, function, {name: _unwrap(v) for name, v in bound.arguments.items()})
        wrapped = [Traced(r) if isinstance(r, ir.Value) else r for r in results]
        return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)

    def emit(self, domain: str, op_type: str, inputs: list[Any], attributes: dict[str, Any], outputs: int,
             written_for: int | None, attribute_types: dict[str, int] | None = None) -> list[Traced]:
        """One node of ``domain::op_type`` into ``g``; ``written_for`` is the opset version the caller wrote it
        against (the default domain's must define the op as the export's opset does)."""
        g = self.g
        if not domain or domain == "ai.onnx":
            check_same_definition(g, op_type, written_for, input_types=[
                _unwrap(x).dtype if isinstance(_unwrap(x), ir.Value) else None for x in inputs])
            domain = ""
        elif written_for is not None:  # a custom domain at the version the function imports it
            known = g.session.custom_opsets.setdefault(domain, written_for)
            if known != written_for:
                raise SymbolicValueError(f"{g.op_kind}: domain {domain!r} is imported at version {known} and, by a "
                                         f"custom_translation_table function, at version {written_for}")
        values = [None if x is None else _as_value(g, _unwrap(x), inputs) for x in inputs]
        while values and values[-1] is None:  # trailing omitted optional inputs
            values.pop()
        named = {}
        for name, raw in attributes.items():
            raw = _unwrap(raw)
            if raw is None:
                continue
            if hasattr(raw, "numpy") and not isinstance(raw, torch.Tensor):  # an onnx_ir tensor: a tensor attribute
                raw = raw.numpy()
            kind = (attribute_types or {}).get(name)
            suffix = _SUFFIX.get(kind) if kind is not None else None
            named[f"{name}_{suffix}" if suffix else name] = raw
        result = g.op(f"{domain}::{op_type}" if domain else op_type, *values, outputs=outputs, **named)
        results = list(result) if isinstance(result, tuple) else [result]
        if not domain:
            _infer_types(g, results[0].producer)
        return [Traced(r) for r in results]


def _typed_by_body(node: ir.Node) -> None:
    """The element types of an If's or a Loop's outputs, from its branch or body's outputs (ONNX's per-node
    inference does not look into graph attributes)."""
    body = node.attrs.get("then_branch") or node.attrs.get("body")
    if not isinstance(body, ir.Graph):
        return
    produced = body.outputs[1:] if node.op_type == "Loop" else body.outputs  # a Loop body's first: its condition
    for value, source in zip(node.outputs, produced, strict=False):
        value.dtype, value.shape = source.dtype, None


def _as_value(g, x: Any, inputs: list[Any]) -> ir.Value:
    """An op input: a value as it is; a Python number as a constant of the element type of the op's first tensor
    input (``op.Add(x, 1)`` adds in x's type, as torch.onnx makes it); a tensor or array as a constant."""
    if isinstance(x, ir.Value):
        return x
    if isinstance(x, (bool, int, float)):
        like = next((_unwrap(i) for i in inputs if isinstance(_unwrap(i), ir.Value)), None)
        if like is not None and like.dtype:
            return g.const(np.array(x, dtype=onnx.helper.tensor_dtype_to_np_dtype(like.dtype)))
    if hasattr(x, "numpy") and not isinstance(x, torch.Tensor):  # an onnx_ir tensor
        x = x.numpy()
    return g.const(x)


def _split_by_schema(schema, args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """(inputs, attributes) of an op call the way onnxscript's signatures take them: inputs positionally (a variadic
    last input takes the rest) or by name, attributes by name (or positionally after the inputs)."""
    formal = list(schema.inputs)
    variadic = bool(formal) and formal[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    attribute_names = list(schema.attributes)
    if variadic:
        inputs = list(args)
        extra: list[Any] = []
    else:
        inputs, extra = list(args[:len(formal)]), list(args[len(formal):])
    by_position = dict(zip(attribute_names, extra, strict=False))
    for index, parameter in enumerate(formal):
        if parameter.name in kwargs:
            while len(inputs) <= index:
                inputs.append(None)
            inputs[index] = kwargs.pop(parameter.name)
    attributes = {**by_position, **kwargs}
    unknown = [name for name in attributes if name not in schema.attributes]
    if unknown:
        raise SymbolicValueError(f"{schema.name} has no attribute {unknown[0]!r}")
    return inputs, attributes


def _output_count(schema, attributes: dict[str, Any], input_count: int) -> int:
    outputs = list(schema.outputs)
    if outputs and outputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic:
        if schema.name == "Split":
            count = attributes.get("num_outputs")
            if count is None:
                raise SymbolicValueError("Split: give num_outputs (an onnxscript function cannot say how many "
                                         "outputs it reads)")
            return int(count)
        return len(outputs)
    return sum(1 for o in outputs if o.option != onnx.defs.OpSchema.FormalParameterOption.Optional) or len(outputs)


def _infer_types(g, node: ir.Node) -> None:
    """The element types (and shapes, where ONNX infers them) of a default-domain node's outputs, from onnx's own
    inference for the op: what the function's next ops, and its ``.dtype`` readers, see."""
    if any(isinstance(a, ir.Graph) for a in node.attrs.values()):
        _typed_by_body(node)
        return
    if any(v is not None and v.dtype is None for v in node.inputs):
        return
    from exporter.serialize import node_to_proto

    try:
        schema = onnx.defs.get_schema(node.op_type, g.opset, "")
        proto = node_to_proto(node)
        types = {v.name: onnx.helper.make_tensor_type_proto(v.dtype or 0, _known_shape(v)) for v in node.inputs
                 if v is not None}
        data = {v.name: onnx.numpy_helper.from_array(np.asarray(v.const)) for v in node.inputs
                if v is not None and v.const is not None}
        inferred = onnx.shape_inference.infer_node_outputs(schema, proto, types, data)
    except Exception:  # noqa: BLE001 - inference is a refinement: without it the types stay as g.op guessed them
        return
    for value in node.outputs:
        found = inferred.get(value.name)
        if found is not None and found.HasField("tensor_type") and found.tensor_type.elem_type:
            value.dtype = found.tensor_type.elem_type
            if found.tensor_type.HasField("shape"):
                value.shape = tuple(d.dim_value if d.HasField("dim_value") else None
                                    for d in found.tensor_type.shape.dim)


def _known_shape(value: ir.Value):
    if value.shape is None:
        return None
    return [d if isinstance(d, int) else None for d in value.shape]

