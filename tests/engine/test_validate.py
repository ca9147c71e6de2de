"""Weights streamed into the model file and the check of the model's skeleton: the file parses to the ModelProto
the export returns, and the checker still rejects what it rejects on the whole model."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

import exporter
from exporter import tensor_bytes, validate
from exporter.errors import CheckerError


class _Weights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.big = torch.nn.Linear(64, 32)  # 8 KiB of weight: streamed
        self.small = torch.nn.Parameter(torch.randn(4))  # 16 bytes: inline
        self.register_buffer("scale16", torch.randn(32, 32).half())

    def forward(self, x):
        return self.big(x)[:, :4] * self.small + self.scale16.float()[:2, :4].sum()


@pytest.mark.parametrize("keep_initializers_as_inputs", [False, True])
def test_the_file_parses_to_the_returned_model_and_runs(keep_initializers_as_inputs, tmp_path):
    model, x = _Weights().eval(), torch.randn(2, 64)
    for target in (io.BytesIO(), str(tmp_path / "m.onnx")):
        result = exporter.export_program(model, (x,), target, opset_version=14,
                                 keep_initializers_as_inputs=keep_initializers_as_inputs, dynamo=False)
        data = target.getvalue() if isinstance(target, io.BytesIO) else open(target, "rb").read()
        parsed = onnx.load_from_string(data)
        assert parsed.SerializeToString() == result.model_proto.SerializeToString()
        assert {t.name for t in parsed.graph.initializer} >= {"big.weight", "small"}
        onnx.checker.check_model(parsed, full_check=True)
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        feeds = {session.get_inputs()[0].name: x.numpy()}
        np.testing.assert_allclose(session.run(None, feeds)[0], model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def _skeleton(weight_shape, output="y"):
    apart = tensor_bytes.StreamedWeights()
    assert apart.keep_apart(np.ones(weight_shape, np.float32), "w") is None
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 32])
    y = helper.make_tensor_value_info(output, TensorProto.FLOAT, [16, 32])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y])
    return apart, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def _rejected_by_onnx(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model.SerializeToString(), full_check=True)
    except Exception:
        return True
    return False


def test_a_valid_skeleton_passes_and_declares_each_weight_kept_apart():
    apart, skeleton = _skeleton((16, 32))
    declared = apart.declared(skeleton)
    assert [i.name for i in declared.graph.input] == ["x", "w"] and not declared.graph.initializer
    validate.check(declared.SerializeToString())
    assert [i.name for i in skeleton.graph.input] == ["x"]  # the skeleton itself is unchanged


@pytest.mark.parametrize("weight_shape, output", [((16, 32), "not_produced"), ((16, 33), "y")])
def test_graph_and_shape_errors_involving_a_weight_kept_apart_are_still_the_checkers(weight_shape, output):
    apart, skeleton = _skeleton(weight_shape, output)
    assert _rejected_by_onnx(apart.full_model(skeleton))
    with pytest.raises(CheckerError):
        validate.check(apart.declared(skeleton).SerializeToString())


class _SequenceLinear(torch.nn.Module):
    """A Linear on a 3-D input: its MatMul reads the transposed weight, a folded transpose (not contiguous)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(48, 40, bias=False)

    def forward(self, x):
        return self.proj(x)


def test_a_folded_transpose_is_written_in_row_major_order_chunk_by_chunk(monkeypatch):
    monkeypatch.setattr(tensor_bytes, "_CHUNK_BYTES", 7 * 40 * 4 + 1)  # 7 rows a chunk: 48 rows in 7 chunks
    chunks = []
    original = tensor_bytes.row_major_bytes
    monkeypatch.setattr(tensor_bytes, "row_major_bytes", lambda a: chunks.append(a.flags.c_contiguous) or original(a))
    model, x = _SequenceLinear().eval(), torch.randn(2, 5, 48)
    target = io.BytesIO()
    result = exporter.export_program(model, (x,), target, opset_version=14, dynamo=False)
    assert False in chunks, "the transposed weight was expected to stay a view until written"
    parsed = onnx.load_from_string(target.getvalue())
    assert parsed.SerializeToString() == result.model_proto.SerializeToString()
    weight = onnx.numpy_helper.to_array(parsed.graph.initializer[0])
    np.testing.assert_array_equal(weight, model.proj.weight.detach().numpy().T)
    session = ort.InferenceSession(target.getvalue(), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("view", [
    lambda a: a.transpose(2, 0, 1)[:, 1:],  # laid out by PyTorch
    lambda a: a[::-1].transpose(1, 0, 2),  # a negative stride: PyTorch cannot view it, NumPy lays it out
    lambda a: a.astype(">f4").transpose(2, 1, 0),  # big-endian: no PyTorch type
], ids=["transposed", "reversed", "big_endian"])
def test_row_major_bytes_of_a_view_equal_its_copy(view):
    array = view(np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7))
    assert not array.flags.c_contiguous
    assert b"".join(bytes(part) for part in tensor_bytes.row_major_bytes(array)) == np.ascontiguousarray(array).tobytes()
