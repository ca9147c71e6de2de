"""Calling conventions, differentially: each call of the table is exported by ``exporter.export`` and by
``torch.onnx.export`` with the same capture (``dynamo=False``: TorchScript; ``dynamo=True``: torch.export), in one
process. The two ModelProtos must have the same inputs (order, element types, ranks, which axes are dynamic; names
where the call gives ``input_names`` or the capture names them after the arguments) and outputs (count, types, ranks;
names where the call gives ``output_names``); then each file is run on ONNX Runtime **fed by name** from the caller's
own values (what the caller means by each name, written by hand in the row, never read from either export), and must
compute what the model computes.

Libraries call the exporter with a dict of inputs in their own order, ``input_names`` in ``forward``'s order and
past key/values nested (Hugging Face Optimum); a binding slip there puts names on the wrong tensors, which only
feeding by name catches. A row with ``differs`` is a deliberate difference (docs/differences-from-torch-onnx.md): it
asserts what each exporter does, so the difference cannot silently change.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.onnx  # the peer (tests may call torch.onnx; the engine never does)
from transformers.utils import ModelOutput

import exporter
from exporter.errors import ExportArgumentError
from exporter.frontends.base import flatten_outputs

TRACE, EXPORT = "trace", "export"
# torch.onnx's dynamo exporter orders a trailing dict or kwargs= by the dict's order unless it translates
# dynamic_axes; input_names then name its inputs in that order.
INSERTION_ORDER = ("torch.onnx's dynamo exporter orders the dict's tensors as the dict is ordered (input_names then "
                   "land on other tensors); ours orders them by forward's signature, as its TorchScript exporter and "
                   "its own dynamic_axes translation do")


@dataclass(frozen=True)
class Convention:
    """One call: ``call()`` gives (args, kwargs) afresh; ``named(args, kwargs)`` the caller's values by the input name
    the caller means for each (Python numbers as numpy scalars)."""

    id: str
    model: Callable[[], Any]
    call: Callable[[], tuple[Any, dict | None]]
    named: Callable[[Any, dict | None], dict[str, Any]]
    options: dict = field(default_factory=dict)
    captures: tuple[str, ...] = (TRACE, EXPORT)
    differs: dict[str, str] = field(default_factory=dict)  # capture -> why our outcome deliberately differs
    rejects: dict[str, type[Exception]] = field(default_factory=dict)  # capture -> our error (torch's rejects too)


# -- models ----------------------------------------------------------------------------------------------------------
class TwoIn(torch.nn.Module):
    def forward(self, a, b):
        return a - 2 * b


class FourIn(torch.nn.Module):
    def forward(self, a, b, c, d):
        return a * 1 + b * 2 + c * 3 + d * 4


class Defaults(torch.nn.Module):
    def forward(self, x, y=None, scale=2.0):
        return x * scale + (0 if y is None else y)


class Past(torch.nn.Module):
    def forward(self, a, past=None, mask=None):
        return a + mask.sum() + sum(t.sum() for p in past for t in p)


class Decoder(torch.nn.Module):
    """A T5-like decoder step's arguments: int64 ids, float encoder states, a mask and per-layer past key/values."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(11, 4)

    def forward(self, input_ids, encoder_hidden_states=None, encoder_attention_mask=None, past_key_values=None):
        hidden = self.embed(input_ids)
        context = (encoder_hidden_states * encoder_attention_mask.unsqueeze(-1).float()).sum(1, keepdim=True)
        out = hidden + context
        for key, value in past_key_values or ():
            out = out + (key * 2 + value).mean((1, 2)).unsqueeze(1)
        return out


class DictArg(torch.nn.Module):
    def forward(self, x, d):
        return x + d["a"] * 2 - d["b"]


class KeywordsForward(torch.nn.Module):
    def forward(self, x, **kwargs):
        return x + 2 * kwargs["b"] - kwargs["a"]


class VarArgs(torch.nn.Module):
    def forward(self, *args):
        return args[0] - 2 * args[1] + 3 * args[2]


