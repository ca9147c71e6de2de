"""conformance.onnx_schemas, which the op tests run on every case they export at every opset 7-20: it names what the
ONNX schema of the node's opset does not define, including what onnx.checker lets through."""

from __future__ import annotations

import io

import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

import exporter
from conformance.onnx_schemas import schema_problems
from exporter.registry import MAX_OPSET, MIN_OPSET


def _model(node: onnx.NodeProto, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in node.output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("node, opset, says", [
    (helper.make_node("ReduceMax", ["x"], ["y"], axes=[1]), 18, "ReduceMax-18 (opset 18) has no attribute 'axes'"),
    (helper.make_node("LayerNormalization", ["x", "x"], ["y"]), 16, "LayerNormalization does not exist at opset 16"),
    (helper.make_node("Cast", ["x"], ["y"]), 19, "Cast-19 (opset 19) needs attribute 'to'"),
    (helper.make_node("GridSample", ["x", "x"], ["y"], mode="bilinear"), 20,
     "GridSample-20 (opset 20) takes mode in ['cubic', 'linear', 'nearest'], not 'bilinear'"),
    (helper.make_node("GridSample", ["x", "x"], ["y"], mode="linear"), 16,
     "GridSample-16 (opset 16) takes mode in ['bicubic', 'bilinear', 'nearest'], not 'linear'"),
])
def test_each_kind_of_invalid_node_is_named(node, opset, says):
    assert schema_problems(_model(node, opset)) == [says]


def test_valid_nodes_and_custom_domains_pass():
    assert schema_problems(_model(helper.make_node("ReduceMax", ["x"], ["y"], axes=[1]), 17)) == []
    assert schema_problems(_model(helper.make_node("Split", ["x"], ["y", "z"], num_outputs=2), 18)) == []
    assert schema_problems(_model(helper.make_node("Anything", ["x"], ["y"], foo=1, domain="custom"), 20)) == []


def test_nodes_inside_subgraphs_are_checked():
    branch = helper.make_graph([helper.make_node("ReduceMax", ["x"], ["r"], axes=[0])], "b", [],
                               [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    assert len(schema_problems(_model(node, 18))) == 2


@pytest.mark.parametrize("opset", range(MIN_OPSET, MAX_OPSET + 1))
def test_an_export_across_the_forms_that_changed_at_17_to_20_is_valid(opset):
    """Reductions, Split, layer norm, activations and GridSample, whose ONNX forms changed from 17 to 20."""
    class Model(torch.nn.Module):
        def forward(self, x, grid):
            y = F.glu(F.layer_norm(x, (4,)), dim=1).amax(dim=1).sum(dim=1) + torch.logsumexp(x, dim=2).mean(dim=1)
            return F.gelu(F.mish(y), approximate="tanh"), F.grid_sample(x, grid, align_corners=False) if opset >= 16 else x

    buffer = io.BytesIO()
    exporter.export(Model(), (torch.randn(2, 4, 3, 4), torch.rand(2, 3, 3, 2) * 2 - 1), buffer, opset_version=opset, dynamo=False)
    assert schema_problems(onnx.load_from_string(buffer.getvalue())) == []


@pytest.mark.parametrize("opset", range(MIN_OPSET, MAX_OPSET + 1))
def test_the_issue_33_forms_are_valid_and_used_from_their_opsets(opset):
    """fold, scatter_reduce amax, circular pad, affine_grid, isinf on float16, amax on bool and stft: each exported
    in its newest ONNX form from the opset that brought it (Col2Im and ScatterElements max 18, Pad wrap 19,
    AffineGrid, IsInf on float16 and ReduceMax on bool 20, STFT 17), valid against its opset's schemas."""
    class Model(torch.nn.Module):
        def forward(self, cols, x, index, src, theta, half, mask, signal):
            outputs = [F.fold(cols, (4, 5), 2), F.pad(x, (1, 2), mode="circular"), torch.isinf(half), mask.amax(1)]
            if opset >= 9:
                outputs.append(x.scatter_reduce(2, index, src, "amax"))
            if opset >= 20:
                outputs.append(F.affine_grid(theta, [1, 1, 3, 4], align_corners=False))
            if opset >= 17:
                outputs.append(torch.view_as_real(torch.stft(signal, 8, window=torch.hann_window(8), return_complex=True)))
            return tuple(outputs)

    inputs = (torch.randn(1, 8, 12), torch.randn(1, 2, 5), torch.tensor([[[0, 4]]]), torch.randn(1, 1, 2),
              torch.randn(1, 2, 3), torch.randn(3).half(), torch.rand(2, 3) > 0.5, torch.randn(1, 32))
    buffer = io.BytesIO()
    exporter.export(Model(), inputs, buffer, opset_version=opset, dynamo=False)
    model = onnx.load_from_string(buffer.getvalue())
    assert schema_problems(model) == []
    op_types = {node.op_type for node in model.graph.node}
    newest = {"Col2Im": 18, "AffineGrid": 20, "STFT": 17}
    for op_type, since in newest.items():
        assert (op_type in op_types) == (opset >= since), (op_type, opset)

    def has(op_type, mode):
        return any(n.op_type == op_type and any(a.s == mode for a in n.attribute) for n in model.graph.node)

    assert has("ScatterElements", b"max") == (opset >= 18)
    assert has("Pad", b"wrap") == (opset >= 19)
    assert any(n.op_type == "IsInf" and n.input[0] == "half" for n in model.graph.node) == (opset >= 20)
    assert any(n.op_type == "ReduceMax" and n.input[0] == "mask" for n in model.graph.node) == (opset >= 20)
