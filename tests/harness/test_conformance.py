"""The conformance runner's own behaviour: verdicts, repro bundles, resume, timeouts, crashes, shards, merge.

Runs tiny models from tests/conformance_models.py (added to the zoo through $MODEL_ZOO_EXTRA). The tests that
start worker processes are marked slow: each worker imports torch before its first case.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

import exporter
from tests.conformance_models import AddOne

EXTRA = "tests.conformance_models:entries"


def TOL(scale: float) -> tuple[float, float]:
    """The default model tolerance, independent of the output's scale."""
    return 1e-3, 1e-5


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _test_models(monkeypatch):
    import model_zoo

    monkeypatch.setenv("MODEL_ZOO_EXTRA", EXTRA)
    model_zoo._all.cache_clear()
    yield
    model_zoo._all.cache_clear()


def _cases(names, opsets=(13,), modes=("static",), capture="torchscript"):
    from conformance.cases import select

    return select(tier="full", opsets=opsets, modes=modes, models=list(names), capture=capture)


def _run_in_process(case, tmp_path):
    from conformance.prepared import WorkerState
    from conformance.worker import configure_process, run_conformance_case

    configure_process()
    state = WorkerState(str(tmp_path))
    return run_conformance_case(case.as_dict(), state, str(tmp_path / "repro"))


def _rows(path):
    from conformance.results import read_rows

    return read_rows(str(path))


# -- verdicts, in process ------------------------------------------------------------------------------------
def test_pass_records_errors_and_graph_facts(tmp_path):
    (case,) = _cases(["test_add_one"], modes=("dynamic",))
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", row["error"]
    assert row["stage"] == "accuracy"
    assert row["max_abs_error"] is not None and row["max_abs_error"] < 1e-6
    assert "Add" in row["op_types"] and "aten::add" in row["aten_ops"]
    assert "dynamic input 1" in row["comparison"]
    assert row["repro"] is None


def test_the_peer_route_exports_with_torch_onnx_and_is_judged_on_its_outputs(tmp_path):
    from conformance.cases import select

    (case,) = select(tier="full", opsets=(13,), modes=("dynamic",), models=["test_add_one"], exporter="peer")
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", row["error"]
    assert row["exporter"] == "peer" and "Add" in row["op_types"]


def test_mismatch_writes_a_backend_test_bundle(tmp_path):
    (case,) = _cases(["test_bakes_a_random_number"])
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "mismatch" and row["stage"] == "accuracy"
    assert row["max_abs_error"] > 0
    bundle = row["repro"]
    assert sorted(os.listdir(bundle)) == ["case.json", "model.onnx", "test_data_set_0"]
    assert sorted(os.listdir(os.path.join(bundle, "test_data_set_0"))) == ["input_0.pb", "output_0.pb"]
    model = onnx.load(os.path.join(bundle, "model.onnx"))
    tensor = onnx.TensorProto()
    with open(os.path.join(bundle, "test_data_set_0", "input_0.pb"), "rb") as handle:
        tensor.ParseFromString(handle.read())
    assert tensor.name == model.graph.input[0].name
    assert numpy_helper.to_array(tensor).shape == (2, 4)
    assert json.load(open(os.path.join(bundle, "case.json")))["case_id"] == row["case_id"]


def test_an_export_with_its_input_names_swapped_is_a_mismatch(tmp_path, monkeypatch):
    """The graph reads its inputs the other way round from the names it gives them, as an export that binds two
    arguments to each other's inputs writes it: fed by position the run would agree with PyTorch; fed by the caller's
    names it computes y - 2 x."""
    from tests.harness.test_feeds import swapping_inputs

    monkeypatch.setattr(exporter, "export_program", swapping_inputs(exporter.export_program, "x", "y"))
    (case,) = _cases(["test_subtracts_twice"])
    row = _run_in_process(case, tmp_path)
    assert (row["status"], row["stage"]) == ("mismatch", "accuracy"), row["error"]
    model = onnx.load(os.path.join(row["repro"], "model.onnx"))
    assert [i.name for i in model.graph.input] == ["y", "x"]
    with open(os.path.join(row["repro"], "test_data_set_0", "input_0.pb"), "rb") as handle:
        assert onnx.TensorProto.FromString(handle.read()).name == "y"  # the bundle feeds by name too


