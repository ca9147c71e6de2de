"""Every op case, static and dynamic, on ONNX Runtime's CPU provider (and CUDA where present): by default at the
opsets ``op_tests/opset_plan.json`` chooses for it (its lowest, every opset where its form changes, the newest);
with ``OP_TESTS_OPSETS=all`` (``nox -s op_matrix``) at every opset 7-26.

Ids read ``test_op[gather-opset13-dynamic]``, so ``pytest op_tests -k "gather and opset13"`` selects them.
"""

from __future__ import annotations

import os

import pytest
import torch

from conformance.op_runner import run_case
from exporter import Capture
from op_tests.opset_plan import load_plan, planned_opsets
from op_tests.recording import record
from op_tests.torch_export_limits import EXPORT_MODES, EXPORT_OPSETS, unsupported_modes
from opcases import OPSETS, all_cases, export_modes

CASES = all_cases()


def _params(opsets=OPSETS, modes_wanted=("static", "dynamic"), plan=None):
    for case in CASES:
        for opset in opsets:
            for mode in export_modes(case, opset, modes_wanted):
                if plan is None or opset in planned_opsets(case, mode, plan):
                    yield pytest.param(case, opset, mode == "dynamic", id=f"{case.name}-opset{opset}-{mode}")


PARAMS = list(_params(plan=None if os.environ.get("OP_TESTS_OPSETS") == "all" else load_plan()))


def _check(case, opset, dynamic, provider, capture=Capture.TRACE):
    row = run_case(case, opset, dynamic, provider, capture=capture)
    if capture == Capture.TRACE:
        record(row)
    min_opset = case.min_opset_for(dynamic)
    if opset < min_opset:
        assert row["status"] == "unsupported", (
            f"{case.name} should be unsupported below opset {min_opset}, got {row['status']}: {row['error']}"
        )
        assert f"needs opset >= {min_opset}" in row["error"], row["error"]
        return
    known = case.known_failures_on(provider, dynamic)
    if opset in known:
        # strict: a known failure that passes is stale, and says so, rather than hiding a fix as an expected failure
        assert row["status"] != "pass", f"known failure now passes (remove it from the case): {known[opset]}"
        pytest.xfail(known[opset])
    assert row["status"] == "pass", f"[{row['stage']}] {row['error']}"


@pytest.mark.parametrize("case, opset, dynamic", PARAMS)
def test_op(case, opset, dynamic):
    _check(case, opset, dynamic, "cpu")


@pytest.mark.cuda
@pytest.mark.parametrize("case, opset, dynamic", PARAMS)
def test_op_cuda(case, opset, dynamic, cuda_available):
    if not cuda_available:
        pytest.skip("no CUDA device with ONNX Runtime's CUDAExecutionProvider on this machine")
    if opset < case.min_opset:
        pytest.skip("the unsupported-opset error is provider independent; checked by test_op")
    _check(case, opset, dynamic, "cuda")


@pytest.mark.parametrize("case, opset, dynamic", list(_params(EXPORT_OPSETS, EXPORT_MODES)))
def test_op_export(case, opset, dynamic):
    """The case through the torch.export capture (``dynamo=True``): the same expectations as through tracing, and
    where torch.export cannot take the model, the export fails with the reason the case declares."""
    if isinstance(case.build(), (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        row = run_case(case, opset, dynamic, "cpu", capture=Capture.EXPORT)
        assert row["status"] == "skipped", row["status"]
        pytest.skip(row["reason"])  # torch.export takes no ScriptModule (tests/engine/test_dynamo_export.py checks the refusal)
    modes, reason = unsupported_modes(case.name)
    if ("dynamic" if dynamic else "static") in modes and opset >= case.min_opset_for(dynamic):
        row = run_case(case, opset, dynamic, "cpu", capture=Capture.EXPORT)
        assert row["status"] != "pass", (
            f"{case.name} exports through torch.export now: remove it from op_tests/torch_export_limits.py")
        pytest.xfail(reason)
    _check(case, opset, dynamic, "cpu", capture=Capture.EXPORT)
