"""API parity with the TorchScript-era exporter: unconvertible_ops, export types, training modes, local
functions, logging, is_in_onnx_export, parameters as inputs, dict/str arguments and the docs' examples.

Nodes in custom domains (ATen, fallthrough) cannot run on ONNX Runtime, which has no kernels for them; those
models are checked with the ONNX checker (every export runs it) and by structure. Everything else runs on
ONNX Runtime and is compared with PyTorch.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
import torch

import exporter
from exporter.errors import ExportArgumentError, UnsupportedOperatorError
from exporter.registry import REGISTRY
from tests.conftest import export_bytes, run_onnx

OET = exporter.OperatorExportTypes


def _hide(monkeypatch, *names):
    """Make ops look like they have no built-in symbolic (the docs' examples assume such ops)."""
    monkeypatch.setattr(REGISTRY, "_builtin", {k: v for k, v in REGISTRY._builtin.items() if k not in names})


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class TriuMul(torch.nn.Module):
    """The docs' ONNX_ATEN_FALLBACK example: aten::triu (assumed unsupported) then aten::mul."""

    def forward(self, x):
        return torch.triu(x, 0) * x


class ExpTriuLog(torch.nn.Module):
    def forward(self, x):
        return torch.log(torch.triu(torch.exp(x), 1) + 1)


# -- unconvertible_ops ------------------------------------------------------------------------------------------
def test_docs_unconvertible_ops_lists_every_op_at_once(monkeypatch):
    _hide(monkeypatch, "aten::triu", "aten::exp")
    graph, ops = exporter.unconvertible_ops(ExpTriuLog(), (torch.randn(3, 3),), opset_version=14)
    assert isinstance(graph, torch._C.Graph)
    assert ops == ["aten::exp", "aten::triu"]
    with pytest.raises(UnsupportedOperatorError, match="aten::exp"):  # export names only the first
        export_bytes(ExpTriuLog(), (torch.randn(3, 3),))


def test_unconvertible_ops_is_empty_for_a_convertible_model():
    _, ops = exporter.unconvertible_ops(ExpTriuLog(), (torch.randn(3, 3),), opset_version=14)
    assert ops == []


def test_unconvertible_ops_depends_on_the_opset():
    exporter.register_custom_op_symbolic("custom_ops::opset_probe", lambda g, x: g.op("Identity", x), 11)
    try:
        lib = torch.library.Library("custom_ops", "FRAGMENT")
        lib.define("opset_probe(Tensor x) -> Tensor")
        lib.impl("opset_probe", lambda x: x.clone(), "CompositeExplicitAutograd")

        class Probe(torch.nn.Module):
            def forward(self, x):
                return torch.ops.custom_ops.opset_probe(x) + 1

        missing_at_10 = exporter.unconvertible_ops(Probe(), (torch.randn(2),), opset_version=10)[1]
        assert missing_at_10 == ["custom_ops::opset_probe"]
        assert exporter.unconvertible_ops(Probe(), (torch.randn(2),), opset_version=11)[1] == []
    finally:
        exporter.unregister_custom_op_symbolic("custom_ops::opset_probe", 11)


class LogOfExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.triu(x.exp()).log()


class UsesFunction(torch.nn.Module):
    def forward(self, x):
        return LogOfExp.apply(x)


def test_unconvertible_ops_looks_inside_inlined_autograd_functions(monkeypatch):
    _hide(monkeypatch, "aten::triu")
    assert exporter.unconvertible_ops(UsesFunction(), (torch.rand(2, 2),), opset_version=14)[1] == ["aten::triu"]


# -- operator export types --------------------------------------------------------------------------------------
def test_onnx_export_type_fails_on_an_unconvertible_op(monkeypatch):
    _hide(monkeypatch, "aten::triu")
    with pytest.raises(UnsupportedOperatorError, match="aten::triu"):
        export_bytes(TriuMul(), (torch.randn(3, 3),))


def test_docs_aten_fallback_example(monkeypatch):
    _hide(monkeypatch, "aten::triu")
    _, result = export_bytes(TriuMul(), (torch.randn(3, 3),), operator_export_type=OET.ONNX_ATEN_FALLBACK)
    by_type = {n.op_type: n for n in result.model_proto.graph.node}
    assert sorted(by_type) == ["ATen", "Constant", "Mul"]
    aten = by_type["ATen"]
    assert aten.domain == "org.pytorch.aten"
    assert _attrs(aten) == {"operator": b"triu", "overload_name": b""}
    assert aten.input[0] == "x" and aten.input[1] == by_type["Constant"].output[0]
    assert by_type["Mul"].input[0] == aten.output[0]
    assert {o.domain for o in result.model_proto.opset_import} == {"", "org.pytorch.aten"}


def test_a_symbolic_returning_none_means_unconvertible():
    exporter.register_custom_op_symbolic("aten::triu", lambda g, x, diagonal: None, 9)
    try:
        with pytest.raises(UnsupportedOperatorError, match="aten::triu .*returned None"):
            export_bytes(TriuMul(), (torch.randn(3, 3),))
        _, result = export_bytes(TriuMul(), (torch.randn(3, 3),), operator_export_type=OET.ONNX_ATEN_FALLBACK)
        assert [n.op_type for n in result.model_proto.graph.node if n.domain] == ["ATen"]
    finally:
        exporter.unregister_custom_op_symbolic("aten::triu", 9)


def test_aten_fallback_keeps_converting_supported_ops():
    x = torch.randn(3, 3)
    data, result = export_bytes(TriuMul(), (x,), operator_export_type=OET.ONNX_ATEN_FALLBACK)
    assert "ATen" not in [n.op_type for n in result.model_proto.graph.node]
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], TriuMul()(x).numpy())


