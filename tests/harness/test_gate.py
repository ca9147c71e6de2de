"""The release gate on crafted result files: regressions, improvements, vanished cases, drift, allow-list."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conformance import gate


def _row(case_id, status="pass", abs_err=1e-6, rel_err=1e-5, rtol=1e-3, atol=1e-5, error=""):
    return {"case_id": case_id, "status": status, "max_abs_error": abs_err, "max_rel_error": rel_err,
            "rtol": rtol, "atol": atol, "error": error, "stage": "" if status == "pass" else "accuracy"}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def baseline(tmp_path):
    return _write(tmp_path / "baseline.jsonl", [
        _row("model/resnet18/opset14/static/cpu"),
        _row("model/vgg11/opset14/static/cpu"),
        _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5, error="output 0 differs"),
        _row("op/gather/opset13/dynamic/cpu"),
    ])


def _run(tmp_path, baseline, rows, allow=None, partial=False):
    results = _write(tmp_path / "results.jsonl", rows)
    argv = [str(results), "--baseline", str(baseline), "--json", str(tmp_path / "gate.json"), *(["--partial"] * partial)]
    if allow is not None:
        (tmp_path / "allow.json").write_text(json.dumps(allow))
        argv += ["--allowlist", str(tmp_path / "allow.json")]
    else:
        argv += ["--allowlist", str(tmp_path / "none.json")]
    return gate.main(argv), json.loads((tmp_path / "gate.json").read_text())


def _kinds(report):
    return {(f["case_id"], f["kind"]) for f in report["findings"]}


def test_unchanged_run_passes(tmp_path, baseline, capsys):
    rows = [json.loads(line) for line in baseline.read_text().splitlines()]
    code, report = _run(tmp_path, baseline, rows)
    assert code == 0 and report["passed"]
    assert "Release gate: PASS" in capsys.readouterr().out


def test_new_failure_fails_and_is_named(tmp_path, baseline, capsys):
    rows = [_row("model/resnet18/opset14/static/cpu", status="export_error", error="aten::relu is not exportable"),
            _row("model/vgg11/opset14/static/cpu"), _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5,
            error="output 0 differs"), _row("op/gather/opset13/dynamic/cpu")]
    code, report = _run(tmp_path, baseline, rows)
    out = capsys.readouterr().out
    assert code == 1
    assert ("model/resnet18/opset14/static/cpu", "new_failure") in _kinds(report)
    assert "model/resnet18/opset14/static/cpu" in out and "Release gate: FAIL (1 regression: model/resnet18/opset14/static/cpu)" in out


def test_improvement_and_newly_covered_do_not_fail(tmp_path, baseline):
    rows = [_row("model/resnet18/opset14/static/cpu"), _row("model/vgg11/opset14/static/cpu"),
            _row("model/raft/opset14/static/cpu"), _row("op/gather/opset13/dynamic/cpu"),
            _row("model/swin_t/opset14/static/cpu")]
    code, report = _run(tmp_path, baseline, rows)
    assert code == 0
    assert ("model/raft/opset14/static/cpu", "improvement") in _kinds(report)
    assert ("model/swin_t/opset14/static/cpu", "newly_covered") in _kinds(report)


def test_vanished_case_fails(tmp_path, baseline):
    rows = [_row("model/resnet18/opset14/static/cpu"), _row("model/vgg11/opset14/static/cpu"),
            _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5, error="output 0 differs")]
    code, report = _run(tmp_path, baseline, rows)
    assert code == 1 and ("op/gather/opset13/dynamic/cpu", "vanished") in _kinds(report)


def test_error_drift_past_tolerance_fails_but_small_drift_does_not(tmp_path, baseline):
    common = [_row("model/vgg11/opset14/static/cpu"), _row("op/gather/opset13/dynamic/cpu"),
              _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5, error="output 0 differs")]
    small = [_row("model/resnet18/opset14/static/cpu", abs_err=5e-6, rel_err=1e-4)] + common
    code, _ = _run(tmp_path, baseline, small)
    assert code == 0
    large = [_row("model/resnet18/opset14/static/cpu", abs_err=4e-5, rel_err=3e-3)] + common
    code, report = _run(tmp_path, baseline, large)
    assert code == 1 and ("model/resnet18/opset14/static/cpu", "error_drift") in _kinds(report)


def test_loosened_tolerance_is_a_regression(tmp_path, baseline):
    rows = [_row("model/resnet18/opset14/static/cpu", rtol=1e-2), _row("model/vgg11/opset14/static/cpu"),
            _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5, error="output 0 differs"),
            _row("op/gather/opset13/dynamic/cpu")]
    code, report = _run(tmp_path, baseline, rows)
    assert code == 1 and ("model/resnet18/opset14/static/cpu", "tolerance_loosened") in _kinds(report)


def test_allow_listed_flake_is_reported_but_does_not_fail(tmp_path, baseline, capsys):
    rows = [_row("model/resnet18/opset14/static/cpu"), _row("model/vgg11/opset14/static/cpu", status="timeout"),
            _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5, error="output 0 differs"),
            _row("op/gather/opset13/dynamic/cpu")]
    allow = [{"case_id": "model/vgg11/*", "reason": "VGG-11 export exceeds the shared runner's timeout under load"}]
    code, report = _run(tmp_path, baseline, rows, allow)
    assert code == 0
    finding = next(f for f in report["findings"] if f["case_id"] == "model/vgg11/opset14/static/cpu")
    assert finding["allowed_because"].startswith("VGG-11")
    assert "Allow-listed regressions: 1" in capsys.readouterr().out


def test_allow_list_entry_without_reason_is_rejected(tmp_path, baseline):
    with pytest.raises(ValueError, match="written reason"):
        _run(tmp_path, baseline, [], allow=[{"case_id": "model/*", "reason": " "}])


def test_update_baseline_is_explicit_and_keeps_status_and_error(tmp_path):
    results = _write(tmp_path / "r.jsonl", [_row("a", abs_err=1e-7), _row("a", status="mismatch", abs_err=2.0)])
    target = tmp_path / "b" / "baseline.jsonl"
    assert gate.main([str(results), "--baseline", str(target), "--update-baseline"]) == 0
    (row,) = [json.loads(line) for line in target.read_text().splitlines()]
    assert row["status"] == "mismatch" and row["max_abs_error"] == 2.0


def test_missing_baseline_is_a_usage_error(tmp_path, capsys):
    results = _write(tmp_path / "r.jsonl", [_row("a")])
    with pytest.raises(SystemExit) as exit_:
        gate.main([str(results), "--baseline", str(tmp_path / "nope.jsonl")])
    assert exit_.value.code == 2 and "--no-baseline" in capsys.readouterr().err


def test_conformance_cli_runs_the_gate(tmp_path, baseline, capsys):
    """``python -m conformance gate RESULTS --baseline B`` is the gate, exit code included."""
    from conformance.__main__ import main

    rows = [json.loads(line) for line in baseline.read_text().splitlines()]
    results = _write(tmp_path / "results.jsonl", rows[1:])
    argv = ["gate", str(results), "--baseline", str(baseline), "--allowlist", str(tmp_path / "none.json")]
    assert main(argv) == 1
    assert "vanished" in capsys.readouterr().out
    _write(results, rows)
    assert main(argv) == 0


# -- bands: per-run noise never flips the gate ----------------------------------------------------------------
RAFT = "model/raft_small/opset16/static/cpu"


def test_the_reported_raft_flip_is_noise_inside_the_tolerance_band(tmp_path):
    """Issue 13: baseline atol 0.00017034074783325197, this run 0.00017034078598022462 failed as 'loosened'."""
    base = _write(tmp_path / "b.jsonl", [_row(RAFT, abs_err=3.24e-5, atol=0.00017034074783325197)])
    code, report = _run(tmp_path, base, [_row(RAFT, abs_err=3.16e-5, atol=0.00017034078598022462)])
    assert code == 0 and report["findings"] == []


def test_a_tolerance_loosened_beyond_the_band_still_fails(tmp_path):
    base = _write(tmp_path / "b.jsonl", [_row(RAFT, atol=1.7e-4)])
    assert _run(tmp_path, base, [_row(RAFT, atol=1.7e-4 * 1.04)])[0] == 0
    code, report = _run(tmp_path, base, [_row(RAFT, atol=1.7e-4 * 1.06)])
    assert code == 1 and (RAFT, "tolerance_loosened") in _kinds(report)


def test_magnitude_scaled_tolerances_round_the_scale_so_noise_cannot_move_them():
    from model_zoo.entry import ZooEntry, stable_scale

    entry = ZooEntry("m", "model", "f", build=None, inputs=None, atol_scale=1e-5)
    assert entry.tolerance(16.034074783) == entry.tolerance(16.034078598) == (1e-3, 0.000171)
    assert stable_scale(16.0) == 16.0 and stable_scale(0.0) == 0.0
    assert 1.0 <= stable_scale(123.4567) / 123.4567 <= 1.01


# -- what fails: new cases, expected limits, inconclusive ------------------------------------------------------
def _op(case_id, status, opset, expected_min, reason=""):
    return {**_row(case_id, status=status), "opset": opset, "expected_min_opset": expected_min, "reason": reason}


@pytest.mark.parametrize("row, fails", [
    (_op("op/a/opset9/static/cpu", "unsupported", 9, 11), False),                  # below its claimed opset: ONNX
    (_op("op/a/opset11/static/cpu", "unsupported", 11, 11), True),                 # at its claimed opset: engine gap
    (_op("op/a/opset7/static/cpu", "ort_error", 7, 7, "known failure: no double Clip at 7"), False),
    (_op("op/a/opset7/static/cpu", "ort_error", 7, 7), True),
    (_row("model/a/opset9/static/cpu", status="inconclusive"), False),
    (_row("model/a/opset9/static/cuda", status="env_error"), True),
    (_row("model/a/opset9/static/cpu", status="timeout"), True),
    (_row("model/a/opset9/static/cpu", status="something new"), True),
])
def test_new_cases_fail_the_gate_exactly_when_they_fail(tmp_path, row, fails):
    base = _write(tmp_path / "b.jsonl", [])
    code, report = _run(tmp_path, base, [row])
    assert code == (1 if fails else 0)
    assert (row["case_id"], "new_case_failing" if fails else "newly_covered") in _kinds(report)


def test_an_expected_limit_that_turns_into_a_crash_is_a_regression(tmp_path):
    case = "model/swin_t/opset9/dynamic/cpu"
    base = _write(tmp_path / "b.jsonl", [_op(case, "unsupported", 9, 11)])
    code, report = _run(tmp_path, base, [_op(case, "crash", 9, 11)])
    assert code == 1 and (case, "new_failure") in _kinds(report)


def test_no_baseline_fails_on_any_failure(tmp_path, capsys):
    results = _write(tmp_path / "r.jsonl", [_row("model/a/opset9/static/cpu"), _row("model/b/opset9/static/cpu")])
    assert gate.main([str(results), "--no-baseline", "--allowlist", str(tmp_path / "none.json")]) == 0
    _write(results, [_row("model/a/opset9/static/cpu"), _row("model/b/opset9/static/cpu", status="mismatch")])
    assert gate.main([str(results), "--no-baseline", "--allowlist", str(tmp_path / "none.json")]) == 1
    assert "Release gate: FAIL (1 regression: model/b/opset9/static/cpu)" in capsys.readouterr().out


def test_partial_run_is_compared_on_the_cases_it_ran(tmp_path, baseline, capsys):
    rows = [_row("model/resnet18/opset14/static/cpu")]
    assert _run(tmp_path, baseline, rows)[0] == 1  # the other baseline cases vanished
    assert "baseline cases missing from this run: if the run covered part of the baseline's tier on purpose " \
           "(--models, --opsets, --shard), gate it with --partial" in capsys.readouterr().out
    results = _write(tmp_path / "part.jsonl", rows)
    argv = [str(results), "--baseline", str(baseline), "--partial", "--allowlist", str(tmp_path / "none.json")]
    assert gate.main(argv) == 0
    _write(results, [_row("model/resnet18/opset14/static/cpu", status="mismatch")])
    assert gate.main(argv) == 1


# -- evidence: a run that executed no case proves nothing, --partial or not ----------------------------------------
def _skipped(case_id):
    return {**_row(case_id, status="skipped"), "provider": "cuda", "reason": "no CUDA device on this machine"}


def test_an_empty_run_fails_the_gate_with_a_one_line_reason(tmp_path, baseline, capsys):
    """The user's repro: `gate EMPTY.jsonl --partial` printed `Release gate: PASS` (exit 0)."""
    for partial in (False, True):
        code, report = _run(tmp_path, baseline, [], partial=partial)
        assert code == 1 and not report["passed"] and report["no_evidence"] == "the results hold no case"
    assert capsys.readouterr().out.splitlines()[-1].startswith("Release gate: FAIL (no evidence: the results hold no case")
    empty = _write(tmp_path / "empty.jsonl", [])
    assert gate.main([str(empty), "--no-baseline", "--allowlist", str(tmp_path / "none.json")]) == 1


