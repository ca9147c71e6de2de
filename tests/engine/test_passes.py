"""Graph passes: constant de-duplication and Transpose merging keep the model's results and shrink the graph."""

from __future__ import annotations

import collections
import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
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
    exporter.export(_DoubleTranspose(), (x,), buffer, opset_version=13, dynamo=False)
    model = onnx.load_from_string(buffer.getvalue())
    histogram = collections.Counter(node.op_type for node in model.graph.node)
    assert histogram["Transpose"] == 1
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    merged, cancelled = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    expected_merged, expected_cancelled = _DoubleTranspose()(x)
    np.testing.assert_array_equal(merged, expected_merged.numpy())
    np.testing.assert_array_equal(cancelled, expected_cancelled.numpy())


class _NestedCats(torch.nn.Module):
    """torch.cat of torch.cats: along the same axis (counted from either end) they join; along another they do not;
    an inner cat read twice stays."""

    def forward(self, x, y):
        same_axis = torch.cat([x, torch.cat([y, x], dim=-2), y], dim=1)
        other_axis = torch.cat([torch.cat([x, y], dim=2), torch.cat([y, x], dim=2)], dim=1)
        shared = torch.cat([y, y], dim=1)
        return same_axis, other_axis, torch.cat([shared, x], dim=1), shared * 2


def test_nested_concats_along_one_axis_become_one_with_the_same_results():
    x, y = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    buffer = io.BytesIO()
    exporter.export(_NestedCats(), (x, y), buffer, opset_version=13, dynamo=False)
    model = onnx.load_from_string(buffer.getvalue())
    concat_inputs = sorted(len(node.input) for node in model.graph.node if node.op_type == "Concat")
    # same_axis: one Concat of 4; other_axis: three of 2; shared and its reader: two of 2.
    assert concat_inputs == [2, 2, 2, 2, 2, 4]
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    results = session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), (x, y), strict=True)})
    for got, expected in zip(results, _NestedCats()(x, y), strict=True):
        np.testing.assert_array_equal(got, expected.numpy())


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
        exporter.export(_UnsqueezedWeight().eval(), (x,), buffer, opset_version=opset, dynamo=False)
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
    exporter.export(model, (x,), buffer, opset_version=13, dynamo=False)
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
    exporter.export(model, (x,), buffer, opset_version=14, output_names=["normalized"], dynamo=False)
    proto = onnx.load_from_string(buffer.getvalue())
    assert [node.op_type for node in proto.graph.node] == ["Conv"]
    assert list(proto.graph.node[0].output) == ["normalized"]
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0],
                               model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def _conv_bn(*norms: int, channels: int = 16, size: int = 3) -> torch.nn.Module:
    layers = [torch.nn.Conv2d(3, channels, size, padding=1)] + [torch.nn.BatchNorm2d(channels) for _ in norms]
    model = torch.nn.Sequential(*layers).eval()
    for norm in model[1:]:
        torch.nn.init.uniform_(norm.running_var, 0.5, 2.0)
        torch.nn.init.normal_(norm.running_mean)
        torch.nn.init.normal_(norm.weight)
    return model


def _results(data: bytes, x: torch.Tensor) -> np.ndarray:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


