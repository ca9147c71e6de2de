"""The OpInfo suite's own parts: the reference evaluator's rulings (``conformance.arbitration``), strict expectations, the op-matrix page, and its command line
(``python -m op_tests.opinfo``)."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from conformance.arbitration import Disagreement, ReferenceEvaluatorRun, arbitrate
from exporter.tolerances import tolerance_for
from op_tests.opinfo import __main__ as opinfo_cli
from op_tests.opinfo import expectations
from reports import op_matrix


def _gemm_model() -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in (("a", [5, 0]), ("b", [0, 4]), ("c", [5, 4]))]
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.6, beta=0.2)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def _feeds():
    return {"a": np.zeros((5, 0), np.float32), "b": np.zeros((0, 4), np.float32),
            "c": np.arange(20, dtype=np.float32).reshape(5, 4)}


def _arbitrate_gemm(feeds, expected, repro_dir):
    """The reference evaluator's ruling on ONNX Runtime's Gemm disagreeing with ``expected`` (PyTorch's say)."""
    from exporter.ort_session import make_session

    actual = make_session(_gemm_model().SerializeToString(), "cpu").run(None, feeds)
    tolerance = tolerance_for("float32", "addmm")
    return arbitrate(Disagreement([expected], [actual], tolerance.at, tolerance.atol),
                     ReferenceEvaluatorRun(_gemm_model(), [feeds], repro_dir))


def test_reference_agreeing_with_pytorch_rules_a_runtime_divergence_with_a_one_node_repro(tmp_path):
    """Gemm with an empty inner dimension: ONNX Runtime drops beta * C, the spec (and torch.addmm) keep it."""
    feeds = _feeds()
    expected = [torch.addmm(torch.from_numpy(feeds["c"]), torch.from_numpy(feeds["a"]), torch.from_numpy(feeds["b"]),
                            beta=0.2, alpha=0.6).numpy()]
    ruling = _arbitrate_gemm(feeds, expected, str(tmp_path))
    assert ruling.status == "runtime_divergence", ruling.text
    assert ruling.repro and os.path.exists(os.path.join(ruling.repro, "model.onnx"))
    assert os.path.exists(os.path.join(ruling.repro, "test_data_set_0", "output_0.pb")) and "Gemm" in ruling.text


def test_reference_agreeing_with_onnx_runtime_rules_a_mismatch(tmp_path):
    feeds = _feeds()
    wrong = [feeds["c"] * 0.5]  # what a PyTorch that the export does not match would say
    ruling = _arbitrate_gemm(feeds, wrong, str(tmp_path))
    assert ruling.status == "mismatch" and "export is wrong" in ruling.text


def _row(status="pass", op="gather", sample=0, opset=13, mode="static", dtype="float32", **extra):
    return {"op": op, "variant": "", "sample": sample, "opset": opset, "mode": mode, "dtype": dtype, "status": status,
            "case_id": f"op/opinfo/{op}/{dtype}/s{sample}/opset{opset}/{mode}/cpu", **extra}


def _expect(**fields):
    defaults = dict(op="gather", status=("no_symbolic",), reason="why", samples="*", opsets=(7, 10))
    return expectations.Expectation(**(defaults | fields))


def test_expectations_are_strict():
    entry = _expect()
    judged = expectations.judge([_row("no_symbolic", opset=9)], [entry])
    assert judged.ok and len(judged.expected) == 1
    assert not expectations.judge([_row("pass", opset=9)], [entry]).ok  # unexpected pass: remove the entry
    assert not expectations.judge([_row("export_error", opset=9)], [entry]).ok  # another status is not excused
    assert not expectations.judge([_row("no_symbolic", opset=11)], [entry]).ok  # outside the opset range
    assert expectations.judge([_row("unsupported", opset=11, lowest_opset=12)], []).ok  # the exporter names the opset


def test_an_op_without_any_symbolic_needs_no_entry_but_a_known_op_reported_as_none_fails():
    """The registry is the list of unsupported ops: a no_symbolic row is excused where the registry indeed has no
    symbolic for the op at any opset, and fails where it has one (a dispatch bug, not a missing op)."""
    unknown = _row("no_symbolic", op="cauchy", reason="no symbolic for aten::cauchy_")
    known = _row("no_symbolic", op="gather", reason="no symbolic for aten::gather")
    assert expectations.judge([unknown], []).ok
    judged = expectations.judge([known], [])
    assert not judged.ok and judged.unexpected_failures == [known]


def test_no_expectation_can_hide_a_mismatch(tmp_path):
    judged = expectations.judge([_row("mismatch", opset=9)], [_expect(status=("no_symbolic", "mismatch"))])
    assert judged.mismatches and not judged.ok
    path = tmp_path / "expectations.toml"
    path.write_text('[[expect]]\nop = "gather"\nstatus = "mismatch"\nreason = "tolerated"\n')
    with pytest.raises(ValueError, match="may not hide a mismatch"):
        expectations.load(str(path))


def test_drafted_expectations_cover_exactly_the_rows_needing_one(tmp_path):
    rows = [_row("no_symbolic", sample=s, opset=o) for s in (0, 1) for o in (7, 8)] + [_row("pass", sample=2, opset=7)]
    path = tmp_path / "expectations.toml"
    path.write_text(expectations.draft(rows))
    judged = expectations.judge(rows, expectations.load(str(path)))
    assert judged.ok and not judged.stale and len(judged.expected) == 4


def test_op_matrix_shows_both_sources_per_opset():
    rows = [_row("pass", source="opinfo"), _row("runtime_divergence", source="opinfo", sample=1, arbiter="ORT diverges"),
            {"op": "gather", "name": "gather", "opset": 13, "mode": "static", "status": "pass", "source": "cases",
             "case_id": "op/gather/opset13/static/cpu"}]
    page = op_matrix.render(rows)
    assert "cases+opinfo" in page and "ORT diverges" in page
    data = op_matrix.aggregate(rows)
    assert data["per_opset"][(13, "opinfo")] == {"pass": 1, "runtime_divergence": 1}


def test_stale_expectations_are_only_those_whose_cases_ran():
    """Rows of gather's samples 0 and 1 (float32, traced, static) at opset 13: an entry is stale only when they ran
    its cases and it matched none of them; results of part of the matrix say nothing about the other entries."""
    ran = [_row("pass", opset=13), _row("no_symbolic", sample=1, opset=13)]
    dynamic = _expect(opsets=(13, 13), modes=("dynamic",))  # sample 0 ran and passed, and has no dynamic form
    met = _expect(samples="1", opsets=(11, 14))
    not_run = [_expect(op="abs", opsets=(13, 13)), _expect(opsets=(7, 10)), _expect(samples="5", opsets=(13, 13)),
               _expect(opsets=(13, 13), dtypes=("int64",)), _expect(opsets=(13, 13), captures=("export",))]
    assert expectations.judge(ran, [dynamic, met, *not_run]).stale == [dynamic]


def _cli_row(status: str, op: str = "made_up_op", opset: int = 13, **extra) -> dict:
    """A row as ``run`` writes it (with the name and capture the summary and the judgement read)."""
    return _row(status, op=op, opset=opset, name=f"{op}/float32/s0", capture="trace", **extra)


def test_check_of_one_op_at_one_opset_reports_no_stale_entry_of_the_other_ops(tmp_path, capsys):
    results = tmp_path / "opinfo.jsonl"
    results.write_text(json.dumps(_cli_row("pass", op="abs")) + "\n")
    assert opinfo_cli.main(["check", str(results)]) == 0
    stale = [line for line in capsys.readouterr().out.splitlines() if line.startswith("STALE")]
    # Only a traced entry for abs at opset 13 could be stale, never one of the other ops (over 1,000 entries were).
    assert all(line.startswith("STALE expectation abs ") for line in stale), stale


@pytest.fixture
def no_run(monkeypatch):
    """``run`` with no OpInfo database or worker: the command fails the test if it gets past parsing."""
    monkeypatch.setattr(opinfo_cli, "_keys", lambda patterns: pytest.fail("the command went on to run"))


@pytest.mark.parametrize("argv, says", [
    (["--opsets", "99"], "opsets must lie within 7-26"),
    (["--opsets", "6-13"], "opsets must lie within 7-26"),
    (["--opsets", "13-"], "expected opsets like"),
    (["--samples", "two"], "expected indices like"),
    (["--samples", "-1"], "expected indices like"),
    (["--workers", "0"], "must be at least 1"),
    (["--workers", "-2"], "must be at least 1"),
    (["--timeout", "0"], "must be greater than 0"),
    (["--dtypes", "float32,float64"], "choose from primary, float32, int64, bool, float16"),
    (["--capture", "script"], "invalid choice"),
    (["--redo", "timout"], "choose from pass"),
])
def test_a_bad_run_option_is_a_one_line_error_before_any_work(tmp_path, capsys, no_run, argv, says):
    out = tmp_path / "opinfo.jsonl"
    with pytest.raises(SystemExit) as exited:
        opinfo_cli.main(["run", "--out", str(out), *argv])
    lines = capsys.readouterr().err.strip().splitlines()
    assert exited.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("python -m op_tests.opinfo run: error: ") and says in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("command", ["summary", "check", "draft-expectations", "report"])
def test_a_missing_results_file_is_an_error_not_an_empty_verdict(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)  # report writes under results/ of the working folder
    with pytest.raises(SystemExit) as exited:
        opinfo_cli.main([command, "missing.jsonl"])
    assert exited.value.code == 2 and "missing.jsonl: no such file" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


@pytest.fixture
def recorded(monkeypatch):
    """``run`` with no OpInfo database or worker: it appends the rows given to the fixture to the results file."""
    rows: list[dict] = []

    def run(plan) -> int:
        with open(plan.out, "a") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
        return len(rows)

    monkeypatch.setattr(opinfo_cli, "_keys", lambda patterns: ["made_up_op"])
    monkeypatch.setattr(opinfo_cli, "run", run)
    return rows


@pytest.mark.parametrize("status", ["mismatch", "export_error"])
def test_run_exits_1_when_its_results_fail_the_expectations_unless_it_only_records(tmp_path, capsys, recorded,
                                                                                    status):
    recorded.append(_cli_row(status))
    out = str(tmp_path / "opinfo.jsonl")
    assert opinfo_cli.main(["run", "--out", out, "--opsets", "13"]) == 1
    assert f"FAIL: the results fail the expectations: `python -m op_tests.opinfo check {out}` lists them" in (
        capsys.readouterr().err)
    assert opinfo_cli.main(["run", "--out", out, "--opsets", "13", "--record-only"]) == 0
    assert "recorded only (--record-only)" in capsys.readouterr().err


def test_run_exits_0_when_its_results_meet_the_expectations(tmp_path, recorded):
    recorded.extend([_cli_row("pass"), _cli_row("unsupported", opset=9, lowest_opset=11)])
    assert opinfo_cli.main(["run", "--out", str(tmp_path / "opinfo.jsonl"), "--opsets", "9,13"]) == 0