class KeywordOnly(torch.nn.Module):
    def forward(self, x, *, scale, shift=None):
        return x * scale + (0 if shift is None else shift)


class Numbers(torch.nn.Module):
    def forward(self, x, n: int, s: float, flag: bool):
        return x * n * s if flag else x


class PairArg(torch.nn.Module):
    def forward(self, pair, c):
        return pair[0] + 2 * pair[1] - c


class Unused(torch.nn.Module):
    def forward(self, x, unused, z):
        return x - 2 * z


class Required(torch.nn.Module):
    def forward(self, a, b, c=None):
        return a - 2 * b + (0 if c is None else c)


class ListArg(torch.nn.Module):
    def forward(self, x, items):
        return x + items[0] * 2 - items[1]


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


class DictOutput(torch.nn.Module):
    def forward(self, x, y):
        return {"sum": x + y, "diff": x - y, "first": x[:, :1]}


@dataclass
class Seq2SeqOutput(ModelOutput):
    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    attentions: torch.Tensor | None = None


class ModelOutputStyle(torch.nn.Module):
    def forward(self, x, mask):
        return Seq2SeqOutput(logits=x * 2, hidden=None, attentions=x * mask)


class NestedOutputs(torch.nn.Module):
    def forward(self, x):
        return (x + 1, (x * 2, x.sum(1))), [x - 1]


def _scripted_two():
    return torch.jit.script(TwoIn())


# -- the caller's values --------------------------------------------------------------------------------------------
def t(*shape, dtype=torch.float32):
    if dtype == torch.int64:
        return torch.randint(0, 11, shape)
    return torch.randn(*shape, dtype=dtype)


def _np(value) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy()
    return np.array(value)  # a Python number: float64, int64 or bool, as the 0-d input it becomes


def keys(*names: str) -> Callable[[Any, dict | None], dict[str, Any]]:
    """The caller's values by the keys of the dict they came in (the trailing dict of args, or kwargs)."""
    def named(args, kwargs):
        given = kwargs if kwargs else args[-1]
        return {name: given[name] for name in names}
    return named


def positional(*names: str) -> Callable[[Any, dict | None], dict[str, Any]]:
    return lambda args, kwargs: dict(zip(names, args, strict=False))


def mixed(*names: str) -> Callable[[Any, dict | None], dict[str, Any]]:
    """The leading positional arguments, then the dict's values by key, for names that are the dict's keys."""
    def named(args, kwargs):
        given = dict(kwargs or (args[-1] if isinstance(args[-1], dict) else {}))
        leading = [a for a in (args[:-1] if not kwargs and isinstance(args[-1], dict) else args)]
        values = dict(zip(names, leading, strict=False))
        values.update({name: given[name] for name in names[len(leading):] if name in given})
        return values
    return named


def _past_named(args, kwargs):
    given = kwargs or args[-1]
    (key, value), = given["past"]
    return {"a": given["a"], "past.0.key": key, "past.0.value": value, "mask": given["mask"]}


PAST_NAMES = ["a", "past.0.key", "past.0.value", "mask"]


def _past_call(order: tuple[str, ...], as_kwargs: bool = False):
    def call():
        values = {"a": t(2, 3), "mask": torch.ones(2, 5), "past": [(t(2, 4, 5, 8), t(2, 4, 5, 8))]}
        ordered = {name: values[name] for name in order}
        return ((), ordered) if as_kwargs else ((ordered,), None)
    return call


DECODER_NAMES = ["input_ids", "encoder_hidden_states", "encoder_attention_mask",
                 "past_key_values.0.decoder.key", "past_key_values.0.decoder.value",
                 "past_key_values.1.decoder.key", "past_key_values.1.decoder.value"]


def _decoder_call(order: tuple[str, ...], mask_dtype=torch.int64):
    def call():
        values = {"input_ids": t(2, 1, dtype=torch.int64), "encoder_hidden_states": t(2, 6, 4),
                  "encoder_attention_mask": torch.ones(2, 6, dtype=mask_dtype),
                  "past_key_values": tuple((t(2, 3, 5, 4), t(2, 3, 5, 4)) for _ in range(2))}
        return ({name: values[name] for name in order},), None
    return call