@pytest.mark.parametrize("capture", ["torchscript", "export"])
def test_a_trailing_dict_out_of_forwards_order_is_bound_and_fed_by_its_names(tmp_path, capture):
    """{"y": y, "x": x} for forward(x, y), input_names ["x", "y"]: an export binding the dict in its own order puts
    the name x on y's tensor, which the run, fed by the caller's names, computes as y - 2 x."""
    (case,) = _cases(["test_keywords_out_of_order"], modes=("dynamic",), capture=capture)
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", row["error"]


def test_an_argument_the_export_drops_is_left_out_by_name_not_shifted(tmp_path):
    (case,) = _cases(["test_ignores_its_first_argument"])
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", row["error"]


def test_output_independent_of_input_is_inconclusive(tmp_path):
    (case,) = _cases(["test_constant_output"])
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "inconclusive"
    assert "does not depend on the input" in row["reason"]


def test_detections_all_on_near_ties_are_judged_before_the_selection(tmp_path):
    """The tied detector's final detections all sit on near-ties (once inconclusive); the values entering its
    threshold, top-k and NMS agree and every node after them computes PyTorch's result from PyTorch's inputs."""
    (case,) = _cases(["test_tied_detector"], opsets=(11,))
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", (row["error"], row["reason"])
    assert "near-ties" in row["reason"] and "judged before the data-dependent selection" in row["comparison"]
    (judged,) = row["selection"]
    assert judged["ok"] and judged["check"] == "input 0" and judged["decisions"] == {"aten::gt": 1}
    assert judged["frontier"] >= 2 and judged["post_selection"] >= 5


def test_quantized_model_beyond_tolerance_passes_only_when_every_quantized_value_is_within_a_step(tmp_path):
    (case,) = _cases(["test_quantized_steps"], opsets=(13,))
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "pass", (row["error"], row["reason"])
    assert "requantization steps" in row["reason"] and "re-judged node by node" in row["comparison"]
    assert row["max_abs_error"] > 0  # beyond its exact tolerance before the judgment


def test_quantized_model_with_a_wrong_quantize_stays_a_localized_mismatch(tmp_path):
    from exporter.registry import REGISTRY

    builtin = REGISTRY.lookup("aten::quantize_per_tensor", 13)
    exporter.register_custom_op_symbolic(
        "aten::quantize_per_tensor", lambda g, x, *args: builtin(g, g.op("Mul", x, g.const(torch.tensor(1.05))), *args),
        13)
    try:
        (case,) = _cases(["test_quantized_steps"], opsets=(13,))
        row = _run_in_process(case, tmp_path)
    finally:
        exporter.unregister_custom_op_symbolic("aten::quantize_per_tensor", 13)
    assert row["status"] == "mismatch"
    assert row["localization"]["kind"] == "aten::quantize_per_tensor"


def test_cuda_case_skips_with_reason_without_a_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the CUDA case runs instead of skipping")
    from conformance.cases import select

    (case,) = select(tier="full", opsets=(13,), modes=("static",), providers=("cuda",), models=["test_add_one"])
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "skipped" and "CUDA" in row["reason"]


@pytest.fixture()
def fake_gpu(monkeypatch):
    """PyTorch sees a GPU (faked); the worker's cached CUDA check starts afresh and is forgotten afterwards."""
    import torch

    from conformance import session

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    session.cuda_environment.cache_clear()
    yield session
    session.cuda_environment.cache_clear()


def _cuda_case():
    from conformance.cases import select

    (case,) = select(tier="full", opsets=(13,), modes=("static",), providers=("cuda",), models=["test_add_one"])
    return case


def test_a_gpu_without_onnx_runtime_cuda_provider_is_an_environment_error(tmp_path, fake_gpu, monkeypatch):
    import onnxruntime

    from conformance.verdict import is_failure

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    row = _run_in_process(_cuda_case(), tmp_path)
    assert row["status"] == "env_error" and "no CUDAExecutionProvider" in row["error"]
    assert is_failure(row)


