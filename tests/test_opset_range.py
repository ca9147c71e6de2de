"""One source for the opset range: exporter.registry's MIN_OPSET to MAX_OPSET. What cannot import the exporter
(command-line parsing, reports: importing torch costs seconds) writes the range out and is held equal here."""

from __future__ import annotations

import onnx

import exporter
from conformance.arguments import ALL_OPSETS
from exporter.registry import MAX_OPSET, MIN_OPSET
from exporter.serialize import ir_version_for
from op_tests.harness import OPSETS as OP_TEST_OPSETS
from op_tests.opinfo.check import OPSETS as OPINFO_OPSETS
from op_tests.opinfo.expectations import OPSETS as EXPECTATION_OPSETS
from reports.results import OPSETS as REPORT_OPSETS


def test_the_range_is_torch_onnx_s_7_to_20_with_its_default():
    assert (MIN_OPSET, MAX_OPSET, exporter.DEFAULT_OPSET) == (7, 20, 20)


def test_every_copy_of_the_range_equals_the_registry_s():
    every = tuple(range(MIN_OPSET, MAX_OPSET + 1))
    assert ALL_OPSETS == OP_TEST_OPSETS == OPINFO_OPSETS == REPORT_OPSETS == every
    assert EXPECTATION_OPSETS == (MIN_OPSET, MAX_OPSET)


def test_the_installed_onnx_defines_every_opset_of_the_range():
    assert onnx.defs.onnx_opset_version() >= MAX_OPSET
    assert [ir_version_for(opset) for opset in (7, 9, 11, 13, 15, 17, 18, 19, 20)] == [3, 4, 6, 7, 8, 8, 8, 9, 9]
