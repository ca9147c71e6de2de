"""Models whose parameters exceed 2 GiB are written with external data next to the model file.

The 2 GiB threshold is a module constant (``destination.EXTERNAL_DATA_THRESHOLD``); these tests lower it so a
small model takes the same path. A real >2 GiB export (torchvision vit_h_14) was checked by hand; it takes
minutes and ~6 GB of memory, too much for CI.
"""

from __future__ import annotations

import io
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import exporter
from exporter import destination, tensor_bytes
from exporter.errors import CheckerError, ExportArgumentError


class Wide(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 16)
        self.register_buffer("offset", torch.arange(16, dtype=torch.float32))

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x))) + self.offset


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(destination, "EXTERNAL_DATA_THRESHOLD", 16 * 1024)


def _run(path, x):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x.numpy()})[0]


def test_large_model_is_written_with_external_data(tmp_path, small_threshold, monkeypatch):
    model = Wide().eval()
    x = torch.randn(2, 64)
    target = tmp_path / "wide.onnx"
    exporter.export(model, (x,), str(target), dynamo=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wide.onnx", "wide.onnx.data"]
    sizes = [t.numel() * 4 for t in model.state_dict().values()]
    weights = sum(size for size in sizes if size >= destination.EXTERNAL_TENSOR_MIN_BYTES)
    assert target.stat().st_size < 4096 < weights <= (tmp_path / "wide.onnx.data").stat().st_size

    onnx.checker.check_model(str(target), full_check=True)
    proto = onnx.load(str(target), load_external_data=False)
    location = {t.name: t.data_location for t in proto.graph.initializer}
    assert location["fc1.weight"] == onnx.TensorProto.EXTERNAL and location["fc2.weight"] == onnx.TensorProto.EXTERNAL
    assert location["offset"] == onnx.TensorProto.DEFAULT  # small tensors stay inline
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "location":
            assert entry.value == "wide.onnx.data"  # relative: the pair can be moved together

    loaded = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(target)).graph.initializer}
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(loaded[name], tensor.numpy())

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # ONNX Runtime resolves the data file next to the model, not the cwd
    np.testing.assert_allclose(_run(target, x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class LargeConstant(torch.nn.Module):
    """No parameters: the large tensor is computed at export time and folded into a constant."""

    def forward(self, x):
        table = torch.arange(64 * 128, dtype=torch.float32).reshape(64, 128) / 1000
        return x @ table


def test_large_constants_go_to_external_data_too(tmp_path, small_threshold):
    target = tmp_path / "const.onnx"
    x = torch.randn(2, 64)
    exporter.export(LargeConstant(), (x,), str(target), dynamo=False)
    assert (tmp_path / "const.onnx.data").stat().st_size >= 64 * 128 * 4
    proto = onnx.load(str(target), load_external_data=False)
    assert not [n for n in proto.graph.node if n.op_type == "Constant" and n.attribute[0].t.ByteSize() > 4096]
    np.testing.assert_allclose(_run(target, x), LargeConstant()(x).numpy(), rtol=1e-5, atol=1e-5)


def test_relative_path_and_moved_pair_still_load(tmp_path, small_threshold, monkeypatch):
    model = Wide().eval()
    x = torch.randn(1, 64)
    monkeypatch.chdir(tmp_path)
    exporter.export(model, (x,), "relative.onnx", dynamo=False)
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("relative.onnx", "relative.onnx.data"):
        os.replace(tmp_path / name, moved / name)
    np.testing.assert_allclose(_run(moved / "relative.onnx", x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class CountsCalls(Wide):
    calls = 0

    def forward(self, x):
        type(self).calls += 1
        return super().forward(x)


def test_file_object_gets_a_clear_error_before_anything_runs_or_is_written(small_threshold):
    buffer = io.BytesIO()
    CountsCalls.calls = 0
    with pytest.raises(ExportArgumentError, match="pass a file path as f"):
        exporter.export(CountsCalls().eval(), (torch.randn(1, 64),), buffer, dynamo=False)
    assert buffer.getvalue() == b"" and CountsCalls.calls == 0


def test_file_object_is_fine_without_parameters(small_threshold):
    buffer = io.BytesIO()
    result = exporter.export_program(Wide().eval(), (torch.randn(1, 64),), buffer, export_params=False, dynamo=False)
    assert len(result.model_proto.graph.initializer) == 0 and buffer.getvalue()


def test_failed_validation_leaves_no_files_and_keeps_an_existing_model(tmp_path, small_threshold, monkeypatch):
    from exporter import validate

    target = tmp_path / "wide.onnx"
    target.write_bytes(b"previous")

    def reject(model_or_path):
        assert isinstance(model_or_path, str)  # external-data models are checked on their staged files
        raise CheckerError("rejected by the test")

    monkeypatch.setattr(validate, "check", reject)
    with pytest.raises(CheckerError, match="rejected by the test"):
        exporter.export(Wide().eval(), (torch.randn(1, 64),), str(target), dynamo=False)
    assert [p.name for p in tmp_path.iterdir()] == ["wide.onnx"]
    assert target.read_bytes() == b"previous"


def test_below_the_threshold_everything_is_inline(tmp_path):
    target = tmp_path / "wide.onnx"
    exporter.export(Wide().eval(), (torch.randn(1, 64),), str(target), dynamo=False)
    assert [p.name for p in tmp_path.iterdir()] == ["wide.onnx"]
    proto = onnx.load(str(target), load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.DEFAULT for t in proto.graph.initializer)


def test_external_data_with_dynamic_axes_and_opset_7(tmp_path, small_threshold):
    model = Wide().eval()
    target = tmp_path / "wide7.onnx"
    exporter.export(model, (torch.randn(2, 64),), str(target), opset_version=7, dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    x = torch.randn(5, 64)
    np.testing.assert_allclose(_run(target, x), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_a_batchnorm_folded_weight_goes_to_external_data(tmp_path, small_threshold, monkeypatch):
    # Conv+BatchNormalization folding defers the fused weight's product to the writer: the external data file too.
    model = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3), torch.nn.BatchNorm2d(32)).eval()  # 18 KiB
    torch.nn.init.uniform_(model[1].running_var, 0.5, 2.0)
    torch.nn.init.normal_(model[1].weight)
    x = torch.randn(1, 16, 6, 6)
    target = tmp_path / "conv.onnx"
    monkeypatch.setattr(tensor_bytes, "_CHUNK_BYTES", 1000)  # several chunks per weight
    exporter.export(model, (x,), str(target), input_names=["x"], dynamo=False)
    proto = onnx.load(str(target), load_external_data=False)
    assert [t.data_location for t in proto.graph.initializer if len(t.dims) == 4] == [onnx.TensorProto.EXTERNAL]
    monkeypatch.chdir(tmp_path)
    np.testing.assert_allclose(_run(target, x), model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