def test_a_cuda_provider_that_silently_falls_back_to_cpu_is_an_environment_error(tmp_path, fake_gpu, monkeypatch):
    import onnxruntime

    class CpuSession:  # what ONNX Runtime returns when CUDAExecutionProvider fails to start: a CPU-only session
        def get_providers(self):
            return ["CPUExecutionProvider"]

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(fake_gpu, "make_session", lambda model, provider: CpuSession())
    row = _run_in_process(_cuda_case(), tmp_path)
    assert row["status"] == "env_error" and "fell back to ['CPUExecutionProvider']" in row["error"]


def test_the_real_onnx_runtime_fallback_is_caught_with_its_reason(fake_gpu):
    """No fakes below PyTorch: this onnxruntime-gpu build lists CUDAExecutionProvider, and without a GPU (or with
    missing CUDA libraries) creating it fails and the session falls back to CPU, which the probe catches."""
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a real GPU: ONNX Runtime's CUDA provider starts here, so there is no fallback to provoke")
    status, reason = fake_gpu.cuda_environment()
    assert status == "env_error" and "fell back to ['CPUExecutionProvider']" in reason
    assert "CUDA" in reason.split(":", 1)[1], reason  # ONNX Runtime's own words on why the provider failed


def test_cuda_cases_compare_with_pytorch_on_the_gpu_except_where_pytorch_cannot_run_there():
    """PyTorch's quantized kernels are CPU-only (a quantized model moved to CUDA killed the worker with SIGSEGV on
    an H200): those models' CUDA cases compare ONNX Runtime on CUDA with PyTorch on the CPU."""
    import model_zoo
    from conformance.worker import reference_device

    quantized, float_model = model_zoo.get("quantized_resnet18"), model_zoo.get("resnet18")
    assert [reference_device(float_model, p) for p in ("cpu", "cuda")] == ["cpu", "cuda"]
    assert [reference_device(quantized, p) for p in ("cpu", "cuda")] == ["cpu", "cpu"]
    assert all(not e.cuda_reference for e in model_zoo.entries() if e.family == "quantized_classification")


def test_a_cuda_provider_gap_is_a_known_failure_on_cuda_only():
    """An op case's ``cuda_known_failures`` (a gap of ONNX Runtime's CUDA provider, seen on a GPU) excuses that
    provider's failure at that opset; the same failure on the CPU provider still fails the run."""
    from conformance.op_runner import case_row, note_known_failure
    from conformance.verdict import is_failure
    from opcases import all_cases

    (case,) = [c for c in all_cases() if c.name == "interpolate_nearest_3d"]

    def refused(opset: int, provider: str) -> dict:
        row = case_row(case, opset, False, provider, "trace")
        row.update(status="ort_error", stage="ort_load", error="Upsample: 'Input dimension' must be <= 4, got 5")
        note_known_failure(case, row)
        return row

    assert not is_failure(refused(9, "cuda"))
    assert is_failure(refused(9, "cpu"))
    assert is_failure(refused(10, "cuda"))


# -- comparisons ---------------------------------------------------------------------------------------------
def test_reference_problem_spots_degenerate_outputs():
    from conformance.compare import reference_problem

    x = np.linspace(0, 1, 6, dtype=np.float32)
    assert reference_problem([x], [x + 0.5]) == ""
    assert "does not depend" in reference_problem([x], [x.copy()])
    assert "empty" in reference_problem([np.zeros((0, 4), np.float32)], [np.zeros((0, 4), np.float32)])
    assert "zero" in reference_problem([np.full(3, 1e-14, np.float32)], [np.full(3, 2e-14, np.float32)])
    assert "no finite value" in reference_problem([np.array([np.nan, np.inf], np.float32)], [np.array([1.0, 2.0], np.float32)])
    # a reference with some NaN or infinities is compared (the non-finite rule judges those positions)
    partly = np.array([np.nan, 1.0, -np.inf], np.float32)
    assert reference_problem([partly], [np.array([np.nan, 2.0, -np.inf], np.float32)]) == ""
    assert "does not depend" in reference_problem([partly], [partly.copy()])
    # a list output whose length follows the input: the outputs both runs have may be equal, the count moved
    assert reference_problem([x], [x.copy(), x + 1]) == ""


