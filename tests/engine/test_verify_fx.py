"""exporter.verify on torch.export captures (dynamo=True): the same localization as on TorchScript captures, on small
real models run in PyTorch (the exported program's graph) and in ONNX Runtime."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import exporter
from exporter import verify
from exporter.localization.verifier import Verifier
from exporter.registry import REGISTRY
from tests.engine.backend_tests import run_backend_test

OPSET = 17


class _GatedNet(torch.nn.Module):
    """Two convolutions, a sigmoid gate and a classifier; the batch size is read from the input."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.conv2, self.fc = torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.Linear(8, 10)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv1(x)))
        z = self.conv2(y)
        gated = z * torch.sigmoid(z)
        return self.fc(gated.mean((2, 3)).reshape(x.size(0), -1))


def _gated_net():
    torch.manual_seed(0)
    return _GatedNet().eval(), (torch.randn(2, 3, 16, 16),)


def _line_of(function, text: str) -> str:
    lines, first = inspect.getsourcelines(function)
    return f"{inspect.getsourcefile(function)}:{first + next(k for k, line in enumerate(lines) if text in line)}"


def _op_type(result: exporter.VerifyResult, node_name: str) -> str:
    return next(node.op_type for node in result.export.model_proto.graph.node if node.name == node_name)


@pytest.fixture
def planted_sigmoid():
    """aten::sigmoid exported with its result scaled by a wrong 1.01 (for both captures: one op library)."""
    builtin = REGISTRY.lookup("aten::sigmoid", OPSET)

    def wrong(g, self):
        return g.op("Mul", builtin(g, self), g.const(torch.tensor(1.01)))

    exporter.register_custom_op_symbolic("aten::sigmoid", wrong, OPSET)
    yield
    exporter.unregister_custom_op_symbolic("aten::sigmoid", OPSET)


def test_a_correct_fx_export_verifies_clean():
    model, args = _gated_net()
    result = verify(model, args, OPSET, dynamo=True)
    assert result.export.capture.capture == "export"
    assert result.ok and result.outputs.ok and result.capture.ok, result.summary()
    assert result.divergence is None and result.first_out_of_tolerance is None
    # conv1+bn (fused), relu, conv2, sigmoid, mul, mean, reshape and the classifier
    assert result.compared >= 7


def test_verify_names_the_planted_wrong_sigmoid_its_fx_origin_and_a_repro_that_reproduces(planted_sigmoid, tmp_path):
    model, args = _gated_net()
    result = verify(model, args, OPSET, dynamo=True, repro_dir=str(tmp_path))
    assert not result.ok and not result.outputs.ok and result.capture.ok
    divergence = result.divergence
    assert divergence is not None
    assert _op_type(result, divergence.node) == "Mul"
    assert [op for _, op, _ in divergence.nodes if op != "Constant"] == ["Sigmoid", "Mul"]
    # Its FX origin: the ATen op and the model's own source line that called it.
    assert divergence.origin.kind == "aten::sigmoid"
    assert divergence.origin.source == _line_of(_GatedNet.forward, "torch.sigmoid(z)")
    assert divergence.inputs and all(a.ok for a in divergence.inputs)
    assert result.first_out_of_tolerance.value == divergence.value
    assert divergence.growth[0].value == divergence.value
    assert divergence.growth[-1].value == result.export.output_names[0]
    assert divergence.repro.culprit == "export"
    # The repro, an ONNX backend test, computes the planted 1.01 times PyTorch's result.
    repro, computed, expected = run_backend_test(tmp_path)
    np.testing.assert_allclose(computed, expected * 1.01, rtol=1e-5, atol=1e-6)


def test_both_captures_find_the_same_fault_at_the_same_onnx_op(planted_sigmoid):
    model, args = _gated_net()
    found = {}
    for dynamo in (False, True):
        divergence = verify(model, args, OPSET, dynamo=dynamo).divergence
        assert divergence is not None, f"dynamo={dynamo}"
        found[dynamo] = ([op for _, op, _ in divergence.nodes if op != "Constant"], divergence.origin.kind,
                         divergence.origin.source, divergence.repro.culprit)
    assert found[True] == found[False] == (["Sigmoid", "Mul"], "aten::sigmoid",
                                           _line_of(_GatedNet.forward, "torch.sigmoid(z)"), "export")