def _decoder_named(args, kwargs):
    given = args[-1]
    named = {name: given[name] for name in DECODER_NAMES[:3]}
    for layer, (key, value) in enumerate(given["past_key_values"]):
        named[f"past_key_values.{layer}.decoder.key"] = key
        named[f"past_key_values.{layer}.decoder.value"] = value
    return named


def _pair_named(args, kwargs):
    given = args[-1] if isinstance(args[-1], dict) else dict(zip(("pair", "c"), args, strict=True))
    return {"pair0": given["pair"][0], "pair1": given["pair"][1], "c": given["c"]}


SIGNATURE_TWO = lambda: ((t(2, 3), t(2, 3)), None)  # noqa: E731 - a row's call
PAST_AXES = {"a": {0: "batch"}, "past.0.key": {0: "batch", 2: "past_len"}, "past.0.value": {0: "batch", 2: "past_len"},
             "mask": {0: "batch", 1: "total_len"}}
DECODER_AXES = {"input_ids": {0: "batch"}, "encoder_hidden_states": {0: "batch", 1: "enc_len"},
                "encoder_attention_mask": {0: "batch", 1: "enc_len"},
                **{name: {0: "batch", 2: "past_len"} for name in DECODER_NAMES[3:]}}
EXTRA_NAMES = ("torch.onnx's dynamo exporter ignores input_names that name no input (a Python number is no input of "
               "a torch.export program, so the names after it land on later tensors); ours refuses them, as its "
               "TorchScript exporter does")
DEFAULT_KEPT = ("torch.onnx's TorchScript exporter passes a default the caller left out as an argument, a number as a "
                "0-d input (a model branching on a default flag fails: TransformerEncoderLayer's is_causal); ours "
                "keeps it the model's constant, as a Python call and torch.onnx's dynamo exporter do")
KEYWORD_ONLY = ("torch.onnx's TorchScript exporter passes keyword-only parameters positionally (the model's call "
                "fails); ours passes them by name")
TRACE_DROPS_KEYWORDS = ("torch.onnx's TorchScript exporter drops every key **kwargs would take, so the model runs "
                        "without them; ours passes them on, named by their keys")
TRACE_SKIPS_REQUIRED = ("torch.onnx's TorchScript exporter skips a required argument the call leaves out, so the "
                        "later ones shift onto it; ours refuses the call naming the argument")