def test_two_batchnorms_in_a_row_fold_into_one_conv():
    model, x = _conv_bn(1, 2), torch.randn(2, 3, 6, 6)
    buffer = io.BytesIO()
    result = exporter.export_program(model, (x,), buffer, opset_version=14, dynamo=False)
    assert [node.op_type for node in result.model_proto.graph.node] == ["Conv"]
    np.testing.assert_allclose(_results(buffer.getvalue(), x), model(x).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_a_fused_weight_written_in_chunks_equals_the_product_made_at_once(monkeypatch):
    # The writer computes each fused weight a few rows at a time; chunks of one row exercise every boundary.
    from exporter import tensor_bytes

    model, x = _conv_bn(1, channels=24), torch.randn(1, 3, 8, 8)
    once = io.BytesIO()
    exporter.export(model, (x,), once, opset_version=14, dynamo=False)
    monkeypatch.setattr(tensor_bytes, "_CHUNK_BYTES", 1)
    chunked = io.BytesIO()
    result = exporter.export_program(model, (x,), chunked, opset_version=14, dynamo=False)
    assert chunked.getvalue() == once.getvalue()
    assert onnx.load_from_string(chunked.getvalue()) == result.model_proto  # the file and the result's model agree
    conv, norm = model[0], model[1]
    factor = (norm.weight / torch.sqrt(norm.running_var + norm.eps)).detach()
    weight = onnx.numpy_helper.to_array(next(t for t in result.model_proto.graph.initializer if t.dims[0] == 24
                                             and len(t.dims) == 4))
    np.testing.assert_allclose(weight, (conv.weight * factor[:, None, None, None]).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_results(chunked.getvalue(), x), model(x).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_the_deferred_product_counts_as_the_folding_pass_not_as_serialization():
    model, x = _conv_bn(1, channels=64), torch.randn(1, 3, 8, 8)
    stages = exporter.export_program(model, (x,), io.BytesIO(), opset_version=14, dynamo=False).stage_seconds
    assert stages["pass:fuse_conv_batchnorm"] > 0 and all(seconds >= 0 for seconds in stages.values())


# -- values the converter computes with PyTorch at export time -------------------------------------------------
class _MaskBuiltInPlace(torch.nn.Module):
    """Swin's shifted-window mask, in small: zeros of the input's type, painted region by region in place; the
    unpainted constant is read before the painting too, so computing the paint on the constant itself would show."""

    def forward(self, x):
        mask = x.new_zeros((4, 4))
        before = x + mask
        count = 0
        for rows in (slice(0, 2), slice(2, 4)):
            for cols in (slice(0, 1), slice(1, 4)):
                mask[rows, cols] = count
                count += 1
        return before, x + mask


def _run(buffer: io.BytesIO, *inputs: torch.Tensor) -> list[np.ndarray]:
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    # not strict: the export drops inputs the model does not read
    return session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs, strict=False)})


def test_a_mask_built_in_place_on_constants_is_computed_at_export_time():
    x = torch.randn(4, 4, dtype=torch.float64)
    for opset in (9, 16):
        buffer = io.BytesIO()
        exporter.export(_MaskBuiltInPlace(), (x,), buffer, opset_version=opset, dynamo=False)
        model = onnx.load_from_string(buffer.getvalue())
        assert sorted(node.op_type for node in model.graph.node if node.op_type != "Constant") == ["Add", "Add"]
        for got, expected in zip(_run(buffer, x), _MaskBuiltInPlace()(x), strict=True):
            np.testing.assert_array_equal(got, expected.numpy())
            assert got.dtype == np.float64


class _RandomInPlace(torch.nn.Module):
    def forward(self, x):
        return x + torch.zeros(1000).uniform_()


def test_random_in_place_ops_are_never_computed_at_export_time():
    from exporter.frontends.torchscript.driver import foldable_kind

    buffer = io.BytesIO()
    exporter.export(_RandomInPlace(), (torch.randn(1000),), buffer, opset_version=13, dynamo=False)
    assert "RandomUniform" in {node.op_type for node in onnx.load_from_string(buffer.getvalue()).graph.node}
    for kind in ("aten::uniform_", "aten::normal_", "aten::bernoulli_", "aten::random_", "aten::exponential_",
                 "aten::geometric_", "aten::cauchy_", "aten::log_normal_", "aten::resize_", "aten::set_"):
        assert not foldable_kind(kind), kind
    assert foldable_kind("aten::fill_") and foldable_kind("aten::masked_fill_")


@pytest.mark.parametrize("opset", [13, 18, 19, 20])
def test_a_quantized_weight_stays_quantized_and_matches_pytorch_to_the_step(opset):
    """Folding evaluates nodes with onnx.reference, which knows DequantizeLinear from opset 19: from 19 a quantized
    conv's weight was folded to floats, and ONNX Runtime's float conv was one step off PyTorch's integer kernel in
    6 % of the outputs (PyTorch's own exporter suite caught it). The weight's DequantizeLinear is kept at every
    opset, so ONNX Runtime fuses the integer kernel."""
    torch.manual_seed(0)
    model = torch.ao.nn.quantized.Conv2d(16, 33, 3, stride=2)
    model.set_weight_bias(torch.quantize_per_tensor(torch.randn(33, 16, 3, 3), 0.5, 0, torch.qint8),
                          torch.arange(33).to(torch.float) - 16)
    q_input = torch.quantize_per_tensor(torch.randn(3, 16, 32, 32), 0.5, 128, torch.quint8)
    buffer = io.BytesIO()
    exporter.export(model, (q_input,), buffer, opset_version=opset, dynamo=False)
    proto = onnx.load_from_string(buffer.getvalue())
    assert [node.op_type for node in proto.graph.node].count("DequantizeLinear") == 2  # the input's and the weight's
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    feeds = [q_input.int_repr().numpy(), np.array(0.5, np.float64), np.array(128, np.int64)]
    actual = session.run(None, dict(zip([i.name for i in session.get_inputs()], feeds, strict=True)))[0]
    np.testing.assert_array_equal(actual, model(q_input).int_repr().numpy())


