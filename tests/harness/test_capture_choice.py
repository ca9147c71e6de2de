"""The harness runs both captures: every row says how its model was captured (trace, script or export), ``run
--capture export`` exports with torch.export (dynamo=True) under case ids of its own, what torch.export cannot capture
is a row with its reason, the report shows the capture per case, and the gate compares like with like.

The fast tests work on crafted rows; one slow test runs real cases under ``--capture export`` in a worker process
(tiny models from tests/conformance_models.py, added to the zoo through $MODEL_ZOO_EXTRA).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conformance import gate
from conformance.results import read_rows
from conformance.runner import rerun_command
from conformance.schema import SCRIPTED_BEFORE_CAPTURE_FIELD, case_id, default_capture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTRA = "tests.conformance_models:entries"


@pytest.fixture()
def _test_models(monkeypatch):
    import model_zoo

    monkeypatch.setenv("MODEL_ZOO_EXTRA", EXTRA)
    model_zoo._all.cache_clear()
    yield
    model_zoo._all.cache_clear()


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(ident, status="pass", capture=None, **fields):
    row = {"case_id": ident, "status": status, "max_abs_error": 1e-6, "max_rel_error": 1e-5, "rtol": 1e-3,
           "atol": 1e-5, "error": "" if status == "pass" else "boom", "stage": "accuracy", **fields}
    if capture:
        row["capture"] = capture
    return row


# -- case ids and the capture field --------------------------------------------------------------------------
def test_export_case_ids_are_distinct_from_torchscript_ones():
    plain = case_id("model", "resnet18", 11, "static", "cpu")
    export = case_id("model", "resnet18", 11, "static", "cpu", "export")
    assert plain == "model/resnet18/opset11/static/cpu" and export == plain + "/export"
    with pytest.raises(ValueError, match="unknown capture"):
        case_id("model", "resnet18", 11, "static", "cpu", "trace")  # the run's choice, not the row's capture


def test_selection_under_each_capture_gives_disjoint_ids(_test_models):
    from conformance.cases import select

    both = {capture: {c.case_id for c in select(tier="full", opsets=(11, 16), models=["test_add_one"], capture=capture)}
            for capture in ("torchscript", "export")}
    assert len(both["torchscript"]) == len(both["export"]) == 4
    assert not both["torchscript"] & both["export"]
    assert all(ident.endswith("/export") for ident in both["export"])
    with pytest.raises(ValueError, match="TorchScript captures only"):
        select(tier="full", models=["test_add_one"], exporter="peer", capture="export")


def test_rows_without_a_capture_read_as_the_torchscript_capture_that_made_them(tmp_path):
    old = [_row("model/resnet18/opset11/static/cpu"), _row("example/list_loop/opset13/static/cpu"),
           _row("op/loop_while/opset13/static/cpu"), _row("op/opinfo/add/sample0/float32/opset13/static/cpu"),
           _row("model/resnet18/opset11/static/cpu/export"), _row("model/vgg11/opset11/static/cpu", capture="script")]
    rows = read_rows(str(_write(tmp_path / "old.jsonl", old)))
    assert [r["capture"] for r in rows] == ["trace", "script", "script", "trace", "export", "script"]
    assert "example/implicit_cast_type" in SCRIPTED_BEFORE_CAPTURE_FIELD
    assert default_capture({"case_id": "example/implicit_cast_type/opset9/dynamic/cuda"}) == "script"


def test_a_failed_case_reruns_under_its_capture():
    assert "--capture export" in rerun_command("model/a/opset11/static/cpu/export", "r.jsonl", capture="export")
    assert "--capture" not in rerun_command("model/a/opset11/static/cpu", "r.jsonl", capture="script")


# -- the command line -------------------------------------------------------------------------------------------
def test_list_takes_the_capture_and_refuses_a_bad_one(tmp_path, capsys, _test_models):
    from conformance.__main__ import main

    assert main(["list", "--tier", "full", "--models", "test_add_one", "--opsets", "13", "--mode", "static",
                 "--ep", "cpu", "--capture", "export"]) == 0
    assert capsys.readouterr().out.split() == ["example/test_add_one/opset13/static/cpu/export"]
    for argv, says in ((["--capture", "dynamo"], "invalid choice: 'dynamo'"),
                       (["--capture", "export", "--exporter", "peer"], "runs TorchScript captures only"),
                       (["--case", "example/test_add_one/opset13/static/cpu/export"], "add --capture export")):
        with pytest.raises(SystemExit) as stopped:
            main(["run", "--out", str(tmp_path / "r.jsonl"), *argv])
        assert stopped.value.code == 2 and says in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_an_export_run_writes_its_own_results_file_by_default():
    from conformance.__main__ import _default_out

    assert _default_out("quick", None) == os.path.join("results", "conformance_quick.jsonl")
    assert _default_out("quick", (0, 2), capture="export") == os.path.join("results", "conformance_quick_export.shard0of2.jsonl")


# -- the gate: like with like -------------------------------------------------------------------------------------
def test_gate_judges_a_baseline_row_only_against_a_row_of_the_same_capture():
    ident = "example/list_loop/opset13/static/cpu"
    old_baseline = {ident: _row(ident)}  # written before rows said their capture: read as script (list_loop is)
    assert gate.compare({ident: _row(ident, capture="script")}, old_baseline, []).passed
    # The same id captured otherwise is not the baseline's case: its row vanished, the other is a new case.
    result = gate.compare({ident: _row(ident, capture="trace")}, {ident: _row(ident, capture="script")}, [])
    assert {(f.case_id, f.kind) for f in result.findings} == {(ident, "vanished"), (ident, "newly_covered")}
    assert not result.passed and "not run with the baseline's capture (script)" in result.findings[0].after


def test_export_rows_never_meet_the_torchscript_baseline():
    trace = "model/resnet18/opset11/static/cpu"
    baseline = {trace: _row(trace, capture="trace")}
    results = {trace: _row(trace, capture="trace"),
               trace + "/export": _row(trace + "/export", status="export_error", capture="export", stage="capture")}
    found = {(f.case_id, f.kind) for f in gate.compare(results, baseline, []).findings}
    assert found == {(trace + "/export", "new_case_failing")}  # the trace row unchanged; the export one only new
    export_only = {trace + "/export": _row(trace + "/export", capture="export")}
    assert gate.compare(export_only, baseline, [], partial=True).no_evidence  # no baseline case of its capture ran


def test_cuda_coverage_note_counts_export_cases_too():
    cuda = "model/resnet18/opset11/static/cuda/export"
    notes = gate.cuda_notes({}, {cuda: _row(cuda, capture="export")})
    assert notes == ["CUDA: the baseline has 1 CUDA cases; this run ran 0"]


def test_a_refreshed_baseline_records_the_capture(tmp_path):
    results = _write(tmp_path / "r.jsonl", [_row("model/a/opset11/static/cpu/export", capture="export")])
    gate.update_baseline([results], tmp_path / "b.jsonl")
    assert json.loads((tmp_path / "b.jsonl").read_text())["capture"] == "export"


# -- the report -------------------------------------------------------------------------------------------------
def test_report_shows_the_capture_of_each_case_and_keeps_captures_apart(tmp_path):
    from reports.build import build_report

    rows = [_row("model/resnet18/opset11/static/cpu", kind="model", name="resnet18", opset=11, mode="static",
                 provider="cpu"),
            _row("model/resnet18/opset11/static/cpu/export", status="export_error", kind="model", name="resnet18",
                 opset=11, mode="static", provider="cpu", capture="export", stage="capture")]
    html_path = build_report([str(_write(tmp_path / "r.jsonl", rows))], str(tmp_path / "report"))
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [(m["name"], m["capture"], m["worst"]) for m in data["models"]] == [
        ("resnet18", "export", "export_error"), ("resnet18", "trace", "pass")]
    page = open(html_path, encoding="utf-8").read()
    assert "<th>Capture</th>" in page and 'data-capture="export"' in page and 'data-capture="trace"' in page


# -- a real run under --capture export ------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_export_run_records_captures_refusals_and_scripted_models(tmp_path, _test_models):
    """One worker, opset 13, static: a model torch.export captures (pass), one it refuses (data-dependent control
    flow: an export_error row at the capture stage with torch.export's reason) and a scripted one (skipped: torch.export
    takes an nn.Module). Then the TorchScript cases of two of them into the same file: both captures' rows live there."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
           "MODEL_ZOO_EXTRA": EXTRA}
    argv = [sys.executable, "-m", "conformance", "run", "--tier", "full", "--opsets", "13", "--mode", "static",
            "--ep", "cpu", "--workers", "1", "--no-progress", "--out", "r.jsonl"]
    done = subprocess.run([*argv, "--capture", "export", "--models",
                           "test_add_one,test_branches_on_data,test_scripted_add_one"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and "FAIL: 1 failing case(s)" in done.stderr, done.stdout + done.stderr
    rows = {row["name"]: row for row in read_rows(str(tmp_path / "r.jsonl"))}
    added, branches, scripted = rows["test_add_one"], rows["test_branches_on_data"], rows["test_scripted_add_one"]
    assert added["case_id"] == "example/test_add_one/opset13/static/cpu/export"
    assert (added["status"], added["capture"]) == ("pass", "export"), added["error"]
    assert "aten::add" in added["aten_ops"]
    assert (branches["status"], branches["stage"], branches["capture"]) == ("export_error", "capture", "export")
    assert branches["error"].startswith("torch.export could not capture the model") and "torch.export" in branches["reason"]
    assert "--capture export" in branches["rerun"]
    assert (scripted["status"], scripted["capture"]) == ("skipped", "export")
    assert "scripted model" in scripted["reason"]

    # The TorchScript cases of the same models (run in this process), appended to the same file.
    from conformance.cases import select
    from conformance.prepared import WorkerState
    from conformance.results import ResultsWriter
    from conformance.worker import configure_process, run_conformance_case

    configure_process()
    state, writer = WorkerState(str(tmp_path)), ResultsWriter(str(tmp_path / "r.jsonl"))
    for case in select(tier="full", opsets=(13,), modes=("static",), models=["test_add_one", "test_scripted_add_one"]):
        writer.append(run_conformance_case(case.as_dict(), state, None))
    both = {(row["name"], row["capture"]): row for row in read_rows(str(tmp_path / "r.jsonl"))}
    assert both[("test_add_one", "trace")]["case_id"] == "example/test_add_one/opset13/static/cpu"
    assert both[("test_scripted_add_one", "script")]["case_id"] == "example/test_scripted_add_one/opset13/static/cpu"
    assert {row["status"] for (_, capture), row in both.items() if capture != "export"} == {"pass"}
    assert len(both) == 5 and len({row["case_id"] for row in both.values()}) == 5


@pytest.mark.slow
def test_the_worker_reuses_one_export_capture_per_mode_and_its_refusal_too():
    """Exports from the worker's reused torch.export capture equal fresh ones; static and dynamic get a capture each
    (the program fixes its dynamic axes), and a refused capture is refused again from the cache, not re-captured."""
    import io

    import torch

    import exporter
    from conformance.prepared import prepared_capture
    from exporter.errors import CaptureError
    from tests.conformance_models import BranchesOnData

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5)).eval()
    args = (torch.randn(2, 3, 8, 8),)
    cache: dict = {}
    for opset, axes in ((11, None), (16, {"x": {0: "n"}}), (18, None)):
        fresh, reused = io.BytesIO(), io.BytesIO()
        exporter.export(model, args, fresh, opset_version=opset, input_names=["x"], dynamic_axes=axes, dynamo=True)
        captured = prepared_capture(cache, model, args, dynamo=True, dynamic_axes=axes, input_names=["x"])
        assert captured.capture == "export"
        exporter.export(model, args, reused, opset_version=opset, input_names=["x"], dynamic_axes=axes, dynamo=True,
                        captured=captured)
        assert fresh.getvalue() == reused.getvalue(), f"opset {opset}"
    assert len(cache) == 2
    refused, x = BranchesOnData(), (torch.randn(2, 4),)
    with pytest.raises(CaptureError, match="torch.export could not capture") as first:
        prepared_capture(cache, refused, x, dynamo=True)
    with pytest.raises(CaptureError) as again:
        prepared_capture(cache, refused, x, dynamo=True)
    assert again.value is first.value and len(cache) == 3


def test_one_word_per_capture_in_the_engine_and_the_results():
    """``exporter.Capture`` is the capture everywhere; the results schema writes its values (spelled out there so that
    reading results needs no torch), so a row, a case id and a command line read the same words the engine does."""
    from conformance import schema
    from exporter import Capture

    assert [capture.value for capture in Capture] == list(schema.CAPTURES)
    assert (schema.TRACE, schema.SCRIPT, schema.EXPORT) == (Capture.TRACE, Capture.SCRIPT, Capture.EXPORT)
    assert json.dumps({"capture": Capture.EXPORT}) == '{"capture": "export"}' and f"{Capture.SCRIPT}" == "script"
    assert case_id("op", "relu", 17, "static", "cpu", Capture.EXPORT) == "op/relu/opset17/static/cpu/export"