CONVENTIONS = [
    # positional and a trailing dict of keyword arguments
    Convention("positional", TwoIn, SIGNATURE_TWO, positional("a", "b")),
    Convention("positional_named", TwoIn, SIGNATURE_TWO, positional("x", "y"), {"input_names": ["x", "y"]}),
    Convention("dict_in_signature_order", TwoIn, lambda: (({"a": t(2, 3), "b": t(2, 3)},), None), keys("a", "b")),
    Convention("dict_reversed", TwoIn, lambda: (({"b": t(2, 3), "a": t(2, 3)},), None), keys("a", "b"),
               differs={EXPORT: INSERTION_ORDER}),
    Convention("dict_reversed_named", TwoIn, lambda: (({"b": t(2, 3), "a": t(2, 3)},), None),
               lambda args, kwargs: {"first": args[-1]["a"], "second": args[-1]["b"]},
               {"input_names": ["first", "second"]}, differs={EXPORT: INSERTION_ORDER}),
    Convention("kwargs_reversed", TwoIn, lambda: ((), {"b": t(2, 3), "a": t(2, 3)}), keys("a", "b"),
               differs={EXPORT: INSERTION_ORDER}),
    Convention("positional_then_dict", TwoIn, lambda: ((t(2, 3), {"b": t(2, 3)}), None), mixed("a", "b")),
    Convention("positional_then_kwargs", TwoIn, lambda: ((t(2, 3),), {"b": t(2, 3)}), mixed("a", "b")),
    Convention("trailing_empty_dict", TwoIn, lambda: ((t(2, 3), t(2, 3), {}), None), positional("a", "b")),
    Convention("four_shuffled_with_axes", FourIn,
               lambda: (({"c": t(2, 3), "a": t(2, 3), "d": t(2, 3), "b": t(2, 3)},), None), keys("a", "b", "c", "d"),
               {"input_names": ["a", "b", "c", "d"], "dynamic_axes": {"a": {0: "n"}, "b": {0: "n"}, "c": {0: "n"},
                                                                     "d": {0: "n"}}}),
    Convention("four_shuffled", FourIn,
               lambda: (({"c": t(2, 3), "a": t(2, 3), "d": t(2, 3), "b": t(2, 3)},), None), keys("a", "b", "c", "d"),
               {"input_names": ["a", "b", "c", "d"]}, differs={EXPORT: INSERTION_ORDER}),
    # nested past key/values (the repro) and a T5-like decoder called as Optimum calls it
    Convention("past_dict_shuffled", Past, _past_call(("a", "mask", "past")), _past_named,
               {"input_names": PAST_NAMES}, differs={EXPORT: INSERTION_ORDER}),
    Convention("past_dict_in_signature_order", Past, _past_call(("a", "past", "mask")), _past_named,
               {"input_names": PAST_NAMES}),
    Convention("past_kwargs_shuffled", Past, _past_call(("mask", "past", "a"), as_kwargs=True), _past_named,
               {"input_names": PAST_NAMES}, differs={EXPORT: INSERTION_ORDER}),
    Convention("past_dynamic_axes_on_nested_names", Past, _past_call(("mask", "a", "past")), _past_named,
               {"input_names": PAST_NAMES, "dynamic_axes": PAST_AXES}),
    Convention("decoder_optimum_order", Decoder,
               _decoder_call(("input_ids", "encoder_attention_mask", "encoder_hidden_states", "past_key_values")),
               _decoder_named, {"input_names": DECODER_NAMES}, differs={EXPORT: INSERTION_ORDER}),
    Convention("decoder_reversed_float_mask", Decoder,
               _decoder_call(("past_key_values", "encoder_hidden_states", "encoder_attention_mask", "input_ids"),
                             mask_dtype=torch.float32),
               _decoder_named, {"input_names": DECODER_NAMES}, differs={EXPORT: INSERTION_ORDER}),
    Convention("decoder_dynamic_axes", Decoder,
               _decoder_call(("encoder_hidden_states", "input_ids", "past_key_values", "encoder_attention_mask")),
               _decoder_named, {"input_names": DECODER_NAMES, "dynamic_axes": DECODER_AXES}),
    # None, defaults and Python numbers
    Convention("defaults_left_out", Defaults, lambda: ((t(2, 3),), None),
               lambda args, kwargs: {"x": args[0]}, differs={TRACE: DEFAULT_KEPT}),
    Convention("default_number_given", Defaults, lambda: ((t(2, 3), {"scale": 3.0}), None),
               lambda args, kwargs: {"x": args[0], "scale": 3.0}),
    Convention("default_none_given_tensor", Defaults, lambda: ((t(2, 3), {"y": t(2, 3)}), None),
               lambda args, kwargs: {"x": args[0], "y": args[1]["y"]}, differs={TRACE: DEFAULT_KEPT}),
    Convention("default_flag_left_out", lambda: torch.nn.TransformerEncoderLayer(8, 2, 16).eval(),
               lambda: ((t(3, 2, 8),), None), positional("src"), differs={TRACE: DEFAULT_KEPT}),
    Convention("defaults_reversed", Defaults, lambda: ((t(2, 3), {"scale": 0.5, "y": t(2, 3)}), None),
               lambda args, kwargs: {"x": args[0], "y": args[1]["y"], "scale": 0.5}),
    Convention("positional_none", Defaults, lambda: ((t(2, 3), None, 3.0), None),
               lambda args, kwargs: {"x": args[0], "scale": 3.0}),
    Convention("numbers_positional", Numbers, lambda: ((t(2, 3), 3, 0.5, True), None),
               positional("x", "n", "s")),
    Convention("numbers_dict_shuffled", Numbers, lambda: ((t(2, 3), {"flag": True, "s": 0.5, "n": 3}), None),
               lambda args, kwargs: {"x": args[0], "n": 3, "s": 0.5}),
    Convention("numbers_named", Numbers, lambda: ((t(2, 3), {"s": 1.5, "n": 2, "flag": True}), None),
               lambda args, kwargs: {"input": args[0], "count": 2, "factor": 1.5},
               {"input_names": ["input", "count", "factor"]}, captures=(TRACE,)),
    # containers
    Convention("dict_argument_then_empty_dict", DictArg, lambda: ((t(2, 3), {"a": t(2, 3), "b": t(2, 3)}, {}), None),
               lambda args, kwargs: {"x": args[0], "d_0": args[1]["a"], "d_1": args[1]["b"]},
               {"input_names": ["x", "d_0", "d_1"]}),
    Convention("dict_argument_by_name", DictArg, lambda: ((t(2, 3), {"d": {"b": t(2, 3), "a": t(2, 3)}}), None),
               lambda args, kwargs: {"x": args[0], "d_b": args[1]["d"]["b"], "d_a": args[1]["d"]["a"]},
               {"input_names": ["x", "d_b", "d_a"]}),
    Convention("dict_argument_reversed", DictArg, lambda: (({"d": {"a": t(2, 3), "b": t(2, 3)}, "x": t(2, 3)},), None),
               lambda args, kwargs: {"x": args[0]["x"], "d_a": args[0]["d"]["a"], "d_b": args[0]["d"]["b"]},
               {"input_names": ["x", "d_a", "d_b"]}, differs={EXPORT: INSERTION_ORDER}),
    Convention("pair_positional", PairArg, lambda: (((t(2, 3), t(2, 3)), t(2, 3)), None), _pair_named,
               {"input_names": ["pair0", "pair1", "c"]}),
    Convention("pair_dict_shuffled", PairArg, lambda: (({"c": t(2, 3), "pair": (t(2, 3), t(2, 3))},), None),
               _pair_named, {"input_names": ["pair0", "pair1", "c"]}, differs={EXPORT: INSERTION_ORDER}),
    Convention("list_argument", ListArg, lambda: ((t(2, 3), [t(2, 3), t(2, 3)]), None),
               lambda args, kwargs: {"x": args[0], "i0": args[1][0], "i1": args[1][1]},
               {"input_names": ["x", "i0", "i1"]}),
    Convention("unused_argument_shuffled", Unused, lambda: (({"z": t(2, 3), "unused": t(2, 3), "x": t(2, 3)},), None),
               keys("x", "z"), {"input_names": ["x", "unused", "z"]}, differs={EXPORT: INSERTION_ORDER}),
    # forwards taking *args and **kwargs
    Convention("var_args", VarArgs, lambda: ((t(2, 3), t(2, 3), t(2, 3)), None),
               lambda args, kwargs: {f"args_{i}": a for i, a in enumerate(args)}),
    Convention("var_keywords", KeywordsForward, lambda: ((t(2, 3), {"b": t(2, 3), "a": t(2, 3)}), None),
               lambda args, kwargs: {"x": args[0], "b": args[1]["b"], "a": args[1]["a"]},
               differs={TRACE: TRACE_DROPS_KEYWORDS}),
    Convention("keyword_only", KeywordOnly, lambda: ((t(2, 3), {"scale": t(2, 3), "shift": t(2, 3)}), None),
               lambda args, kwargs: {"x": args[0], "scale": args[1]["scale"], "shift": args[1]["shift"]},
               differs={TRACE: KEYWORD_ONLY}),
    # scripted modules bind by their schema (the TorchScript capture only)
    Convention("scripted_positional", _scripted_two, SIGNATURE_TWO, positional("a", "b"),
               {"input_names": ["a", "b"]}, captures=(TRACE,)),
    Convention("scripted_dict_reversed", _scripted_two, lambda: (({"b": t(2, 3), "a": t(2, 3)},), None),
               keys("a", "b"), {"input_names": ["a", "b"]}, captures=(TRACE,)),
    # names: fewer than the inputs, more, and parameters named after the inputs
    Convention("input_names_prefix", FourIn, lambda: (({"d": t(2, 3), "c": t(2, 3), "b": t(2, 3), "a": t(2, 3)},), None),
               lambda args, kwargs: {"first": args[0]["a"], "b": args[0]["b"], "c": args[0]["c"], "d": args[0]["d"]},
               {"input_names": ["first"]}, differs={EXPORT: INSERTION_ORDER}),
    Convention("input_names_for_parameters", Affine, lambda: ((t(2, 3),), None),
               lambda args, kwargs: {"x": args[0]},
               {"input_names": ["x", "weight", "bias"], "keep_initializers_as_inputs": True}, captures=(TRACE,)),
    Convention("input_names_too_many", TwoIn, SIGNATURE_TWO, positional("a", "b"),
               {"input_names": ["a", "b", "c"]}, rejects={TRACE: ExportArgumentError, EXPORT: ExportArgumentError},
               differs={EXPORT: EXTRA_NAMES}),
    Convention("required_argument_left_out", Required, lambda: (({"a": t(2, 3), "c": t(2, 3)},), None),
               keys("a", "c"), differs={TRACE: TRACE_SKIPS_REQUIRED}, rejects={TRACE: ExportArgumentError},
               captures=(TRACE,)),
    # outputs: dicts, ModelOutput, nested tuples and lists
    Convention("dict_output", DictOutput, lambda: (({"y": t(2, 3), "x": t(2, 3)},), None), keys("x", "y"),
               {"input_names": ["x", "y"], "output_names": ["sum", "diff", "first"]},
               differs={EXPORT: INSERTION_ORDER}),
    Convention("model_output", ModelOutputStyle, lambda: ((t(2, 3),), {"mask": t(2, 3)}), mixed("x", "mask"),
               {"input_names": ["x", "mask"], "output_names": ["logits", "attentions"]}),
    Convention("nested_outputs", NestedOutputs, lambda: ((t(2, 3),), None), positional("x"),
               {"output_names": ["o0", "o1", "o2", "o3"]}),
]