def test_onnx_aten_exports_every_aten_op_as_aten():
    _, result = export_bytes(ExpTriuLog(), (torch.randn(3, 3),), operator_export_type=OET.ONNX_ATEN)
    aten_nodes = [n for n in result.model_proto.graph.node if n.op_type == "ATen"]
    assert [_attrs(n)["operator"] for n in aten_nodes] == [b"exp", b"triu", b"add", b"log"]
    assert all(n.domain == "org.pytorch.aten" for n in aten_nodes)
    assert _attrs(aten_nodes[2])["overload_name"] == b"Tensor"
    assert {n.op_type for n in result.model_proto.graph.node} <= {"ATen", "Constant"}


def test_fallthrough_keeps_an_unconvertible_aten_op_in_the_aten_domain(monkeypatch):
    _hide(monkeypatch, "aten::triu")
    _, result = export_bytes(TriuMul(), (torch.randn(3, 3),), operator_export_type=OET.ONNX_FALLTHROUGH)
    triu = next(n for n in result.model_proto.graph.node if n.op_type == "triu")
    assert triu.domain == "org.pytorch.aten" and triu.input[0] == "x"
    assert "Mul" in [n.op_type for n in result.model_proto.graph.node]


def test_fallthrough_keeps_a_custom_op_in_its_namespace_domain():
    lib = torch.library.Library("fallthrough_ns", "DEF")
    lib.define("blend(Tensor a, Tensor b, float w) -> Tensor")
    lib.impl("blend", lambda a, b, w: a * w + b * (1 - w), "CompositeExplicitAutograd")

    class Blend(torch.nn.Module):
        def forward(self, a, b):
            return torch.ops.fallthrough_ns.blend(a, b, 0.25).exp()

    _, result = export_bytes(Blend(), (torch.randn(2), torch.randn(2)), operator_export_type=OET.ONNX_FALLTHROUGH)
    blend = next(n for n in result.model_proto.graph.node if n.op_type == "blend")
    assert blend.domain == "fallthrough_ns"
    assert list(blend.input[:2]) == ["a", "b"] and len(blend.input) == 3  # the float becomes a Constant input
    assert [n.op_type for n in result.model_proto.graph.node][-1] == "Exp"