def test_detection_matching_ignores_order_but_not_moved_boxes():
    from conformance.compare import compare_detections

    names = ["boxes", "labels", "scores"]
    boxes = np.array([[0, 0, 10, 10], [20, 20, 40, 40], [50, 50, 60, 70]], np.float32)
    labels = np.array([1, 2, 3], np.int64)
    scores = np.array([0.9, 0.6, 0.3], np.float32)
    order = [2, 0, 1]
    verdict = compare_detections(names, [boxes, labels, scores], [boxes[order], labels[order], scores[order]], TOL)
    assert verdict.ok, verdict.message
    assert "2 of 2 tie-free" in verdict.comparison  # the lowest score is the cut-off: a near-tie by definition
    moved = boxes.copy()
    moved[0] += 5
    verdict = compare_detections(names, [boxes, labels, scores], [moved, labels, scores], TOL)
    assert not verdict.ok and "no ONNX match" in verdict.message


def test_zero_area_boxes_match_by_coordinates():
    """Boxes clipped to an image edge have no area, hence no IoU: they match where their coordinates agree."""
    from conformance.compare import compare_detections

    names = ["boxes", "labels", "scores"]
    boxes = np.array([[0, 0, 10, 10], [111.07, 216, 112, 216], [160, 99.7, 160, 104], [5, 5, 6, 9]], np.float32)
    labels, scores = np.array([1, 2, 2, 3], np.int64), np.array([0.9, 0.7, 0.5, 0.1], np.float32)
    verdict = compare_detections(names, [boxes, labels, scores], [boxes * (1 + 1e-5), labels, scores], TOL)
    assert verdict.ok and "3 of 3 tie-free" in verdict.comparison, verdict.message
    moved = boxes.copy()
    moved[1, 0] -= 3
    verdict = compare_detections(names, [boxes, labels, scores], [moved, labels, scores], TOL)
    assert not verdict.ok and "1 of 3 tie-free torch detections have no ONNX match" in verdict.message


def test_keypoints_on_different_heatmap_grids_are_not_compared():
    """Keypoint R-CNN decodes keypoints on a grid of ceil(box size): a box 71.001 high in torch and 70.999 in ONNX
    (well within the box tolerance) decodes on 72 vs 71 rows, so its keypoints legitimately move."""
    from conformance.compare import compare_detections

    names = ["boxes", "labels", "scores", "keypoints", "keypoints_scores"]
    boxes = np.array([[145.6, 86.749, 200.8, 157.750], [10, 10, 50, 60], [90, 90, 99, 99]], np.float32)
    labels, scores = np.array([1, 1, 1], np.int64), np.array([0.9, 0.5, 0.1], np.float32)
    keypoints = np.array([[[170, 120, 1]], [[20, 30, 1]], [[95, 95, 1]]], np.float32)
    keypoint_scores = np.array([[2.5], [1.5], [0.5]], np.float32)
    expected = [boxes, labels, scores, keypoints, keypoint_scores]
    near = boxes.copy()
    near[0, 3] -= 0.002  # height 71.001 -> 70.999
    moved = keypoints.copy()
    moved[0, 0, 1] += 25
    verdict = compare_detections(names, expected, [near, labels, scores, moved, keypoint_scores], TOL)
    assert verdict.ok and "keypoints of 1 detection(s) not compared" in verdict.comparison, verdict.message
    moved[1, 0, 1] += 25  # the second box sits on the same grid on both sides: its keypoints must agree
    verdict = compare_detections(names, expected, [near, labels, scores, moved, keypoint_scores], TOL)
    assert not verdict.ok and "detection 1 (keypoints)" in verdict.message


def test_detections_all_on_near_ties_compare_nothing():
    """Scores within a hair of each other (a random-weight RetinaNet) leave no detection to judge: never a pass."""
    from conformance.compare import compare_detections
    from exporter.numerics import Verdict

    names = ["boxes", "labels", "scores"]
    boxes = np.array([[0, 0, 10, 10], [2, 2, 12, 12], [50, 50, 60, 70]], np.float32)
    labels, scores = np.array([1, 1, 1], np.int64), np.array([0.0105, 0.0104, 0.0103], np.float32)
    verdict = compare_detections(names, [boxes, labels, scores], [boxes, labels, scores], TOL)
    assert verdict.compared_nothing and "no tie-free detection" in verdict.message
    assert verdict.merge(Verdict(True)).compared_nothing