# -- the comparison --------------------------------------------------------------------------------------------------
def _boundary(values) -> list[tuple[str, int, int, tuple[bool, ...]]]:
    """(name, element type, rank, which axes are symbolic) of each graph input or output, in order."""
    described = []
    for value in values:
        dims = value.type.tensor_type.shape.dim
        described.append((value.name, value.type.tensor_type.elem_type, len(dims),
                          tuple(dim.HasField("dim_param") or not dim.HasField("dim_value") for dim in dims)))
    return described


def _inputs(model: onnx.ModelProto):
    initializers = {tensor.name for tensor in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def _model(row: Convention) -> Any:
    """The row's model, with the same weights for each exporter and for PyTorch."""
    torch.manual_seed(1)
    return row.model()


def _export_ours(row: Convention, capture: str, args, kwargs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exporter.export(_model(row), args, buffer, kwargs=kwargs, dynamo=capture == EXPORT, opset_version=18,
                        **row.options)
    return onnx.load_from_string(buffer.getvalue())


def _export_theirs(row: Convention, capture: str, args, kwargs) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if capture == TRACE:
            buffer = io.BytesIO()
            torch.onnx.export(_model(row), args, buffer, kwargs=kwargs, dynamo=False, opset_version=18, **row.options)
            return onnx.load_from_string(buffer.getvalue())
        program = torch.onnx.export(_model(row), args, kwargs=kwargs, dynamo=True, opset_version=18, verbose=False,
                                    **row.options)
        return program.model_proto


def _run_by_name(model: onnx.ModelProto, named: dict[str, Any]) -> list[np.ndarray]:
    inputs = [value.name for value in _inputs(model)]
    missing = [name for name in inputs if name not in named]
    assert not missing, f"the file has inputs {missing} the caller gives no value for (given: {sorted(named)})"
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {name: _np(named[name]) for name in inputs})


def _expected(row: Convention, args, kwargs) -> list[np.ndarray]:
    positional, keywords = exporter.frontends.base.split_args(args)
    with torch.no_grad():
        return [o.numpy() for o in flatten_outputs(_model(row)(*positional, **{**keywords, **(kwargs or {})}))]


def _computes(outputs: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    return len(outputs) == len(expected) and all(
        o.shape == e.shape and np.allclose(o, e, rtol=1e-5, atol=1e-5) for o, e in zip(outputs, expected, strict=True))


def _computes_by_name(model: onnx.ModelProto, named: dict[str, Any], expected: list[np.ndarray]) -> bool:
    """Whether the file, fed by name, computes the model (False where it has other inputs or ONNX Runtime refuses
    the values: a name on a tensor of another type)."""
    try:
        return _computes(_run_by_name(model, named), expected)
    except (AssertionError, ort.capi.onnxruntime_pybind11_state.Fail, ort.capi.onnxruntime_pybind11_state.InvalidArgument):
        return False


def _rows():
    for row in CONVENTIONS:
        for capture in row.captures:
            yield pytest.param(row, capture, id=f"{row.id}-{capture}")


@pytest.mark.parametrize(("row", "capture"), _rows())
def test_calling_convention_as_torch_onnx(row: Convention, capture: str):
    torch.manual_seed(0)
    args, kwargs = row.call()
    if capture in row.rejects:
        with pytest.raises(row.rejects[capture]):
            _export_ours(row, capture, args, kwargs)
        if capture in row.differs:  # torch.onnx accepts the call
            _export_theirs(row, capture, args, kwargs)
        else:
            with pytest.raises(Exception):  # noqa: B017 - torch.onnx's own kinds vary by capture
                _export_theirs(row, capture, args, kwargs)
        return
    named = row.named(args, kwargs)
    expected = _expected(row, args, kwargs)
    ours = _export_ours(row, capture, args, kwargs)
    assert _computes(_run_by_name(ours, named), expected), "ours, fed by name, computes something else"
    if capture in row.differs:
        try:
            theirs = _export_theirs(row, capture, args, kwargs)
        except Exception:  # noqa: BLE001 - torch.onnx failing the call is a form of the difference
            return
        assert _boundary(_inputs(ours)) != _boundary(_inputs(theirs)) or not _computes_by_name(theirs, named, expected), \
            f"the documented difference is gone: {row.differs[capture]}"
        return
    theirs = _export_theirs(row, capture, args, kwargs)
    given = len(row.options.get("input_names", [])) if capture == TRACE else len(_inputs(ours))
    ours_in, theirs_in = _boundary(_inputs(ours)), _boundary(_inputs(theirs))
    # torch.onnx's TorchScript exporter names the inputs input_names leaves unnamed after debug names (onnx::Sub_0)
    assert [e if i < given else e[1:] for i, e in enumerate(ours_in)] == \
        [e if i < given else e[1:] for i, e in enumerate(theirs_in)]
    named_outputs = "output_names" in row.options
    assert [e if named_outputs else e[1:] for e in _boundary(ours.graph.output)] == \
        [e if named_outputs else e[1:] for e in _boundary(theirs.graph.output)]
    # torch.onnx's file fed by its own names; the ones it made up take the caller's values by our names, in order
    theirs_named = {mine.name if i < given else their.name: named[mine.name]
                    for i, (mine, their) in enumerate(zip(_inputs(ours), _inputs(theirs), strict=True))}
    assert _computes(_run_by_name(theirs, theirs_named), expected), "torch.onnx's file, fed by name, differs"


def test_there_are_forty_calls():
    assert sum(len(row.captures) for row in CONVENTIONS) >= 80 and len(CONVENTIONS) >= 40