@pytest.mark.parametrize("export_type", [OET.ONNX_ATEN, OET.ONNX_ATEN_FALLBACK, OET.ONNX_FALLTHROUGH])
def test_initializers_are_inputs_when_unset_for_non_onnx_export_types(export_type):
    # None, the default of torch.onnx.utils.export: the export type decides, as torch's TorchScript exporter decides
    _, result = export_bytes(torch.nn.Linear(3, 2), (torch.randn(1, 3),), operator_export_type=export_type,
                             keep_initializers_as_inputs=None)
    assert {"weight", "bias"} <= {i.name for i in result.model_proto.graph.input}
    # False, the default of torch.onnx.export (which passes it on): no initializer is an input
    _, default = export_bytes(torch.nn.Linear(3, 2), (torch.randn(1, 3),), operator_export_type=export_type)
    assert [i.name for i in default.model_proto.graph.input] == ["input"]


# -- training modes ----------------------------------------------------------------------------------------------
class DropNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(4)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(x))


def test_eval_mode_removes_dropout_and_uses_running_statistics():
    model = DropNorm().train()
    x = torch.randn(8, 4)
    data, result = export_bytes(model, (x,), training=exporter.TrainingMode.EVAL)
    assert "Dropout" not in [n.op_type for n in result.model_proto.graph.node]
    assert model.training  # restored
    expected = model.eval()(x).detach().numpy()
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], expected, rtol=1e-5, atol=1e-6)


def test_training_mode_keeps_dropout_and_batch_norm_in_training_form():
    model = DropNorm().eval()
    model.bn.running_mean.fill_(0.25)  # trained statistics (untrained ones take a runtime workaround, below)
    model.bn.running_var.fill_(2.0)
    _, result = export_bytes(model, (torch.randn(8, 4),), training=exporter.TrainingMode.TRAINING, opset_version=14)
    by_type = {n.op_type: n for n in result.model_proto.graph.node}
    assert "Dropout" in by_type
    assert _attrs(by_type["BatchNormalization"]).get("training_mode") == 1
    assert not model.training  # restored
    assert result.workarounds == []


def test_a_training_export_of_untrained_batch_norm_normalizes_with_batch_statistics_for_onnx_runtime():
    _, result = export_bytes(DropNorm(), (torch.randn(8, 4),), training=exporter.TrainingMode.TRAINING,
                             opset_version=14)
    assert "BatchNormalization" not in {n.op_type for n in result.model_proto.graph.node}
    assert result.workarounds == ["batch_norm_training_decomposed"]


