"""The harness's feeds (``conformance.feeds``): the caller's arguments named from the caller's side alone, bound as
torch.onnx binds them, and a run fed by those names, never by position."""

from __future__ import annotations

import io
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from conformance.feeds import FeedError, bound_arguments, call, caller_values, feeds_for, model_inputs, parameters_of


class Decoder(torch.nn.Module):
    """A signature in the order a transformers decoder has it; the dicts below give its arguments in another."""

    def forward(self, input_ids, past_key_values=None, attention_mask=None, encoder_hidden_states=None):
        return input_ids


def _t(value):
    return torch.tensor(value)


def _names_of(values):
    return {name: value.tolist() if isinstance(value, torch.Tensor) else value for name, value in values.items()}


def test_a_trailing_dict_is_bound_in_forwards_order_not_the_dicts():
    ids, mask = _t([1]), _t([2])
    args = ({"attention_mask": mask, "input_ids": ids},)
    assert [name for name, _ in bound_arguments(args, parameters_of(Decoder()))] == ["input_ids", "attention_mask"]
    values = caller_values(args, ["input_ids", "attention_mask"], model=Decoder())
    assert _names_of(values) == {"input_ids": [1], "attention_mask": [2]}


def test_nested_arguments_are_flattened_depth_first_and_named_in_that_order():
    cache = ((_t(10), _t(11)), (_t(20), _t(21)))
    args = (_t(1), {"attention_mask": _t(2), "past_key_values": cache})  # positional first, then forward's order
    names = ["input_ids", "past_key_values.0.key", "past_key_values.0.value", "past_key_values.1.key",
             "past_key_values.1.value", "attention_mask"]
    assert _names_of(caller_values(args, names, model=Decoder())) == {
        "input_ids": 1, "past_key_values.0.key": 10, "past_key_values.0.value": 11, "past_key_values.1.key": 20,
        "past_key_values.1.value": 21, "attention_mask": 2}


def test_names_past_the_given_ones_are_the_arguments_own():
    args = (_t(1), ((_t(10), _t(11)),), {"encoder_hidden_states": _t(3)})
    values = caller_values(args, ["ids"], model=Decoder())
    assert list(values) == ["ids", "past_key_values_0", "past_key_values_1", "encoder_hidden_states"]
    assert list(caller_values((_t(1), _t(2)), model=lambda *xs: xs)) == ["xs_0", "xs_1"]
    assert list(caller_values((_t(1), _t(2)))) == ["input_0", "input_1"]  # no signature to read


def test_a_default_left_out_stays_a_constant_but_a_scripted_models_is_an_input():
    offset_default = _t(1)

    def scaled(x, scale: float = 2.0, mask: torch.Tensor | None = None, offset: torch.Tensor = offset_default):
        return x * scale + offset

    assert _names_of(caller_values((_t(3),), model=scaled)) == {"x": 3}
    assert _names_of(caller_values((_t(3),), model=scaled, numbers=False)) == {"x": 3}
    # a scripted model's schema binds its defaults: each is an input (None none)
    assert _names_of(caller_values((_t(3),), model=torch.jit.script(scaled))) == {"x": 3, "scale": 2.0, "offset": 1}


def test_a_key_no_parameter_takes_is_dropped_unless_forward_takes_kwargs():
    def strict(a, b=None):
        return a

    def loose(a, b=None, **rest):
        return a

    args = (_t(1), {"c": _t(3), "a": _t(4), "b": _t(2)})  # 'a' given positionally too, 'c' names no parameter
    assert _names_of(caller_values(args, model=strict)) == {"a": 1, "b": 2}
    assert _names_of(caller_values(args, model=loose)) == {"a": 1, "b": 2, "c": 3}


def test_dict_values_keep_their_order_and_a_tensor_key_comes_before_its_value():
    key = _t(7)
    values = caller_values(({"b": _t(1), "a": _t(2)}, {key: _t(3)}, {}), ["b", "a", "key", "value"])
    assert _names_of(values) == {"b": 1, "a": 2, "key": 7, "value": 3}  # the empty dict: the dicts are positional


def test_numbers_are_inputs_of_a_trace_and_constants_of_torch_export_none_and_strings_are_neither():
    args = (_t(1.0), 3, None, "mode", 0.5)
    assert _names_of(caller_values(args, ["x", "n", "s"])) == {"x": 1.0, "n": 3, "s": 0.5}
    assert _names_of(caller_values(args, ["x"], numbers=False)) == {"x": 1.0}


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
def test_a_quantized_tensor_is_its_integers_scale_and_zero_point():
    q = torch.quantize_per_tensor(torch.tensor([0.5, 1.0]), 0.5, 3, torch.quint8)
    values = caller_values((q,), ["q"])
    assert values["q"].tolist() == [4, 5] and values["q_scale"] == 0.5 and values["q_zero_point"] == 3