def test_a_dynamic_fx_export_is_verified_on_another_input_size():
    model, args = _gated_net()
    other = (torch.randn(3, 3, 20, 12),)
    result = verify(model, args, OPSET, dynamo=True, input_names=["x"], check_args=other,
                    dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}})
    dims = [d.dim_param for d in result.export.model_proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "", "height", "width"]
    # The program and the ONNX model both ran on the other size, their outputs agreeing with the model's there.
    assert result.ok and result.capture.ok, result.summary()
    assert result.compared >= 7 and result.divergence is None


class _TopScores(torch.nn.Module):
    """Scores capped at 0 (many exactly equal), the top five of them, and the embeddings of the items they pick."""

    def __init__(self):
        super().__init__()
        self.score, self.embed = torch.nn.Linear(8, 1), torch.nn.Linear(8, 4)

    def forward(self, x):
        scores = self.score(x).squeeze(-1).clamp(max=0.0)
        top, index = scores.topk(5)
        return top, torch.tanh(self.embed(x)[index])


def _top_scores():
    torch.manual_seed(0)
    return _TopScores().eval(), (torch.randn(64, 8),)


def test_an_fx_export_with_topk_is_judged_before_its_selection_as_the_torchscript_one():
    model, args = _top_scores()
    results = {dynamo: verify(model, args, OPSET, dynamo=dynamo, judge_selection=True) for dynamo in (False, True)}
    # The top five are picked among exactly equal scores, which PyTorch and ONNX Runtime order differently: the
    # picked rows differ, and the outputs cannot tell a right export from a wrong one ...
    assert not results[True].outputs.ok
    check = results[True].selection
    # ... the judgment before and in the selection can, and says what it says of the TorchScript capture.
    assert check.ok, check.summary()
    assert check.decisions == results[False].selection.decisions == {"aten::topk": 1}
    assert check.tie_broken == results[False].selection.tie_broken == 1  # the same values picked
    assert check.frontier >= 1 and check.frontier_max_abs < 1e-5  # the scores entering the top-k
    assert check.post_selection >= 3 and check.failure is None  # the top scores, their indices, the picked rows


def test_a_wrong_op_after_the_topk_fails_the_fx_judgment_in_the_selection():
    builtin = REGISTRY.lookup("aten::tanh", OPSET)

    def wrong(g, self):
        return g.op("Mul", builtin(g, self), g.const(torch.tensor(1.01)))

    model, args = _top_scores()
    exporter.register_custom_op_symbolic("aten::tanh", wrong, OPSET)
    try:
        check = verify(model, args, OPSET, dynamo=True, judge_selection=True).selection
    finally:
        exporter.unregister_custom_op_symbolic("aten::tanh", OPSET)
    assert not check.ok and check.stage == "selection"
    assert check.failure.origin.kind == "aten::tanh"
    assert check.divergence is not None and check.divergence.repro.culprit == "export"


class _Branches(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return torch.cond(y.sum() > 1, lambda v: torch.sin(v) * 2, lambda v: torch.cos(v) + 1, (y,)) - x


def test_values_inside_cond_branches_are_not_compared():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    result = verify(_Branches(), (x,), OPSET, dynamo=True)
    assert result.ok, result.summary()
    top = result.export.capture.program.graph_module.graph
    inner = [node for node, _ in result.export.provenance.values.values()
             if isinstance(node, torch.fx.Node) and node.graph is not top]
    assert inner  # the branches' values have provenance ...
    verifier = Verifier(result.export, [x], None, None, 1)
    verifier.run(_Branches()(x))
    assert all(node.graph is top for node in verifier.pairs.values())  # ... but only top-level values are compared
    branch = next(node for node in result.export.model_proto.graph.node if node.op_type == "If")
    assert result.export.provenance.node(branch.name).kind == "torch.ops.higher_order::cond"
    kinds = {verifier.graph.kind(node) for node in verifier.pairs.values()}
    assert kinds >= {"aten::relu", "torch.ops.higher_order::cond", "aten::sub"}  # the cond's result is compared
