"""The transformers route (``conformance --exporter transformers``): transformers' own ONNX exporter, which calls
torch.onnx.export itself, run with this engine in its place on the zoo's transformers architectures."""

from __future__ import annotations

import onnx_ir
import pytest

from conformance.cases import TRANSFORMERS_OPSETS, select
from conformance.schema import EXPORT
from conformance.transformers_route import TRANSFORMERS, architecture_names
from exporter.serialize import PRODUCER_NAME
from model_zoo.transformers_models import QUICK


def test_the_route_takes_the_tiers_architectures_dynamic_through_torch_export():
    quick = select(tier="quick", exporter=TRANSFORMERS)
    assert {case.name for case in quick} == set(QUICK)
    assert {(case.mode, case.capture, case.exporter) for case in quick} == {("dynamic", EXPORT, TRANSFORMERS)}
    assert {case.opset for case in quick} == set(TRANSFORMERS_OPSETS)
    full = select(tier="full", exporter=TRANSFORMERS, opsets=(18,))
    assert {case.name for case in full} == architecture_names() and len(full) == len(architecture_names())


@pytest.mark.parametrize("name", ["hf_bert"])
def test_a_case_exports_through_transformers_with_this_engine_and_matches_pytorch(name, tmp_path):
    from conformance.prepared import WorkerState
    from conformance.transformers_route import export_through_transformers
    from conformance.worker import configure_process, run_conformance_case

    configure_process()
    for scratch in ("worker", "again"):
        (tmp_path / scratch).mkdir()
    (case,) = select(tier="full", exporter=TRANSFORMERS, opsets=(18,), models=[name])
    row = run_conformance_case(case.as_dict(), WorkerState(str(tmp_path / "worker")), None)
    assert row["status"] == "pass", row["error"]
    assert "dynamic input 1" in row["comparison"]
    # the file transformers wrote is this engine's, not torch.onnx's
    state = WorkerState(str(tmp_path / "again"))
    export_through_transformers(state.prepare(name), str(tmp_path / "model.onnx"), 18)
    assert onnx_ir.load(str(tmp_path / "model.onnx")).producer_name == PRODUCER_NAME