def test_allclose_comparison_checks_shape_dtype_and_values():
    from exporter.numerics import compare_arrays

    a = np.ones((2, 3), np.float32)
    assert compare_arrays([a], [a + 1e-7], TOL).ok
    assert not compare_arrays([a], [a[:1]], TOL).ok
    assert not compare_arrays([a], [a.astype(np.float64)], TOL).ok
    verdict = compare_arrays([a], [a * 1.01], TOL)
    assert not verdict.ok and verdict.max_abs == pytest.approx(0.01, rel=1e-3)


def test_non_finite_values_must_sit_at_the_same_positions_with_the_same_sign():
    from exporter.numerics import compare_arrays

    expected = np.array([0.0, np.inf, -np.inf, np.nan], np.float32)
    assert compare_arrays([expected], [expected.copy()], TOL).ok
    for wrong in ([-np.inf, np.inf, -np.inf, np.nan], [0.0, -np.inf, -np.inf, np.nan], [0.0, np.inf, -np.inf, 0.0]):
        verdict = compare_arrays([expected], [np.array(wrong, np.float32)], TOL)
        assert not verdict.ok and "differ in NaN/Inf" in verdict.message


# -- selection, shards, results files -----------------------------------------------------------------------
def test_shards_partition_the_cases_by_model():
    from conformance.cases import select

    everything = select(tier="full", providers=("cpu",))
    shards = [select(tier="full", providers=("cpu",), shard=(i, 3)) for i in range(3)]
    ids = [c.case_id for shard in shards for c in shard]
    assert sorted(ids) == sorted(c.case_id for c in everything)
    models = [{c.name for c in shard} for shard in shards]
    assert not (models[0] & models[1]) and not (models[1] & models[2]) and not (models[0] & models[2])


def test_full_tier_covers_every_non_quantized_torchvision_model():
    from torchvision.models import list_models

    from conformance.cases import select

    names = {c.name for c in select(tier="full", providers=("cpu",), opsets=(14,), modes=("static",))}
    expected = {m for m in list_models() if not m.startswith("quantized_")}
    assert expected <= names


def test_merge_keeps_the_latest_row_per_case(tmp_path):
    from conformance.results import merge, read_rows

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"case_id": "x", "status": "timeout", "started_at": "2025-01-01T00:00:00"}) + "\n"
                 + json.dumps({"case_id": "y", "status": "pass", "started_at": "2025-01-01T00:00:00"}) + "\n")
    b.write_text(json.dumps({"case_id": "x", "status": "pass", "started_at": "2025-01-02T00:00:00"}) + "\n{torn")
    assert merge([str(a), str(b)], str(tmp_path / "m.jsonl")) == 2
    merged = {r["case_id"]: r["status"] for r in read_rows(str(tmp_path / "m.jsonl"))}
    assert merged == {"x": "pass", "y": "pass"}


def test_writer_repairs_a_torn_last_line(tmp_path):
    from conformance.results import ResultsWriter, read_rows

    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"case_id": "a", "status": "pass"}) + "\n" + '{"case_id": "b", "sta')
    ResultsWriter(str(path)).append({"case_id": "c", "status": "pass"})
    assert [r["case_id"] for r in read_rows(str(path))] == ["a", "c"]


# -- worker processes ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_timeouts_and_crashes_are_recorded_and_the_run_goes_on(tmp_path):
    from conformance.runner import RunOptions, run

    cases = _cases(["test_sleeps", "test_kills_its_process", "test_add_one"])
    out = tmp_path / "r.jsonl"
    rows = run(cases, RunOptions(out=str(out), workers=2, timeout_s=15, progress=False))
    status = {r["name"]: r for r in rows}
    assert status["test_sleeps"]["status"] == "timeout"
    assert status["test_kills_its_process"]["status"] == "crash"
    assert "signal 9" in status["test_kills_its_process"]["error"]
    assert status["test_add_one"]["status"] == "pass"
    assert all(r["rerun"] for r in rows if r["status"] in ("timeout", "crash"))
    assert {r["case_id"] for r in _rows(out)} == {c.case_id for c in cases}