def test_the_users_empty_partial_run_fails_on_the_command_line(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    _write(tmp_path / "EMPTY.jsonl", [])
    done = subprocess.run([sys.executable, "-m", "conformance", "gate", str(tmp_path / "EMPTY.jsonl"), "--partial"],
                          cwd=root, env={**os.environ, "PYTHONPATH": root}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout.splitlines()[-1] == "Release gate: FAIL (no evidence: the results hold no case)"


def test_a_run_whose_every_case_was_skipped_fails_and_covers_nothing(tmp_path, baseline):
    """`--ep cuda` on a machine without a GPU, judged --partial against a CPU baseline: every row skipped. Before, the
    gate passed and counted each skipped CUDA row as newly covered."""
    cuda = [_skipped("model/resnet18/opset14/static/cuda"), _skipped("model/vgg11/opset14/static/cuda")]
    code, report = _run(tmp_path, baseline, cuda, partial=True)
    assert code == 1 and report["no_evidence"] == "the run holds none of the baseline's 4 cases"
    assert {f["kind"] for f in report["findings"]} == {"new_case_skipped"}
    base = _write(tmp_path / "b.jsonl", [_skipped("model/resnet18/opset14/static/cuda")])  # skipped there too
    code, report = _run(tmp_path, base, cuda[:1], partial=True)
    assert code == 1 and report["no_evidence"] == "all 1 baseline case(s) in this run were skipped; none was executed"
    code, report = _run(tmp_path, _write(tmp_path / "none.jsonl", []), cuda)
    assert code == 1 and report["no_evidence"] == "all 2 case(s) of this run were skipped; none was executed"


def test_skipped_rows_beside_executed_ones_pass_but_are_not_newly_covered(tmp_path, baseline):
    rows = [_row("model/resnet18/opset14/static/cpu"), _skipped("model/resnet18/opset14/static/cuda")]
    code, report = _run(tmp_path, baseline, rows, partial=True)
    assert code == 0 and report["no_evidence"] == ""
    assert _kinds(report) == {("model/resnet18/opset14/static/cuda", "new_case_skipped")}


# -- CUDA: a baseline with CUDA cases fails a run that ran none --------------------------------------------------
def test_cuda_baseline_fails_a_run_whose_cuda_cases_were_skipped_or_missing(tmp_path, capsys):
    cpu, cuda = "model/resnet18/opset14/static/cpu", "model/resnet18/opset14/static/cuda"
    base = _write(tmp_path / "b.jsonl", [_row(cpu), _row(cuda)])
    skipped = {**_row(cuda, status="skipped"), "provider": "cuda", "reason": "no CUDA device on this machine"}
    code, report = _run(tmp_path, base, [_row(cpu), skipped])
    assert code == 1 and (cuda, "new_failure") in _kinds(report)
    assert "CUDA: the baseline has 1 CUDA cases; this run ran 0" in capsys.readouterr().out
    code, report = _run(tmp_path, base, [_row(cpu)])
    assert code == 1 and (cuda, "vanished") in _kinds(report)


# -- flaky: two runs of the same tree ---------------------------------------------------------------------------
def test_flaky_lists_only_cases_whose_verdict_or_band_differs(tmp_path, capsys):
    from conformance.__main__ import main

    first = [_row("a/1", abs_err=3.24e-5, atol=1.7034074783e-4), _row("a/2"), _row("a/3"), _row("a/4", abs_err=1e-6)]
    second = [_row("a/1", abs_err=3.16e-5, atol=1.7034078598e-4), _row("a/2", status="mismatch"),
              _row("a/3", atol=2e-5), _row("a/4", abs_err=9e-6)]
    a, b = _write(tmp_path / "a.jsonl", first), _write(tmp_path / "b.jsonl", second)
    assert main(["flaky", str(a), str(a)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["flaky", str(a), str(b)]) == 1
    listed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["a/2", "a/3", "a/4"]  # a/1's differences are float noise inside the bands
