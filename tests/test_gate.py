"""The release gate on crafted result files: regressions, improvements, vanished cases, drift, allow-list."""

from __future__ import annotations

import json

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


def _run(tmp_path, baseline, rows, allow=None):
    results = _write(tmp_path / "results.jsonl", rows)
    argv = [str(results), "--baseline", str(baseline), "--json", str(tmp_path / "gate.json")]
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
    assert "GATE: PASS" in capsys.readouterr().out


def test_new_failure_fails_and_is_named(tmp_path, baseline, capsys):
    rows = [_row("model/resnet18/opset14/static/cpu", status="export_error", error="aten::relu is not exportable"),
            _row("model/vgg11/opset14/static/cpu"), _row("model/raft/opset14/static/cpu", status="mismatch", abs_err=0.5,
            error="output 0 differs"), _row("op/gather/opset13/dynamic/cpu")]
    code, report = _run(tmp_path, baseline, rows)
    out = capsys.readouterr().out
    assert code == 1
    assert ("model/resnet18/opset14/static/cpu", "new_failure") in _kinds(report)
    assert "model/resnet18/opset14/static/cpu" in out and "GATE: FAIL (1 regressions)" in out


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


def test_missing_baseline_is_an_error(tmp_path):
    results = _write(tmp_path / "r.jsonl", [_row("a")])
    assert gate.main([str(results), "--baseline", str(tmp_path / "nope.jsonl")]) == 2


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