@pytest.mark.slow
def test_killed_run_resumes_without_redoing_finished_cases(tmp_path):
    """Kill the whole run (parent and workers) while a case hangs; the re-run does only the unfinished cases."""
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "MODEL_ZOO_EXTRA": EXTRA, "PYTHONPATH": ROOT}
    command = [sys.executable, "-m", "conformance", "run", "--tier", "full", "--models", "test_add_one,test_sleeps",
               "--opsets", "13", "--ep", "cpu", "--out", str(out), "--workers", "1", "--no-progress"]
    # test_add_one comes first in the zoo, so its two cases finish before test_sleeps hangs the only worker.
    process = subprocess.Popen([*command, "--timeout", "600"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and len(_rows(out)) < 2:
            time.sleep(0.5)
        time.sleep(1.0)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    first = {r["case_id"]: r["started_at"] for r in _rows(out)}
    assert len(first) == 2 and all("test_add_one" in case for case in first)
    resumed = subprocess.run([*command, "--timeout", "5"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 1 and "FAIL: 2 failing case(s)" in resumed.stderr  # the timeouts fail the run
    rows = _rows(out)
    ids = [r["case_id"] for r in rows]
    assert len(ids) == len(set(ids)) == 4  # 2 models x 2 modes, each exactly once
    assert all(r["started_at"] == first[r["case_id"]] for r in rows if r["case_id"] in first)
    assert {r["status"] for r in rows if "test_sleeps" in r["case_id"]} == {"timeout"}
    assert "2 already in" in resumed.stderr


@pytest.mark.slow
def test_ctrl_c_stops_the_run_at_once_and_says_how_to_resume(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while a case hangs: the run stops within
    seconds with exit 130 and one line naming what is recorded, not a traceback, and keeps the finished rows."""
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "MODEL_ZOO_EXTRA": EXTRA, "PYTHONPATH": ROOT}
    command = [sys.executable, "-m", "conformance", "run", "--tier", "full", "--models", "test_add_one,test_sleeps",
               "--opsets", "13", "--ep", "cpu", "--out", str(out), "--workers", "1", "--no-progress",
               "--timeout", "600"]
    # stderr goes to a file, not a pipe: a pipe nobody reads until the end blocks the run once it holds 64 KiB
    # (warnings on a loaded machine), and a blocked run neither records rows nor stops.
    with open(tmp_path / "stderr.txt", "w") as stderr_file:
        # SIGINT restored to its default in the run, as a terminal starts a foreground program: a shell's background
        # job (`.ci/run &`) ignores SIGINT, and an ignored signal stays ignored across exec.
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr_file,
                                   text=True, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and len(_rows(out)) < 2:
                time.sleep(0.5)
            time.sleep(1.0)
            os.killpg(process.pid, signal.SIGINT)
            interrupted_at = time.monotonic()
            process.wait(timeout=60)
            stopped_after = time.monotonic() - interrupted_at
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    stderr = (tmp_path / "stderr.txt").read_text()
    assert process.returncode == 130, stderr
    assert stopped_after < 30
    assert f"interrupted: 2 cases are recorded in {out}; the same command resumes the run" in stderr
    assert "Traceback" not in stderr
    assert len(_rows(out)) == 2


def test_reusing_the_capture_across_opsets_changes_nothing(tmp_path):
    """The runner traces once per model; exports from the reused capture must equal fresh exports."""
    import io

    import torch

    import exporter
    from conformance.prepared import prepared_capture

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 6 * 6, 5)).eval()
    args = (torch.randn(2, 3, 8, 8),)
    cache: dict = {}
    for opset, axes in ((9, None), (13, {"x": {0: "n"}}), (16, None)):
        fresh, reused = io.BytesIO(), io.BytesIO()
        exporter.export(model, args, fresh, opset_version=opset, input_names=["x"], dynamic_axes=axes, dynamo=False)
        exporter.export(model, args, reused, opset_version=opset, input_names=["x"], dynamic_axes=axes,
                        captured=prepared_capture(cache, model, args), dynamo=False)
        assert fresh.getvalue() == reused.getvalue(), f"opset {opset}"
    assert len(cache) == 1


# -- float64 arbitration of float32 mismatches --------------------------------------------------------------
def test_arbitration_accepts_an_export_as_close_to_float64_as_torch_is():
    from exporter.numerics import judge_by_float64

    exact = [np.linspace(-2, 2, 1000)]
    torch_fp32 = [(exact[0] + 3e-4 * np.sin(np.arange(1000))).astype(np.float32)]
    onnx_fp32 = [(exact[0] - 4e-4 * np.cos(np.arange(1000))).astype(np.float32)]
    verdict = judge_by_float64(torch_fp32, onnx_fp32, exact, atol=1e-5)
    assert verdict.ok and "float64 arbitration" in verdict.comparison


def test_arbitration_rejects_an_export_far_from_float64():
    from exporter.numerics import judge_by_float64

    exact = [np.linspace(-2, 2, 1000)]
    torch_fp32 = [(exact[0] + 1e-5).astype(np.float32)]
    wrong = [(exact[0] * 1.01).astype(np.float32)]
    verdict = judge_by_float64(torch_fp32, wrong, exact, atol=1e-5)
    assert not verdict.ok and "onnx deviates" in verdict.message


def test_arbitration_requires_equal_integer_outputs():
    from exporter.numerics import judge_by_float64

    ints = np.arange(5)
    verdict = judge_by_float64([ints], [ints + 1], [ints], atol=1e-5)
    assert not verdict.ok


def test_arbitration_fails_an_export_that_lost_an_output_however_close_the_others_are():
    from exporter.numerics import judge_by_float64

    exact = [np.linspace(-2, 2, 10), np.linspace(0, 1, 4)]
    kept = exact[0].astype(np.float32)
    verdict = judge_by_float64([kept, exact[1].astype(np.float32)], [kept], exact, atol=1e-5)
    assert not verdict.ok and "output counts differ: torch 2, onnx 1, float64 2" in verdict.message


def test_arbitration_refuses_a_float64_run_that_computes_something_else():
    """A model that draws random numbers gives a different float64 answer: that run cannot be the arbiter."""
    from exporter.numerics import judge_by_float64

    exact = [np.linspace(-2, 2, 1000)]
    verdict = judge_by_float64([(exact[0] + 0.3).astype(np.float32)], [(exact[0] + 0.7).astype(np.float32)], exact, atol=1e-5)
    assert not verdict.ok and "no float64 arbitration" in verdict.message


@pytest.mark.parametrize("capture", ["torchscript", "export"])
def test_a_mismatch_row_carries_its_localization(tmp_path, capture):
    """A wrong aten::add symbolic (in process: the worker runs here) is found by the worker's localization, through
    either capture (the symbolic serves both)."""
    import exporter
    from exporter.registry import REGISTRY

    builtin = REGISTRY.lookup("aten::add", 13)

    def wrong_add(g, *args):
        return g.op("Mul", builtin(g, *args), g.const(torch.tensor(1.5)))

    (case,) = _cases(["test_add_one"], capture=capture)
    exporter.register_custom_op_symbolic("aten::add", wrong_add, 13)
    try:
        row = _run_in_process(case, tmp_path)
    finally:
        exporter.unregister_custom_op_symbolic("aten::add", 13)
    assert row["status"] == "mismatch" and row["capture"] == ("export" if capture == "export" else "trace")
    found = row["localization"]
    assert found["finding"] == "diverging node" and found["kind"] == "aten::add"
    assert found["source"].endswith(f"conformance_models.py:{inspect.getsourcelines(AddOne.forward)[1] + 1}")
    assert found["culprit"] == "export" and found["growth"][-1][1] > 0.1
    assert sorted(os.listdir(found["repro"])) == ["model.onnx", "test_data_set_0"]
    assert found["repro"] == os.path.join(row["repro"], "localization")


def test_a_capture_that_bakes_a_python_value_is_localized_to_the_capture(tmp_path):
    (case,) = _cases(["test_bakes_a_random_number"])
    row = _run_in_process(case, tmp_path)
    assert row["status"] == "mismatch"
    assert row["localization"]["finding"].startswith("the captured TorchScript graph differs from the model")
