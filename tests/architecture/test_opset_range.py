"""One source for the opset range: exporter.registry's MIN_OPSET to MAX_OPSET. What cannot import the exporter
(command-line parsing, reports: importing torch costs seconds) writes the range out and is held equal here."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import exporter
from conformance.arguments import ALL_OPSETS
from exporter.errors import ExportArgumentError
from exporter.registry import MAX_OPSET, MIN_OPSET
from exporter.serialize import ir_version_for
from op_tests.opinfo.check import OPSETS as OPINFO_OPSETS
from op_tests.opinfo.expectations import OPSETS as EXPECTATION_OPSETS
from opcases import OPSETS as OP_TEST_OPSETS
from reports.results import OPSETS as REPORT_OPSETS


def test_the_range_is_7_to_onnx_runtime_s_26_with_torch_onnx_s_default():
    assert (MIN_OPSET, MAX_OPSET, exporter.DEFAULT_OPSET) == (7, 26, 20)


def test_every_copy_of_the_range_equals_the_registry_s():
    every = tuple(range(MIN_OPSET, MAX_OPSET + 1))
    assert ALL_OPSETS == OP_TEST_OPSETS == OPINFO_OPSETS == REPORT_OPSETS == every
    assert EXPECTATION_OPSETS == (MIN_OPSET, MAX_OPSET)


def test_the_installed_onnx_defines_every_opset_of_the_range():
    assert onnx.defs.onnx_opset_version() >= MAX_OPSET
    assert [ir_version_for(opset) for opset in (7, 9, 11, 13, 15, 17, 18, 19, 20)] == [3, 4, 6, 7, 8, 8, 8, 9, 9]
    # 21-26: IR 10 to 13, never onnx 1.23's default 14, which ONNX Runtime 1.31 refuses
    assert [ir_version_for(opset) for opset in range(21, 27)] == [10, 10, 11, 12, 13, 13]


@pytest.mark.parametrize("opset, dynamo", [(21, False), (23, True), (24, False), (26, True)])
def test_a_new_opset_exports_stamped_with_its_own_ir_version_and_runs(opset, dynamo):
    buffer = io.BytesIO()
    exporter.export(torch.nn.Linear(3, 2), (torch.randn(2, 3),), buffer, opset_version=opset, dynamo=dynamo)
    model = onnx.load_from_string(buffer.getvalue())
    assert [(o.domain, o.version) for o in model.opset_import] == [("", opset)]
    assert model.ir_version == ir_version_for(opset) <= 13
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    assert session.run(None, {session.get_inputs()[0].name: np.ones((2, 3), np.float32)})[0].shape == (2, 2)


@pytest.mark.parametrize("dynamo", [False, True])
def test_an_opset_above_26_is_refused_naming_26_and_why_before_writing(tmp_path, dynamo):
    target = tmp_path / "m.onnx"
    with pytest.raises(ExportArgumentError, match="26 is the newest opset ONNX Runtime 1.31 implements"):
        exporter.export(torch.nn.ReLU(), (torch.randn(2),), str(target), opset_version=27, dynamo=dynamo)
    assert not target.exists()
    with pytest.raises(ExportArgumentError, match="it refuses to load a model importing 27 or above"):
        exporter.export(torch.nn.ReLU(), (torch.randn(2),), str(target), opset_version=28, dynamo=dynamo)
