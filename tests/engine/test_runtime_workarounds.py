"""Each runtime workaround (exporter/lowering/runtime.py) is exercised by a probe: the default export depends on it
and runs right in ONNX Runtime; the plain ONNX form (``runtime_workarounds=False``) is valid ONNX that the reference
evaluator computes right, and that ONNX Runtime still fails. When a runtime release closes the gap, the last test
fails and names the workaround that is no longer needed."""

from __future__ import annotations

import copy
import io

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator

import exporter
from exporter.lowering.runtime import WORKAROUNDS
from exporter.ort_session import make_session
from opcases import FunctionModule
from tests.engine.workaround_probes import Probe, all_probes

PROBES = all_probes()


def _export(probe: Probe, workarounds) -> tuple[exporter.ONNXProgram, bytes]:
    buffer = io.BytesIO()
    training = exporter.TrainingMode.TRAINING if probe.training else exporter.TrainingMode.EVAL
    result = exporter.export_program(FunctionModule(probe.fn).eval(), probe.inputs(), buffer, opset_version=probe.opset,
                             runtime_workarounds=workarounds, training=training, dynamo=False)
    return result, buffer.getvalue()


def _expected(probe: Probe) -> list[np.ndarray]:
    # A training probe's module runs in training mode, as its export, on a copy: the run changes its state.
    fn = copy.deepcopy(probe.fn).train() if probe.training else probe.fn
    with torch.no_grad():
        out = fn(*probe.inputs())
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else (out,))]


def _feeds(model: onnx.ModelProto, probe: Probe) -> dict:
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    return {name: t.numpy() for name, t in zip(names, probe.inputs(), strict=False)}  # unread inputs are dropped


def _for_reference(model: onnx.ModelProto, probe: Probe) -> onnx.ModelProto:
    if probe.reference_opset is None:
        return model
    raised = onnx.ModelProto()
    raised.CopyFrom(model)
    for entry in raised.opset_import:
        if entry.domain in ("", "ai.onnx"):
            entry.version = probe.reference_opset
    return raised


def _agree(expected: list[np.ndarray], actual: list) -> bool:
    return len(expected) == len(actual) and all(
        np.asarray(a).shape == e.shape and np.allclose(np.asarray(a, dtype=np.float64), e.astype(np.float64),
                                                       rtol=1e-5, atol=1e-6, equal_nan=True)
        for e, a in zip(expected, actual, strict=True))


def test_every_workaround_has_a_probe():
    assert sorted(WORKAROUNDS) == sorted({p.workaround for p in PROBES})


@pytest.mark.parametrize("probe", PROBES, ids=[p.workaround for p in PROBES])
def test_the_default_export_depends_on_the_workaround_and_runs_right(probe):
    result, data = _export(probe, True)
    assert probe.workaround in result.workarounds
    session = make_session(data, "cpu")
    assert _agree(_expected(probe), session.run(None, _feeds(result.model_proto, probe)))


@pytest.mark.parametrize("probe", PROBES, ids=[p.workaround for p in PROBES])
def test_the_plain_form_is_right_and_the_runtime_still_fails_it(probe):
    result, data = _export(probe, False)
    assert probe.workaround not in result.workarounds
    onnx.checker.check_model(result.model_proto, full_check=True)
    expected, feeds = _expected(probe), _feeds(result.model_proto, probe)
    assert _agree(expected, ReferenceEvaluator(_for_reference(result.model_proto, probe)).run(None, feeds)), (
        "the plain ONNX form is wrong")
    try:
        actual = make_session(data, "cpu").run(None, feeds)
    except Exception:  # the runtime rejects the plain form: the gap is still there
        assert probe.gap == "rejects", f"{probe.workaround}: the runtime now rejects the plain form instead of diverging"
        return
    assert probe.gap == "diverges" and not _agree(expected, actual), (
        f"ONNX Runtime now runs the plain form of {probe.workaround} right: remove the workaround")
