"""op_tests.schemas, which the op tests run on every case they export at every opset 7-20: it names what the
ONNX schema of the node's opset does not define, including what onnx.checker lets through."""

from __future__ import annotations

import io

import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper

import exporter
from exporter.registry import MAX_OPSET, MIN_OPSET
from op_tests.schemas import schema_problems


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
    exporter.export(Model(), (torch.randn(2, 4, 3, 4), torch.rand(2, 3, 3, 2) * 2 - 1), buffer, opset_version=opset)
    assert schema_problems(onnx.load_from_string(buffer.getvalue())) == []
