"""Graph passes: constant de-duplication and Transpose merging keep the model's results and shrink the graph."""

from __future__ import annotations

import collections
import io

import numpy as np
import onnx
import onnxruntime as ort
import torch

import exporter
from exporter import ir, passes


def _constant(name: str, payload: np.ndarray) -> ir.Node:
    value = ir.Value(name, dtype=onnx.helper.np_dtype_to_tensor_dtype(payload.dtype), shape=payload.shape,
                     const=payload)
    node = ir.Node("Constant", [], [value], {"value": payload}, name=name)
    value.producer = node
    return node


def _reader(name: str, *inputs: ir.Value) -> ir.Node:
    node = ir.Node("Concat", list(inputs), [ir.Value(name)], {"axis": 0}, name=name)
    node.outputs[0].producer = node
    return node


def test_equal_constants_share_one_node_but_sign_and_rank_still_distinguish():
    nodes = [
        _constant("a", np.array([1], np.int64)),
        _constant("b", np.array([1], np.int64)),
        _constant("scalar", np.array(1, np.int64)),
        _constant("zero", np.array([0.0], np.float32)),
        _constant("negative_zero", np.array([-0.0], np.float32)),
    ]
    reader = _reader("out", *(n.outputs[0] for n in nodes))
    graph = ir.Graph("g", nodes=nodes + [reader], outputs=[reader.outputs[0]])
    passes.deduplicate_constants(graph)
    assert [n.name for n in graph.nodes] == ["a", "scalar", "zero", "negative_zero", "out"]
    assert [v.producer.name for v in reader.inputs] == ["a", "a", "scalar", "zero", "negative_zero"]


def test_large_constants_merge_only_when_every_byte_matches():
    weight = np.random.default_rng(0).standard_normal((64, 65)).astype(np.float32)  # > 4 KiB: the sampled path
    nudged = weight.copy()
    nudged[0, 1] = np.nextafter(nudged[0, 1], np.float32(1))  # an element the sample does not read
    nodes = [_constant("w", weight), _constant("same", weight.copy()), _constant("transposed_back", weight.T.T),
             _constant("nudged", nudged)]
    reader = _reader("out", *(n.outputs[0] for n in nodes))
    graph = ir.Graph("g", nodes=nodes + [reader], outputs=[reader.outputs[0]])
    passes.deduplicate_constants(graph)
    assert [v.producer.name for v in reader.inputs] == ["w", "w", "w", "nudged"]


def test_a_constant_that_is_a_graph_output_keeps_its_node():
    first, second = _constant("a", np.array([2.0])), _constant("b", np.array([2.0]))
    graph = ir.Graph("g", nodes=[first, second], outputs=[first.outputs[0], second.outputs[0]])
    passes.deduplicate_constants(graph)
    assert [n.name for n in graph.nodes] == ["a", "b"]


class _DoubleTranspose(torch.nn.Module):
    def forward(self, x):
        return x.transpose(1, 2).permute(0, 2, 3, 1) + 1, x.transpose(1, 2).transpose(1, 2) * 2


def test_consecutive_transposes_merge_and_cancel_with_the_same_results():
    x = torch.randn(2, 3, 4, 5)
    buffer = io.BytesIO()
    exporter.export(_DoubleTranspose(), (x,), buffer, opset_version=13)
    model = onnx.load_from_string(buffer.getvalue())
    histogram = collections.Counter(node.op_type for node in model.graph.node)
    assert histogram["Transpose"] == 1
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    merged, cancelled = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    expected_merged, expected_cancelled = _DoubleTranspose()(x)
    np.testing.assert_array_equal(merged, expected_merged.numpy())
    np.testing.assert_array_equal(cancelled, expected_cancelled.numpy())


class _UnsqueezedWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(3))

    def forward(self, x):
        return x + self.weight.unsqueeze(0).squeeze(0).unsqueeze(0)


def test_folding_evaluates_operators_in_the_target_opset_version():
    # Unsqueeze/Squeeze take axes as an attribute before opset 13 and as an input from 13 on.
    x = torch.randn(2, 3)
    for opset in (9, 11, 13):
        buffer = io.BytesIO()
        exporter.export(_UnsqueezedWeight().eval(), (x,), buffer, opset_version=opset)
        model = onnx.load_from_string(buffer.getvalue())
        assert [node.op_type for node in model.graph.node if node.op_type != "Constant"] == ["Add"], opset


class _TransposedWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(64, 32))

    def forward(self, x):
        return x @ self.weight.t() @ torch.ones(64, 2)


def test_folded_weights_become_initializers_small_constants_stay_nodes():
    x = torch.randn(3, 32)
    buffer = io.BytesIO()
    model = _TransposedWeight().eval()
    exporter.export(model, (x,), buffer, opset_version=13)
    proto = onnx.load_from_string(buffer.getvalue())
    assert [node.op_type for node in proto.graph.node] == ["MatMul", "Constant", "MatMul"]  # 512-byte ones: a node
    assert [tuple(t.dims) for t in proto.graph.initializer] == [(32, 64)]  # the folded 8 KiB transpose
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0],
                               model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_a_batchnorm_folded_into_the_conv_that_feeds_it_can_be_the_graph_output():
    # The BatchNormalization's output is the model's output: the fused Conv must produce it under its name.
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1, padding=1), torch.nn.BatchNorm2d(4)).eval()
    torch.nn.init.uniform_(model[1].running_var, 0.5, 2.0)
    torch.nn.init.normal_(model[1].running_mean)
    x = torch.randn(2, 3, 5, 5)
    buffer = io.BytesIO()
    exporter.export(model, (x,), buffer, opset_version=14, output_names=["normalized"])
    proto = onnx.load_from_string(buffer.getvalue())
    assert [node.op_type for node in proto.graph.node] == ["Conv"]
    assert list(proto.graph.node[0].output) == ["normalized"]
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0],
                               model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
