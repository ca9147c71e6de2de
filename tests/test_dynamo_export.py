"""``export(..., dynamo=True)``: torch.export capture through the same op library, at any opset 7-20.

Each test exports a real model, runs it in ONNX Runtime and compares with PyTorch; the refusals leave no file."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision

import exporter
from exporter.errors import CaptureError, ExportArgumentError, UnsupportedOperatorError


def _run(model_bytes: bytes, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {name: value.numpy() for name, value in feeds.items()})


def _export(model, args, opset, **options) -> tuple[exporter.ExportResult, bytes]:
    buffer = io.BytesIO()
    result = exporter.export(model, args, buffer, opset_version=opset, dynamo=True, **options)
    return result, buffer.getvalue()


def _opset_of(model_bytes: bytes) -> int:
    model = onnx.load_from_string(model_bytes)
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("opset", [9, 11, 14, 16, 18, 20])
def test_resnet18_at_the_opset_asked(opset):
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    result, written = _export(model, (x,), opset)
    assert _opset_of(written) == opset
    (actual,) = _run(written, {"x": x})
    np.testing.assert_allclose(actual, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
    assert result.capture.front_end == "export"


class _Flatten(torch.nn.Module):
    def forward(self, x, y):
        z = x.view(x.shape[0], -1) @ y
        return torch.nn.functional.layer_norm(z, z.shape[-1:]), x.new_zeros(x.shape[0])


@pytest.mark.parametrize("opset", [9, 13, 17, 20])
def test_dynamic_axes_become_dynamic_shapes(opset):
    model = _Flatten()
    x, y = torch.randn(3, 4, 5), torch.randn(20, 6)
    _, written = _export(model, (x, y), opset, dynamic_axes={"x": {0: "batch"}})
    outputs = onnx.load_from_string(written).graph.output
    assert [d.dim_param or d.dim_value for d in outputs[0].type.tensor_type.shape.dim] == ["batch", 6]
    assert [d.dim_param for d in outputs[1].type.tensor_type.shape.dim] == ["batch"]
    bigger = torch.randn(7, 4, 5)
    actual = _run(written, {"x": bigger, "y": y})
    for got, want in zip(actual, model(bigger, y)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_in_torch_export_form():
    model = _Flatten()
    batch = torch.export.Dim("batch")
    x, y = torch.randn(3, 4, 5), torch.randn(20, 6)
    _, written = _export(model, (x, y), 18, dynamic_shapes={"x": {0: batch}, "y": None})
    first = onnx.load_from_string(written).graph.input[0]
    assert first.type.tensor_type.shape.dim[0].dim_param  # named after torch.export's symbol
    got, _ = _run(written, {"x": torch.randn(2, 4, 5), "y": y})
    assert got.shape == (2, 6)


class _FixedBatch(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(2, 3)  # broadcasting fixes x's first axis to 2


class _Regroup(torch.nn.Module):
    def forward(self, x):
        return x.reshape(2, -1) * 2


def test_a_size_computed_from_a_dynamic_axis_stays_computed():
    _, written = _export(_Regroup(), (torch.randn(2, 3),), 18, dynamic_axes={"x": [0]})
    (got,) = _run(written, {"x": torch.arange(12.0).reshape(4, 3)})
    np.testing.assert_array_equal(got, _Regroup()(torch.arange(12.0).reshape(4, 3)).numpy())


def test_an_axis_the_code_fixes_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(CaptureError, match="specialized"):
        exporter.export(_FixedBatch(), (torch.randn(2, 3),), str(path), dynamo=True, dynamic_axes={"x": [0]})
    assert not path.exists()


class _DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


def test_what_torch_export_cannot_capture_is_a_capture_error_with_its_reason(tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(CaptureError, match="torch.export could not capture"):
        exporter.export(_DataDependent(), (torch.randn(3),), str(path), dynamo=True)
    assert not path.exists()


def test_argument_errors():
    model = torch.nn.Linear(3, 2)
    x = torch.randn(1, 3)
    with pytest.raises(ExportArgumentError, match="needs dynamo=True"):
        exporter.export(model, (x,), io.BytesIO(), dynamic_shapes={"input": {0: torch.export.Dim.DYNAMIC}})
    with pytest.raises(ExportArgumentError, match="dynamo must be"):
        exporter.export(model, (x,), io.BytesIO(), dynamo="yes")
    with pytest.raises(ExportArgumentError, match="nn.Module"):
        exporter.export(torch.jit.script(model), (x,), io.BytesIO(), dynamo=True)
    with pytest.raises(ExportArgumentError, match="needs dynamo=False"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True, export_modules_as_functions=True)
    with pytest.raises(ExportArgumentError, match="needs dynamo=False"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True,
                        operator_export_type=exporter.OperatorExportTypes.ONNX_FALLTHROUGH)
    with pytest.raises(ExportArgumentError, match="not both"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True, dynamic_axes={"input": [0]},
                        dynamic_shapes={"input": {0: torch.export.Dim.DYNAMIC}})


class _GridSample(torch.nn.Module):
    def forward(self, x, grid):
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


def test_an_op_below_its_opset_names_the_opset_that_works():
    args = (torch.randn(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1)
    with pytest.raises(UnsupportedOperatorError, match="grid_sampler.*16"):
        _export(_GridSample(), args, 15)
    _, written = _export(_GridSample(), args, 16)
    np.testing.assert_allclose(_run(written, {"x": args[0], "grid": args[1]})[0], _GridSample()(*args).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_no_torchscript_call_and_no_torchscript_warning(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a dynamo=True export called TorchScript")

    for name in ("trace", "script", "_get_trace_graph", "trace_module"):
        monkeypatch.setattr(torch.jit, name, refuse)
    monkeypatch.setattr(torch._C, "_create_graph_by_tracing", refuse)
    model = torchvision.models.mobilenet_v3_small().eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _export(model, (torch.randn(1, 3, 64, 64),), 17)
    shown = [str(w.message) for w in caught if "torchscript" in str(w.message).lower() or "torch.jit" in
             str(w.message)]
    assert not shown


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("opset", [14, 18])
def test_fully_masked_attention_rows_are_zero_as_in_pytorch(opset):
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False
    _, written = _export(_Attention(), (q, k, v, mask), opset)
    (got,) = _run(written, {"q": q, "k": k, "v": v, "mask": mask})
    want = _Attention()(q, k, v, mask).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_one_capture_serves_several_opsets():
    model = torchvision.models.squeezenet1_1().eval()
    x = torch.randn(1, 3, 64, 64)
    captured = exporter.prepare_capture(model, (x,), dynamo=True)
    for opset in (11, 18):
        shared = io.BytesIO()
        exporter.export(model, (x,), shared, opset_version=opset, captured=captured)
        _, own = _export(model, (x,), opset)
        assert shared.getvalue() == own


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.tanh(self.conv(x))


def test_provenance_names_the_aten_op_module_and_source_line():
    result, _ = _export(_Scaled(), (torch.randn(1, 3, 8, 8),), 18)
    origins = {node.op_type: result.provenance.node(node.name) for node in result.model.graph.node}
    assert (origins["Conv"].kind, origins["Conv"].scope) == ("aten::conv2d", "conv")
    assert origins["Tanh"].kind == "aten::tanh"
    assert origins["Tanh"].source.startswith(__file__ + ":")


class _Keywords(torch.nn.Module):
    def forward(self, x, *, scale):
        return x * scale


def test_keyword_arguments():
    x, scale = torch.randn(2, 3), torch.randn(3)
    _, written = _export(_Keywords(), (x,), 18, kwargs={"scale": scale})
    np.testing.assert_allclose(_run(written, {"x": x, "scale": scale})[0], (x * scale).numpy(), rtol=1e-6)