def test_scripted_signatures_are_read_from_their_schema():
    @torch.jit.script
    def scripted(a: torch.Tensor, b: torch.Tensor):
        return a - b

    assert [p.name for p in parameters_of(scripted)] == ["a", "b"]
    assert [p.name for p in parameters_of(torch.jit.script(torch.nn.ReLU()))] == ["input"]
    assert list(caller_values(({"b": _t(1), "a": _t(2)},), model=scripted)) == ["a", "b"]


def test_two_values_of_one_name_are_refused():
    with pytest.raises(ValueError, match="two of the caller's values are named 'x'"):
        caller_values((_t(1), _t(2)), ["x", "x"])


def test_a_call_takes_a_trailing_dict_as_keywords():
    assert call(lambda a, b=0: a - b, (5, {"b": 2})) == 3
    assert call(lambda a, b=0: (a, b), ({"b": 2}, {})) == ({"b": 2}, 0)


def test_feeds_take_each_graph_input_by_name_and_leave_out_what_the_graph_lacks():
    values = {"y": _t([1.0]), "x": 2, "dropped": _t([0.0])}
    feeds = feeds_for([("x", np.float32), ("y", np.float32)], values)
    assert list(feeds) == ["x", "y"] and feeds["x"].dtype == np.float32 and feeds["y"].tolist() == [1.0]
    with pytest.raises(FeedError, match=r"graph input\(s\) \['mask'\] name no value of the caller's"):
        feeds_for([("x", None), ("mask", None)], values)


def test_a_models_inputs_leave_out_its_initializers():
    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["z"])], "g",
                              [value("x", TensorProto.INT64, [1]), value("w", TensorProto.INT64, [1])],
                              [value("z", TensorProto.INT64, [1])],
                              initializer=[helper.make_tensor("w", TensorProto.INT64, [1], [1])])
    model = helper.make_model(graph, ir_version=3, opset_imports=[helper.make_opsetid("", 8)])
    onnx.checker.check_model(model)
    assert model_inputs(model) == [("x", np.dtype(np.int64))]


# -- a binding slip, made by hand: a correct export with two inputs' names swapped ---------------------------------
def swap_input_names(model: onnx.ModelProto, a: str, b: str) -> onnx.ModelProto:
    """``model`` with the graph inputs ``a`` and ``b`` renamed to each other wherever they appear: the same graph,
    reading the input in each position as before, but each under the other's name (what an export that binds two
    arguments to each other's inputs writes)."""
    rename = {a: b, b: a}
    swapped = onnx.ModelProto()
    swapped.CopyFrom(model)

    def visit(graph):
        for node in graph.node:
            node.input[:] = [rename.get(name, name) for name in node.input]
            for attribute in node.attribute:
                for subgraph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    visit(subgraph)

    for graph_input in swapped.graph.input:
        graph_input.name = rename.get(graph_input.name, graph_input.name)
    visit(swapped.graph)
    return swapped


def swapping_inputs(export, a: str, b: str):
    """``exporter.export_program`` writing the export with its inputs ``a`` and ``b`` swapped
    (:func:`swap_input_names`)."""
    def export_swapped(model, args, f, **options):
        buffer = io.BytesIO()
        result = export(model, args, buffer, **options)
        swapped = swap_input_names(onnx.load_from_string(buffer.getvalue()), a, b)
        if isinstance(f, str):
            onnx.save(swapped, f)
        else:
            f.write(swapped.SerializeToString())
        return SimpleNamespace(model_proto=swapped, capture=result.capture, workarounds=result.workarounds)

    return export_swapped


def test_the_op_case_harness_reports_an_export_with_its_input_names_swapped_as_a_mismatch(monkeypatch):
    import exporter
    from conformance.op_runner import run_case
    from opcases import OpCase

    case = OpCase("sub", lambda k: (torch.randn(2 + k, 3), torch.randn(2 + k, 3)), sample="feed_by_name",
                  fn=lambda x, y: x - 2 * y)
    assert run_case(case, 13, dynamic=False)["status"] == "pass"
    monkeypatch.setattr(exporter, "export_program", swapping_inputs(exporter.export_program, "input_0", "input_1"))
    row = run_case(case, 13, dynamic=False)
    assert (row["status"], row["stage"]) == ("mismatch", "accuracy"), row["error"]
