"""The fallback rule (``exporter/capture_choice.py``): a caller who did not choose the capture gets torch.export's, and
the trace, with a warning naming torch.export's reason, where torch.export refuses the model; never a silently wrong
export (the fallback trace's dynamic axes are checked as any trace's). ``dynamo=DYNAMO_DEFAULT`` is what passing
nothing means once ``export``'s signature defaults to it."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch.export import Dim

import exporter
from exporter import Capture
from exporter.capture_choice import DYNAMO_DEFAULT, capture_choice
from exporter.errors import CaptureError, DynamicAxesError


class _BranchOnData(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow: torch.export refuses it, a trace records the branch taken
            return x * 2
        return x - 1


class _BranchOnDataFixedBatch(torch.nn.Module):
    def forward(self, x):
        rows = int(x.shape[0])  # a Python int: the trace records the example's batch
        y = x * 2 if x.sum() > 0 else x - 1
        return y.reshape(rows, -1)


def _run(data: bytes, x: torch.Tensor) -> np.ndarray:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]


def test_the_default_is_true_and_not_the_callers_true():
    assert DYNAMO_DEFAULT == True and bool(DYNAMO_DEFAULT) and repr(DYNAMO_DEFAULT) == "True"  # noqa: E712
    assert capture_choice(DYNAMO_DEFAULT).explicit is False and capture_choice(True).explicit is True
    assert capture_choice(DYNAMO_DEFAULT, torch.jit.script(torch.nn.ReLU())).dynamo is False


def test_where_torch_export_refuses_the_default_traces_with_its_reason():
    x = torch.rand(3, 4) + 0.1
    data = io.BytesIO()
    with pytest.warns(UserWarning, match=r"(?s)torch.export could not capture the model.*data-dependent.*"
                                         r"TorchScript trace instead"):
        result = exporter.export(_BranchOnData(), (x,), data, dynamo=DYNAMO_DEFAULT,
                                 dynamic_shapes={"x": {0: Dim("batch")}})
    assert result.capture.capture == Capture.TRACE
    assert onnx.load_from_string(data.getvalue()).graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    wider = torch.rand(5, 4) + 0.1
    np.testing.assert_allclose(_run(data.getvalue(), wider), _BranchOnData()(wider).numpy(), rtol=1e-6)


def test_a_caller_who_chose_torch_export_gets_its_refusal():
    with pytest.raises(CaptureError, match="data-dependent"):
        exporter.export(_BranchOnData(), (torch.rand(3, 4),), io.BytesIO(), dynamo=True)


def test_the_fallback_trace_is_checked_as_any_trace():
    with pytest.warns(UserWarning, match="TorchScript trace instead"), pytest.raises(DynamicAxesError, match="batch"):
        exporter.export(_BranchOnDataFixedBatch(), (torch.rand(3, 4) + 0.1,), io.BytesIO(), dynamo=DYNAMO_DEFAULT,
                        dynamic_shapes={"x": {0: Dim("batch")}})


def test_a_model_torch_export_takes_is_captured_by_it_and_a_script_keeps_its_graph():
    model = torch.nn.Linear(4, 2).eval()
    assert exporter.export(model, (torch.randn(2, 4),), io.BytesIO(), dynamo=DYNAMO_DEFAULT).capture.capture == Capture.EXPORT
    scripted = torch.jit.script(model)
    assert exporter.export(scripted, (torch.randn(2, 4),), io.BytesIO(),
                           dynamo=DYNAMO_DEFAULT).capture.capture == Capture.SCRIPT


def test_a_capture_prepared_with_the_default_falls_back_too_and_exports_as_a_trace():
    x = torch.rand(3, 4) + 0.1
    with pytest.warns(UserWarning, match="TorchScript trace instead"):
        captured = exporter.prepare_capture(_BranchOnData(), (x,), dynamo=DYNAMO_DEFAULT)
    assert captured.capture == Capture.TRACE
    data = io.BytesIO()
    result = exporter.export(_BranchOnData(), (x,), data, dynamo=DYNAMO_DEFAULT, captured=captured,
                             input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    assert result.capture.capture == Capture.TRACE
    wider = torch.rand(5, 4) + 0.1
    np.testing.assert_allclose(_run(data.getvalue(), wider), _BranchOnData()(wider).numpy(), rtol=1e-6)