@pytest.mark.parametrize("opset", [9, 12, 14, 16])
def test_training_mode_batch_norm_uses_batch_statistics_on_onnx_runtime(opset):
    model = torch.nn.BatchNorm1d(4).eval()
    x = torch.randn(16, 4) * 3 + 1
    data, _ = export_bytes(model, (x,), training=exporter.TrainingMode.TRAINING, opset_version=opset)
    expected = torch.nn.functional.batch_norm(x, None, None, model.weight, model.bias, training=True)
    np.testing.assert_allclose(run_onnx(data, {"input": x.numpy()})[0], expected.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("train", [True, False])
def test_preserve_mode_follows_the_model(train):
    model = DropNorm().train(train)
    _, result = export_bytes(model, (torch.randn(8, 4),), training=exporter.TrainingMode.PRESERVE, opset_version=14)
    assert ("Dropout" in [n.op_type for n in result.model_proto.graph.node]) == train
    assert model.training == train


def test_select_model_mode_for_export_sets_and_restores():
    model = DropNorm().train()
    with exporter.select_model_mode_for_export(model, exporter.TrainingMode.EVAL):
        assert not model.training
    assert model.training
    with exporter.select_model_mode_for_export(model.eval(), exporter.TrainingMode.TRAINING):
        assert model.training
    assert not model.training


class CountsTrainCalls(torch.nn.Module):
    """A module whose ``train`` does more than set flags (freezing statistics, say): it is always called."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4)
        self.calls = []

    def train(self, mode: bool = True):
        self.calls.append(mode)
        return super().train(mode)


def test_a_model_already_in_the_mode_is_left_alone_unless_it_overrides_train():
    model = DropNorm().eval()
    with exporter.select_model_mode_for_export(model, exporter.TrainingMode.EVAL):
        assert not any(m.training for m in model.modules())
    assert not any(m.training for m in model.modules())
    counted = CountsTrainCalls().eval()
    counted.calls.clear()
    with exporter.select_model_mode_for_export(counted, exporter.TrainingMode.EVAL):
        assert counted.calls == [False]
    assert counted.calls == [False, False]


def test_a_submodule_in_another_mode_is_set_to_the_mode_asked_for_and_restored_as_the_top_module():
    model = DropNorm().eval()
    model.bn.train()  # mixed modes: the export still runs every submodule in eval mode
    with exporter.select_model_mode_for_export(model, exporter.TrainingMode.EVAL):
        assert not model.bn.training
    assert not model.bn.training  # restored as PyTorch's exporter restores: the top module's mode, everywhere
    model.bn.train()
    with exporter.select_model_mode_for_export(model, exporter.TrainingMode.PRESERVE):
        assert model.bn.training  # PRESERVE exports the modes as they are
    assert not model.bn.training


# -- is_in_onnx_export, logging, pretty string --------------------------------------------------------------------
class ObservesExport(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(exporter.is_in_onnx_export())
        return x * 2 if exporter.is_in_onnx_export() else x


def test_model_can_observe_is_in_onnx_export():
    model = ObservesExport()
    x = torch.randn(3)
    assert not exporter.is_in_onnx_export()
    model(x)
    data, _ = export_bytes(model, (x,))
    assert model.seen[0] is False and model.seen[1:] and all(model.seen[1:])
    assert not exporter.is_in_onnx_export()
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], (x * 2).numpy())


def test_is_in_onnx_export_is_false_after_a_failed_export(monkeypatch):
    _hide(monkeypatch, "aten::triu")
    with pytest.raises(UnsupportedOperatorError):
        export_bytes(TriuMul(), (torch.randn(2, 2),))
    assert not exporter.is_in_onnx_export()


def test_enable_and_disable_log(capsys):
    exporter.enable_log()
    try:
        export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    finally:
        exporter.disable_log()
    logged = capsys.readouterr().err
    for stage in ("capturing", "converting", "optimizing", "assembling", "writing"):
        assert stage in logged
    assert re.search(r"export stages \([0-9.]+ s\): arguments [0-9.]+ s, capture [0-9.]+ s, capture passes [0-9.]+ s, "
                     r"names [0-9.]+ s, "
                     r"convert [0-9.]+ s, pass:", logged)
    export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    assert capsys.readouterr().err == ""


def test_the_result_records_wall_time_per_stage():
    _, result = export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    stages = list(result.stage_seconds)
    assert stages[:5] == ["arguments", "capture", "capture passes", "names", "convert"]
    assert stages[-3:] == ["check", "serialize", "result"]
    assert any(s.startswith("pass:") for s in stages) and "assemble" in stages
    assert all(seconds >= 0 for seconds in result.stage_seconds.values())


def test_verbose_turns_logging_on_for_one_export(capsys):
    export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), verbose=True)
    captured = capsys.readouterr()
    assert "capturing" in captured.err and "Gemm" in captured.out
    export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    assert capsys.readouterr().err == ""


def test_verbose_export_records_source_locations_in_doc_strings(capsys):
    _, result = export_bytes(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh()), (torch.randn(1, 2),),
                             verbose=True)
    docs = [n.doc_string for n in result.model_proto.graph.node]
    assert "linear.py" in docs[0] and "activation.py" in docs[1]
    _, quiet = export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    assert all(not n.doc_string for n in quiet.model_proto.graph.node)


def test_export_to_pretty_string_accepts_export_options():
    text = exporter.export_to_pretty_string(ExpTriuLog(), (torch.randn(2, 2),), opset_version=13)
    assert isinstance(text, str) and '"" : 13' in text
    assert "Exp" in text and "Trilu" not in text  # Trilu is opset 14: triu is emulated at 13
    assert "Log" in text


def test_export_to_pretty_string_google_printer_and_node_names():
    proto_text = exporter.export_to_pretty_string(torch.nn.Linear(2, 2), (torch.randn(1, 2),), google_printer=True)
    assert 'op_type: "Gemm"' in proto_text and "ir_version: 9" in proto_text  # opset 20: IR 9
    named = exporter.export_to_pretty_string(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    unnamed = exporter.export_to_pretty_string(torch.nn.Linear(2, 2), (torch.randn(1, 2),), add_node_names=False)
    def gemm_line(text):
        return next(line for line in text.splitlines() if "= Gemm" in line)

    assert gemm_line(named).strip().startswith('["') and not gemm_line(unnamed).strip().startswith('["')


# -- export_modules_as_functions ---------------------------------------------------------------------------------
class Block(torch.nn.Module):
    scale: float
    tag: str

    def __init__(self, width, tag, scale=0.5):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)
        self.scale = scale
        self.tag = tag

    def forward(self, x):
        return torch.tanh(self.lin(x)) * self.scale


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block(4, "first")
        self.b = Block(4, "second")
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.b(self.a(x))) + 1


def _functions(model):
    return {(f.domain, f.name): f for f in model.functions}


def test_modules_as_functions_true_outlines_every_module_and_runs():
    model = Stack().eval()
    x = torch.randn(3, 4)
    data, result = export_bytes(model, (x,), opset_version=15, export_modules_as_functions=True)
    functions = _functions(result.model_proto)
    assert set(functions) == {(__name__, "Block"), ("torch.nn.modules.linear", "Linear")}
    top = result.model_proto.graph.node
    assert [(n.domain, n.op_type) for n in top if n.op_type != "Constant"] == [
        (__name__, "Block"), (__name__, "Block"), ("torch.nn.modules.linear", "Linear"), ("", "Add")]
    block = functions[(__name__, "Block")]
    assert [n.op_type for n in block.node if n.op_type != "Constant"] == ["Linear", "Tanh", "Mul"]
    assert {o.domain for o in result.model_proto.opset_import} >= {__name__, "torch.nn.modules.linear"}
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_annotated_attributes_are_call_attributes():
    _, result = export_bytes(Stack().eval(), (torch.randn(3, 4),), opset_version=16,
                             export_modules_as_functions={Block})
    calls = [n for n in result.model_proto.graph.node if n.op_type == "Block"]
    assert [_attrs(c) for c in calls] == [{"scale": 0.5, "tag": b"first"}, {"scale": 0.5, "tag": b"second"}]
    assert list(_functions(result.model_proto)[(__name__, "Block")].attribute) == ["scale", "tag"]


def test_a_set_of_types_outlines_only_those():
    model = Stack().eval()
    x = torch.randn(3, 4)
    data, result = export_bytes(model, (x,), opset_version=15, export_modules_as_functions={torch.nn.Linear})
    assert set(_functions(result.model_proto)) == {("torch.nn.modules.linear", "Linear")}
    assert [n.op_type for n in result.model_proto.graph.node].count("Linear") == 3
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class TwoScales(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.one = Block(4, "one", scale=0.5)
        self.two = Block(4, "two", scale=0.25)
        self.three = Block(4, "three", scale=0.5)

    def forward(self, x):
        return self.three(self.two(self.one(x)))


def test_instances_differing_in_constants_share_a_function_with_inferred_attributes():
    model = TwoScales().eval()
    x = torch.randn(2, 4)
    data, result = export_bytes(model, (x,), opset_version=15, export_modules_as_functions={Block})
    (block,) = result.model_proto.functions
    inferred = [name for name in block.attribute if name.startswith("inferred::")]
    assert len(inferred) == 1
    references = [a for n in block.node for a in n.attribute if a.ref_attr_name]
    assert [a.ref_attr_name for a in references] == inferred
    calls = [n for n in result.model_proto.graph.node if n.domain == __name__]
    assert [c.op_type for c in calls] == ["Block", "Block", "Block"]
    scales = [float(onnx.numpy_helper.to_array(_attr_proto(c, inferred[0]).t)) for c in calls]
    assert scales == [0.5, 0.25, 0.5]
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def _attr_proto(node, name):
    return next(a for a in node.attribute if a.name == name)


class Gate(torch.nn.Module):
    def __init__(self, smooth: bool):
        super().__init__()
        self.smooth = smooth

    def forward(self, x):
        return torch.tanh(x) if self.smooth else torch.clamp(x, -1, 1)


class TwoGates(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.soft, self.hard = Gate(True), Gate(False)

    def forward(self, x):
        return self.hard(self.soft(x) * 3)


def test_instances_with_different_structure_get_separate_functions():
    model = TwoGates().eval()
    x = torch.randn(2, 4)
    data, result = export_bytes(model, (x,), opset_version=15, export_modules_as_functions={Gate})
    assert sorted(f.name for f in result.model_proto.functions) == ["Gate", "Gate_1"]
    assert sorted(n.op_type for n in result.model_proto.graph.node if n.domain == __name__) == ["Gate", "Gate_1"]
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class SharedActivation(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.act = torch.nn.Tanh()

    def forward(self, x):
        return self.act(self.lin(self.act(x)))


def test_one_instance_called_twice_makes_two_calls_with_unique_names():
    model = SharedActivation().eval()
    x = torch.randn(2, 3)
    data, result = export_bytes(model, (x,), opset_version=15, export_modules_as_functions={torch.nn.Tanh})
    calls = [n for n in result.model_proto.graph.node if n.op_type == "Tanh" and n.domain]
    assert len(calls) == 2 and len({c.name for c in calls}) == 2
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_modules_as_functions_needs_opset_15():
    with pytest.raises(ExportArgumentError, match="needs opset >= 15"):
        export_bytes(Stack(), (torch.randn(3, 4),), opset_version=14, export_modules_as_functions=True)


@pytest.mark.parametrize("selection", [{int}, "Linear", 3])
def test_modules_as_functions_rejects_non_module_types(selection):
    with pytest.raises(ExportArgumentError, match="set of nn.Module types"):
        export_bytes(Stack(), (torch.randn(3, 4),), opset_version=15, export_modules_as_functions=selection)


def test_modules_as_functions_needs_a_traced_module():
    scripted = torch.jit.script(torch.nn.Linear(4, 2).eval())
    with pytest.raises(ExportArgumentError, match="traced nn.Module"):
        export_bytes(scripted, (torch.randn(3, 4),), opset_version=15, export_modules_as_functions=True)


def test_torchvision_resnet_blocks_as_functions():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(1, 3, 64, 64)
    data, result = export_bytes(model, (x,), opset_version=15,
                                export_modules_as_functions={torchvision.models.resnet.BasicBlock})
    calls = [n for n in result.model_proto.graph.node if n.domain == "torchvision.models.resnet"]
    assert len(calls) == 8
    # Blocks with and without a downsample branch differ in structure; strides and channels become attributes.
    assert sorted(f.name for f in result.model_proto.functions) == ["BasicBlock", "BasicBlock_1"]
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], expected, rtol=1e-4, atol=1e-4)


# -- parameters, inputs and outputs -------------------------------------------------------------------------------
def test_export_params_false_runs_with_parameters_fed_in_state_dict_order():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).eval()
    x = torch.randn(2, 3)
    data, result = export_bytes(model, (x,), export_params=False)
    assert len(result.model_proto.graph.initializer) == 0
    names = [i.name for i in result.model_proto.graph.input]
    assert names == ["input", *model.state_dict().keys()]
    feeds = {"input": x.numpy(), **{k: v.numpy() for k, v in model.state_dict().items()}}
    np.testing.assert_allclose(run_onnx(data, feeds)[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("keep", [True, False])
def test_keep_initializers_as_inputs_runs_both_ways(keep):
    model = torch.nn.Linear(3, 2).eval()
    x = torch.randn(2, 3)
    data, result = export_bytes(model, (x,), keep_initializers_as_inputs=keep)
    assert ({"weight", "bias"} <= {i.name for i in result.model_proto.graph.input}) == keep
    assert {t.name for t in result.model_proto.graph.initializer} == {"weight", "bias"}
    np.testing.assert_allclose(run_onnx(data, {"input": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class StrMode(torch.nn.Module):
    def forward(self, x, mode: str):
        return x * 2 if mode == "double" else x * 3


def test_str_arguments_are_baked_into_the_graph():
    x = torch.randn(3)
    for mode, factor in (("double", 2), ("triple", 3)):
        data, result = export_bytes(StrMode(), (x, mode))
        assert [i.name for i in result.model_proto.graph.input] == ["x"]
        np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], (x * factor).numpy(), rtol=1e-6)


class DictInOut(torch.nn.Module):
    def forward(self, x, extras: dict):
        return {"sum": x + extras["a"], "prod": x * extras["b"]}


def test_dict_argument_needs_a_trailing_empty_dict_and_dict_outputs_flatten():
    x, a, b = torch.randn(2), torch.randn(2), torch.randn(2)
    data, result = export_bytes(DictInOut(), (x, {"a": a, "b": b}, {}))
    assert len(result.model_proto.graph.input) == 3 and len(result.model_proto.graph.output) == 2
    feeds = dict(zip([i.name for i in result.model_proto.graph.input], (x.numpy(), a.numpy(), b.numpy()), strict=True))
    got_sum, got_prod = run_onnx(data, feeds)
    np.testing.assert_allclose(got_sum, (x + a).numpy())
    np.testing.assert_allclose(got_prod, (x * b).numpy())


class KeywordModel(torch.nn.Module):
    def forward(self, x, y=None, z=None):
        out = x if y is None else x + y
        return out if z is None else out * z


def test_trailing_dict_is_keyword_arguments_and_missing_ones_take_defaults():
    x, z = torch.randn(3), torch.randn(3)
    data, result = export_bytes(KeywordModel(), (x, {"z": z}))
    assert [i.name for i in result.model_proto.graph.input] == ["x", "z"]
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy(), "z": z.numpy()})[0], (x * z).numpy(), rtol=1e-6)


class SumModule(torch.nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_docs_dynamic_axes_example():
    _, static = export_bytes(SumModule(), (torch.ones(2, 2),), input_names=["x"], output_names=["sum"])
    assert _dims(static.model_proto.graph.input[0]) == [2, 2] and _dims(static.model_proto.graph.output[0]) == [2]
    data, dynamic = export_bytes(
        SumModule(), (torch.ones(2, 2),), input_names=["x"], output_names=["sum"],
        dynamic_axes={"x": {0: "my_custom_axis_name"}, "sum": [0]},
    )
    assert _dims(dynamic.model_proto.graph.input[0]) == ["my_custom_axis_name", 2]
    assert _dims(dynamic.model_proto.graph.output[0]) == ["sum_dynamic_axes_1"]
    x = torch.randn(5, 2)
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy()})[0], x.sum(dim=1).numpy(), rtol=1e-6)
