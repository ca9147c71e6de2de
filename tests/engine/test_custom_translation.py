"""custom_translation_table (onnxscript functions converting chosen ops in one export), the torch.onnx.ops markers and
ONNX ops, and torch.library custom ops converted through their registered implementation. Every model of standard
ops runs on ONNX Runtime against PyTorch."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx_ir
import onnxscript
import pytest
import torch
import torch.onnx.ops  # noqa: F401 - the models below call torch.onnx.ops, as a user's model would
from onnxscript import DOUBLE, FLOAT
from onnxscript import opset11 as op11
from onnxscript import opset18 as op

import exporter
from exporter.errors import SymbolicValueError, UnsupportedOperatorError
from tests.conftest import export_bytes, run_onnx


def _op_types(model_bytes: bytes) -> list[str]:
    return [node.op_type for node in onnx.load_from_string(model_bytes).graph.node]


def _matches(model_bytes: bytes, expected, *args, atol=1e-5):
    session_inputs = [i.name for i in onnx.load_from_string(model_bytes).graph.input]
    got = run_onnx(model_bytes, {name: a.numpy() for name, a in zip(session_inputs, args, strict=False)})
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    for value, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(value, want.detach().numpy(), rtol=1e-5, atol=atol)


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


def subtract(self, other):
    return op.Sub(self, other)


@pytest.mark.parametrize("dynamo", [True, False])
def test_the_table_converts_its_op_in_this_export_only(dynamo):
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    table = {torch.ops.aten.add.Tensor: subtract}
    model_bytes, _ = export_bytes(Add(), (x, y), dynamo=dynamo, custom_translation_table=table)
    assert "Sub" in _op_types(model_bytes) and "Add" not in _op_types(model_bytes)
    _matches(model_bytes, x - y, x, y)
    plain, _ = export_bytes(Add(), (x, y), dynamo=dynamo)  # the op library itself is unchanged
    assert "Add" in _op_types(plain)


def add_through_a_tensor_attribute(self, other):
    # an onnx_ir tensor as an attribute value, as transformers' own table writes its constants
    ones = op.ConstantOfShape(op.Shape(other), value=onnx_ir.tensor(np.array([1.0], dtype=np.float32)))
    return op.Add(self, op.Mul(other, ones))


def test_an_onnx_ir_tensor_attribute_becomes_a_tensor_attribute():
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    table = {torch.ops.aten.add.Tensor: add_through_a_tensor_attribute}
    model_bytes, _ = export_bytes(Add(), (x, y), dynamo=True, custom_translation_table=table)
    assert "ConstantOfShape" in _op_types(model_bytes)
    _matches(model_bytes, x + y, x, y)


def test_an_overload_packet_key_covers_every_overload():
    x, y = torch.randn(3), torch.randn(3)
    model_bytes, _ = export_bytes(Add(), (x, y), dynamo=True, custom_translation_table={torch.ops.aten.add: subtract})
    _matches(model_bytes, x - y, x, y)


def test_a_custom_op_with_a_decomposition_is_kept_whole_for_the_table():
    with torch.library._scoped_library("ct_lib", "FRAGMENT") as lib:
        torch.library.define("ct_lib::foo", "(Tensor a, Tensor b) -> Tensor", lib=lib)
        torch.library.impl("ct_lib::foo", "CompositeImplicitAutograd", lib=lib)(lambda a, b: a + b)

        class Foo(torch.nn.Module):
            def forward(self, x, y):
                return torch.ops.ct_lib.foo(x, y)

        x, y = torch.randn(3, 3), torch.randn(3, 3)
        table = {torch.ops.ct_lib.foo.default: subtract}
        model_bytes, _ = export_bytes(Foo(), (x, y), dynamo=True, custom_translation_table=table)
        _matches(model_bytes, x - y, x, y)
        decomposed, _ = export_bytes(Foo(), (x, y), dynamo=True)
        assert _op_types(decomposed) == ["Add"]


@onnxscript.script()
def _relu(x: FLOAT) -> FLOAT:
    return op.Relu(x)


@onnxscript.script()
def scaled_relu(x: FLOAT, alpha: float = 2.0) -> FLOAT:
    return op.Mul(_relu(x), alpha)


class ReluTimesThree(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 3


@pytest.mark.parametrize("dynamo", [True, False])
def test_a_script_function_is_inlined_with_its_attribute_and_the_functions_it_calls(dynamo):
    x = torch.randn(4, 5)
    table = {torch.ops.aten.relu.default: scaled_relu}
    model_bytes, _ = export_bytes(ReluTimesThree(), (x,), dynamo=dynamo, custom_translation_table=table,
                                  opset_version=18)
    model = onnx.load_from_string(model_bytes)
    assert not model.functions and {o.domain for o in model.opset_import} == {""}
    _matches(model_bytes, torch.relu(x) * 6, x)


@onnxscript.script()
def abs_or_negated(x: FLOAT) -> FLOAT:
    total = op.ReduceSum(x, keepdims=0)
    if op.Greater(total, op.CastLike(0.0, total)):
        y = op.Abs(x)
    else:
        y = op.Neg(op.Abs(x))
    return y


class AbsPlusOne(torch.nn.Module):
    def forward(self, x):
        return torch.abs(x) + 1


@pytest.mark.parametrize("dynamo", [True, False])
def test_a_script_function_with_control_flow_is_inlined_with_its_branches(dynamo):
    x = torch.randn(3, 4)
    model_bytes, _ = export_bytes(AbsPlusOne(), (x,), dynamo=dynamo, opset_version=18,
                                  custom_translation_table={torch.ops.aten.abs.default: abs_or_negated})
    assert "If" in _op_types(model_bytes)
    for sample in (x + 5, x - 5):  # each branch taken at run time
        _matches(model_bytes, (sample.abs() if sample.sum() > 0 else -sample.abs()) + 1, sample)


def doubled(self: DOUBLE, other: DOUBLE) -> DOUBLE:
    return op.Add(op.Add(self, other), op.Add(self, other))


def halved(self: FLOAT, other: FLOAT) -> FLOAT:
    return op.Div(op.Add(self, other), 2.0)


def test_of_a_list_the_first_function_whose_annotated_types_fit_is_used():
    x, y = torch.randn(3), torch.randn(3)
    table = {torch.ops.aten.add.Tensor: [doubled, halved]}
    model_bytes, _ = export_bytes(Add(), (x, y), dynamo=True, custom_translation_table=table)
    _matches(model_bytes, (x + y) / 2, x, y)
    x64, y64 = x.double(), y.double()
    model_bytes, _ = export_bytes(Add(), (x64, y64), dynamo=True, custom_translation_table=table)
    _matches(model_bytes, 2 * (x64 + y64), x64, y64)


class SumRows(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


def reduce_sum_opset11(self, dim, keepdim=False, dtype=None):
    return op11.ReduceSum(self, axes=dim, keepdims=int(keepdim))


def test_a_function_written_for_another_opset_is_refused_where_its_op_changed():
    x = torch.randn(2, 3)
    table = {torch.ops.aten.sum.dim_IntList: reduce_sum_opset11}
    model_bytes, _ = export_bytes(SumRows(), (x,), dynamo=True, custom_translation_table=table, opset_version=11)
    _matches(model_bytes, x.sum(1), x)
    with pytest.raises(UnsupportedOperatorError, match=r"written against opset 11, whose ReduceSum \(version 11\) "
                                                        r"differs from opset 13's \(version 13\)"):
        export_bytes(SumRows(), (x,), dynamo=True, custom_translation_table=table, opset_version=13)


@pytest.mark.parametrize("opset", [13, 20])
def test_a_function_written_for_opset_18_serves_other_opsets_where_its_ops_mean_the_same(opset):
    """Sub-14 only added types to Sub-13 (float is in both); Constant-19 only added types to Constant-13."""
    def subtract_with_constant(self, other):
        return op.Sub(self, op.Mul(other, op.Constant(value_float=1.0)))

    x, y = torch.randn(2, 3), torch.randn(2, 3)
    model_bytes, _ = export_bytes(Add(), (x, y), dynamo=True, opset_version=opset,
                                  custom_translation_table={torch.ops.aten.add.Tensor: subtract_with_constant})
    _matches(model_bytes, x - y, x, y)


class AddTwice(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y, alpha=2)


@pytest.mark.parametrize("dynamo", [True, False])
def test_an_argument_the_function_cannot_take_is_refused_not_dropped(dynamo):
    with pytest.raises(SymbolicValueError, match="takes no argument 'alpha'"):
        export_bytes(AddTwice(), (torch.randn(2), torch.randn(2)), dynamo=dynamo,
                     custom_translation_table={torch.ops.aten.add.Tensor: subtract})


def test_a_table_that_is_not_a_dict_of_ops_to_functions_is_refused():
    with pytest.raises(exporter.errors.ExportArgumentError, match="custom_translation_table keys"):
        export_bytes(Add(), (torch.randn(2), torch.randn(2)), dynamo=True, custom_translation_table={"add": subtract})


class Markers(torch.nn.Module):
    def forward(self, x):
        y = torch.onnx.ops.symbolic("Elu", (x + 1,), {"alpha": 0.5}, dtype=x.dtype, shape=x.shape, version=18)
        values, indices = torch.onnx.ops.symbolic_multi_out(
            "TopK", (y, torch.tensor([2])), {"axis": 1}, dtypes=(x.dtype, torch.int64),
            shapes=((x.shape[0], 2), (x.shape[0], 2)))
        return values * 2, indices


def test_torch_onnx_ops_markers_become_the_onnx_nodes_they_describe():
    x = torch.randn(3, 4)
    model_bytes, _ = export_bytes(Markers(), (x,), dynamo=True, opset_version=18)
    assert {"Elu", "TopK"} <= set(_op_types(model_bytes))
    expected = torch.topk(torch.nn.functional.elu(x + 1, alpha=0.5), 2, dim=1)
    _matches(model_bytes, (expected.values * 2, expected.indices), x)


class CustomDomainMarker(torch.nn.Module):
    def forward(self, x):
        return torch.onnx.ops.symbolic("my.domain::Fancy", (x,), {"mode": "fast", "sizes": [1, 2]}, dtype=x.dtype,
                                       shape=x.shape, version=2)


def test_a_marker_of_a_custom_domain_imports_it_at_the_version_it_gives():
    model_bytes, _ = export_bytes(CustomDomainMarker(), (torch.randn(2, 3),), dynamo=True)
    model = onnx.load_from_string(model_bytes)
    assert {(o.domain, o.version) for o in model.opset_import if o.domain} == {("my.domain", 2)}
    node = model.graph.node[-1]
    assert (node.domain, node.op_type) == ("my.domain", "Fancy")
    assert {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute} == {"mode": b"fast", "sizes": [1, 2]}


class Rotary(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x, cos, sin, positions):
        return torch.onnx.ops.rotary_embedding(x, cos, sin, positions, **self.options)


@pytest.mark.parametrize("shape,options", [((2, 2, 5, 8), {}),
                                           ((2, 5, 16), {"interleaved": True, "num_heads": 2,
                                                         "rotary_embedding_dim": 4})])
def test_rotary_embedding_below_opset_23_is_its_exact_decomposition(shape, options):
    half = options.get("rotary_embedding_dim", 8) // 2
    x, cos, sin = torch.randn(shape), torch.randn(10, half), torch.randn(10, half)
    positions = torch.randint(0, 10, (2, 5))
    model = Rotary(**options)
    model_bytes, _ = export_bytes(model, (x, cos, sin, positions), dynamo=True, opset_version=18)
    _matches(model_bytes, model(x, cos, sin, positions), x, cos, sin, positions)


class Attention(torch.nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, q, k, v, mask):
        return torch.onnx.ops.attention(q, k, v, mask, **self.options)


@pytest.mark.parametrize("options,boolean_mask", [({}, False), ({"softcap": 2.0, "qk_matmul_output_mode": 2}, True),
                                                  ({"scale": 0.3, "qk_matmul_output_mode": 3,
                                                    "softmax_precision": 11}, False)])
def test_attention_below_opset_23_is_its_exact_decomposition(options, boolean_mask):
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)  # grouped key/value heads
    mask = torch.rand(5, 6) > 0.3 if boolean_mask else torch.randn(5, 6)
    model = Attention(**options)
    model_bytes, _ = export_bytes(model, (q, k, v, mask), dynamo=True, opset_version=18)
    _matches(model_bytes, model(q, k, v, mask), q, k, v, mask)


@torch.library.custom_op("ct_lib::scaled_gelu", mutates_args=())
def scaled_gelu(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.nn.functional.gelu(x) * scale


@scaled_gelu.register_fake
def _(x, scale):
    return torch.empty_like(x)


class ScaledGelu(torch.nn.Module):
    def forward(self, x):
        return scaled_gelu(x + 1, 3.0)


def test_a_library_custom_op_is_converted_through_its_registered_implementation():
    x = torch.randn(3, 4)
    model_bytes, _ = export_bytes(ScaledGelu(), (x,), dynamo=True, opset_version=18)
    _matches(model_bytes, ScaledGelu()(x), x)


def relu_scaled(x, scale):
    return op.Mul(op.Relu(x), scale)  # a Python float: a constant of x's element type


@pytest.mark.parametrize("dynamo", [True, False])
def test_the_table_converts_a_library_custom_op_in_both_captures(dynamo):
    x = torch.randn(3, 4)
    table = {torch.ops.ct_lib.scaled_gelu.default: relu_scaled}
    model_bytes, _ = export_bytes(ScaledGelu(), (x,), dynamo=dynamo, custom_translation_table=table)
    _matches(model_bytes, torch.relu(x + 1) * 3.0, x)


def test_a_symbolic_registered_for_the_custom_op_wins_over_its_implementation():
    exporter.register_custom_op_symbolic("ct_lib::scaled_gelu", lambda g, x, scale: g.op("ct.domain::Gelu", x), 9)
    try:
        model_bytes, _ = export_bytes(ScaledGelu(), (torch.randn(3, 4),), dynamo=True)
    finally:
        exporter.unregister_custom_op_symbolic("ct_lib::scaled_gelu", 9)
    assert "Gelu" in _op_types(model_bytes) and "Erf" not in _op_types(model_bytes)


@torch.library.custom_op("ct_lib::split_sum", mutates_args=())
def split_sum(x: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    return torch.stack([x[:end].sum() if end > 0 else x.new_zeros(()) for end in ends.tolist()])  # a data branch


@split_sum.register_fake
def _(x, ends):
    return x.new_empty(ends.shape)


class SplitSum(torch.nn.Module):
    def forward(self, x, ends):
        return split_sum(x, ends)


def test_an_implementation_torch_export_cannot_trace_is_reported_as_the_ops():
    with pytest.raises(UnsupportedOperatorError, match=r"ct_lib::split_sum .*could not trace its registered "
                                                       "implementation"):
        export_bytes(SplitSum(), (torch.randn(6), torch.tensor([2, 5])), dynamo=True)


class GroupedMatMul(torch.nn.Module):
    def forward(self, x, weight, offs):
        return torch.ops.transformers.grouped_mm_fallback(x, weight, offs)


def test_transformers_grouped_mm_fallback_is_exact_for_offsets_known_only_at_run_time():
    pytest.importorskip("transformers.integrations.moe")
    x, weight = torch.randn(9, 4), torch.randn(3, 4, 5)
    offs = torch.tensor([2, 2, 7], dtype=torch.int32)  # an empty group; rows 7 and 8 belong to none (zeros)
    model_bytes, _ = export_bytes(GroupedMatMul(), (x, weight, offs), dynamo=True, opset_version=18)
    for run_offs in (offs, torch.tensor([0, 5, 9], dtype=torch.int32)):
        _matches(model_bytes, GroupedMatMul()(x, weight, run_offs), x, weight, run_offs)


def test_transformers_own_translation_table_converts_the_grouped_matmul_and_a_boolean_masked_fill():
    """transformers' exporter hands torch.onnx its table; its functions read values as torch.onnx gives them
    (``mat_b.shape[0]``, ``self.dtype == onnx_ir.DataType.BOOL``)."""
    onnx_exporter = pytest.importorskip("transformers.exporters.exporter_onnx")
    table = onnx_exporter._ONNX_TRANSLATION_TABLE
    x, weight, offs = torch.randn(9, 4), torch.randn(3, 4, 5), torch.tensor([2, 2, 9], dtype=torch.int32)
    model_bytes, _ = export_bytes(GroupedMatMul(), (x, weight, offs), dynamo=True, custom_translation_table=table)
    assert "Split" in _op_types(model_bytes)  # transformers' form: one MatMul per expert
    _matches(model_bytes, GroupedMatMul()(x, weight, offs), x, weight, offs)

    class FillBools(torch.nn.Module):
        def forward(self, flags, mask):
            return flags.masked_fill(mask, True)

    flags, mask = torch.rand(3, 4) > 0.5, torch.rand(3, 4) > 0.5
    model_bytes, _ = export_bytes(FillBools(), (flags, mask), dynamo=True, custom_translation_table=table)
    assert "Or" in _op_types(model_bytes)
    _matches(model_bytes, flags | mask, flags, mask)


@pytest.mark.skipif(not os.environ.get("EXPORTER_SLOW_TESTS"), reason="13 s: set EXPORTER_SLOW_TESTS=1")
def test_olmoe_exports_through_torch_export_and_matches():
    transformers = pytest.importorskip("transformers")
    config = transformers.OlmoeConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=4, num_experts=4,
                                      num_experts_per_tok=2)
    model = transformers.OlmoeModel(config).eval()

    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids, use_cache=False).last_hidden_state

    ids = torch.randint(4, 96, (2, 7))
    model_bytes, _ = export_bytes(Plain(), (ids,), dynamo=True, opset_version=18)
    with torch.no_grad():
        _matches(model_bytes, Plain()(ids), ids, atol=1e-4)