class _NormalizedTable(torch.nn.Module):
    """An eval BatchNorm1d on a non-persistent buffer: every input of its BatchNormalization is known at export time."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4).eval()
        self.norm.running_mean.uniform_(-1, 1)
        self.norm.running_var.uniform_(0.5, 2)
        self.register_buffer("table", torch.randn(2, 4), persistent=False)

    def forward(self, x):
        return x + self.norm(self.table)


@pytest.mark.parametrize("opset", [9, 13, 14])
def test_an_inference_batchnorm_of_constants_computes_with_its_running_statistics(opset):
    """onnx.reference's BatchNormalization-9 (opsets 9-13) normalizes with the batch's own statistics (it takes the
    schema's default momentum for a training run): folding kept that, silently wrong. It is not folded there."""
    model, x = _NormalizedTable().eval(), torch.randn(2, 4)
    buffer = io.BytesIO()
    exporter.export(model, (x,), buffer, opset_version=opset, input_names=["x"], dynamo=False)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def _op(op_type: str, name: str, *inputs: ir.Value, **attrs) -> ir.Node:
    node = ir.Node(op_type, list(inputs), [ir.Value(name)], attrs, name=name)
    node.outputs[0].producer = node
    return node


def test_repeated_computations_share_the_first_and_chains_of_them_merge():
    x = ir.Value("x", dtype=onnx.TensorProto.FLOAT, shape=(2, 3))
    shape_a, shape_b, shape_c = (_op("Shape", name, x) for name in ("shape_a", "shape_b", "shape_c"))
    index = _constant("index", np.array(1, np.int64))
    gather_a = _op("Gather", "gather_a", shape_a.outputs[0], index.outputs[0], axis=0)
    gather_b = _op("Gather", "gather_b", shape_b.outputs[0], index.outputs[0], axis=0)
    other_axis = _op("Gather", "other_axis", shape_b.outputs[0], index.outputs[0], axis=-1)
    noise_a, noise_b = _op("RandomNormalLike", "noise_a", x), _op("RandomNormalLike", "noise_b", x)
    reader = _reader("out", gather_a.outputs[0], gather_b.outputs[0], other_axis.outputs[0])
    noise = _reader("noise", noise_a.outputs[0], noise_b.outputs[0])
    graph = ir.Graph("g", inputs=[x], outputs=[reader.outputs[0], noise.outputs[0], shape_c.outputs[0]],
                     nodes=[shape_a, shape_b, shape_c, index, gather_a, gather_b, other_axis, noise_a, noise_b, reader,
                            noise])
    passes.eliminate_common_subexpressions(graph)
    passes.remove_dead_nodes(graph)
    assert [v.producer.name for v in reader.inputs] == ["gather_a", "gather_a", "other_axis"]
    assert other_axis.inputs[0].producer.name == "shape_a"  # its input's duplicate was replaced too
    assert [v.producer.name for v in noise.inputs] == ["noise_a", "noise_b"]  # random draws stay apart
    assert [n.name for n in graph.nodes if n.op_type == "Shape"] == ["shape_a", "shape_c"]  # a graph output's stays


def test_common_subexpression_elimination_keeps_a_models_results_and_shrinks_it():
    class Dims(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.size(0), -1) + x.reshape(x.size(0), -1).sum(1, keepdim=True) * x.size(1)

    x = torch.randn(2, 3, 4)
    f = {optimize: io.BytesIO() for optimize in (True, False)}
    for optimize, target in f.items():
        exporter.export(Dims(), (x,), target, opset_version=17, dynamo=False, input_names=["x"],
                        dynamic_axes={"x": [0, 1, 2]}, optimize=optimize)
    counts = {k: collections.Counter(n.op_type for n in onnx.load_from_string(v.getvalue()).graph.node)
              for k, v in f.items()}
    assert counts[True]["Shape"] < counts[False]["Shape"]
    for target in f.values():
        session = ort.InferenceSession(target.getvalue(), providers=["CPUExecutionProvider"])
        for sample in (x, torch.randn(3, 5, 2)):
            np.testing.assert_allclose(session.run(None, {"x": sample.numpy()})[0], Dims()(sample).numpy(), rtol=1e-6)
