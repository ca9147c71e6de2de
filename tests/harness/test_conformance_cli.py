"""The command lines of ``python -m conformance`` (gate included) and ``python -m benchmarks``: every bad value is a
one-line error with exit status 2 before any work, nothing written; every subcommand and option has a help line;
``run`` exits non-zero when a case fails unless it only records.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from conformance.__main__ import build_parser, main
from conformance.gate import build_parser as gate_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTRA = "tests.conformance_models:entries"


def _cli(tmp_path, *argv: str, module: str = "conformance", env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m MODULE ARGV`` in the empty folder ``tmp_path`` (so anything it writes shows there)."""
    environment = {**os.environ, "PYTHONPATH": ROOT, **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=600)


def _one_line_usage_error(done: subprocess.CompletedProcess, tmp_path, prog: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), done.stderr
    assert os.listdir(tmp_path) == [], "a rejected command wrote something"
    return lines[0]


@pytest.mark.parametrize("argv, says", [
    (["--opsets", "99"], "within 7-26"),
    (["--opsets", "abc"], "expected opsets like"),
    (["--opsets", "16-9"], "is empty"),
    (["--shard", "5/4"], "0 <= i < n"),
    (["--shard", "1"], "expected i/n"),
    (["--ep", "gpu"], "choose from cpu, cuda, all"),
    (["--workers", "0"], "at least 1"),
    (["--timeout", "-5"], "greater than 0"),
    (["--redo", "bogus"], "choose from pass"),
    (["--kinds", "layer"], "choose from model, example, op"),
    (["--tier", "medium"], "invalid choice"),
])
def test_a_bad_run_flag_is_a_one_line_error_and_writes_nothing(tmp_path, argv, says):
    assert says in _one_line_usage_error(_cli(tmp_path, "run", *argv), tmp_path, "python -m conformance run")


def test_a_bad_workers_default_from_the_environment_is_rejected_too(tmp_path):
    done = _cli(tmp_path, "run", env={"CONFORMANCE_WORKERS": "0"})
    assert "--workers" in _one_line_usage_error(done, tmp_path, "python -m conformance run")


@pytest.mark.parametrize("argv, says", [
    (["--models", "nosuchmodel"], "no model, example or op case matches 'nosuchmodel'"),
    (["--models", "resnet152"], "'resnet152' is not in the quick tier, only in the full tier (add --tier full)"),
    (["--exclude", "nosuchmodel"], "--exclude: no model, example or op case matches"),
    (["--models", "gather_int64_static", "--mode", "dynamic", "--opsets", "11"], "select no case"),
    (["--case", "model/nosuchmodel/*"], "select no case"),
])
def test_names_that_select_nothing_in_the_tier_are_usage_errors(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["run", *argv])
    error = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(error.splitlines()) == 1 and says in error
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv, prog", [
    (["summary", "missing.jsonl"], "python -m conformance summary"),
    (["report", "missing.jsonl", "--out", "r"], "python -m conformance report"),
    (["report", "results.jsonl", "--out", "r", "--baseline", "missing.jsonl"], "python -m conformance report"),
    (["merge", "missing.jsonl", "--out", "m.jsonl"], "python -m conformance merge"),
    (["flaky", "missing.jsonl", "results.jsonl"], "python -m conformance flaky"),
    (["gate", "missing.jsonl", "--no-baseline"], "python -m conformance gate"),
    (["gate", "results.jsonl", "--baseline", "missing.jsonl"], "python -m conformance gate"),
])
def test_a_missing_input_file_is_an_error(tmp_path, argv, prog):
    (tmp_path / "results.jsonl").write_text("")
    done = subprocess.run([sys.executable, "-m", "conformance", *argv], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, timeout=600)
    assert done.returncode == 2 and done.stderr.startswith(f"{prog}: error: ") and "missing.jsonl" in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["results.jsonl"]


@pytest.mark.parametrize("argv, says", [
    (["--opsets", "99"], "within 7-26"),
    (["--opsets", "abc"], "expected opsets like"),
    (["--models", "nosuchmodel"], "invalid choice"),
    (["--runs", "0"], "at least 1"),
    (["--latency-repeats", "-1"], "at least 1"),
    (["--conformance-timeout", "0"], "greater than 0"),
])
def test_a_bad_benchmarks_flag_is_a_one_line_error_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, says):
    from benchmarks.__main__ import main as bench_main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        bench_main(argv)
    error = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(error.splitlines()) == 1 and says in error
    assert error.startswith("python -m benchmarks: error: ") and os.listdir(tmp_path) == []


def test_the_benchmarks_entry_point_rejects_before_any_work(tmp_path):
    done = _cli(tmp_path, "--opsets", "99", module="benchmarks")
    assert "within 7-26" in _one_line_usage_error(done, tmp_path, "python -m benchmarks")


def test_benchmarks_accept_opsets_as_a_list_or_with_commas():
    from benchmarks.__main__ import build_parser as bench_parser

    assert bench_parser().parse_args(["--opsets", "11", "14,16"]).opsets == [(11,), (14, 16)]


def _parsers():
    from benchmarks.__main__ import build_parser as bench_parser
    from reports.__main__ import build_parser as reports_parser

    yield "python -m conformance", build_parser()
    yield "python -m conformance gate", gate_parser()
    yield "python -m benchmarks", bench_parser()
    yield "python -m reports", reports_parser()


def test_every_subcommand_and_option_has_a_help_line():
    missing = []
    for prog, parser in _parsers():
        pending = [(prog, parser)]
        while pending:
            name, current = pending.pop()
            for action in current._actions:
                if isinstance(action, argparse._SubParsersAction):
                    helps = {choice.dest: choice.help for choice in action._choices_actions}
                    missing += [f"{name} {sub}" for sub in action.choices if not helps.get(sub)]
                    pending += [(f"{name} {sub}", sub_parser) for sub, sub_parser in action.choices.items()]
                elif not action.help:
                    missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []


# -- exit codes of run ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_run_exits_non_zero_when_a_case_fails_unless_it_only_records(tmp_path):
    env = {"MODEL_ZOO_EXTRA": EXTRA}
    selection = ["run", "--tier", "full", "--opsets", "13", "--mode", "static", "--ep", "cpu", "--workers", "1",
                 "--no-progress", "--out", "r.jsonl"]
    both = ["--models", "test_add_one,test_bakes_a_random_number"]
    failing = _cli(tmp_path, *selection, *both, env=env)
    assert failing.returncode == 1 and "FAIL: 1 failing case(s)" in failing.stderr
    assert "example/test_bakes_a_random_number/opset13/static/cpu: mismatch" in failing.stdout
    # The runs below resume from r.jsonl (nothing left to run): the exit status judges the selected cases' rows.
    recorded = _cli(tmp_path, *selection, *both, "--record-only", env=env)
    assert recorded.returncode == 0 and "recorded only (--record-only)" in recorded.stderr
    passing = _cli(tmp_path, *selection, "--models", "test_add_one", env=env)
    assert passing.returncode == 0 and "1 already in r.jsonl, 0 to run" in passing.stderr


# -- ONNX Runtime's graph optimization level --------------------------------------------------------------------
def test_a_bad_ort_level_from_the_environment_is_a_one_line_error(tmp_path):
    done = _cli(tmp_path, "run", "--fresh", env={"CONFORMANCE_ORT_LEVEL": "max"})
    line = _one_line_usage_error(done, tmp_path, "python -m conformance run")
    assert "CONFORMANCE_ORT_LEVEL='max': expected one of basic, extended, all" in line


def test_rows_record_the_ort_level_and_a_results_file_holds_one_level(tmp_path):
    env = {"MODEL_ZOO_EXTRA": EXTRA}
    selection = ["run", "--tier", "full", "--models", "test_add_one", "--opsets", "13", "--mode", "static",
                 "--ep", "cpu", "--workers", "1", "--no-progress", "--out", "r.jsonl"]
    at_all = _cli(tmp_path, *selection, "--ort-level", "all", env=env)
    assert at_all.returncode == 0 and "ONNX Runtime level all" in at_all.stderr, at_all.stderr
    (row,) = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert row["status"] == "pass" and row["ort_level"] == "all"
    before = (tmp_path / "r.jsonl").read_bytes()
    mixed = _cli(tmp_path, *selection, env=env)  # basic, into a file of level-all rows
    assert mixed.returncode == 2 and "holds rows run at ONNX Runtime level all, not basic" in mixed.stderr
    assert (tmp_path / "r.jsonl").read_bytes() == before


def test_make_session_takes_the_level_from_the_environment(monkeypatch):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from exporter.ort_session import make_session

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    levels = ort.GraphOptimizationLevel
    monkeypatch.delenv("CONFORMANCE_ORT_LEVEL", raising=False)
    assert make_session(model, "cpu").get_session_options().graph_optimization_level == levels.ORT_ENABLE_BASIC
    for name, level in (("extended", levels.ORT_ENABLE_EXTENDED), ("all", levels.ORT_ENABLE_ALL)):
        monkeypatch.setenv("CONFORMANCE_ORT_LEVEL", name)
        assert make_session(model, "cpu").get_session_options().graph_optimization_level == level


@pytest.mark.slow
def test_exports_pass_at_onnx_runtime_default_level(tmp_path):
    """ONNX Runtime's own default level (all) fuses what the harness's basic level leaves apart: QDQ into QLinearConv,
    HardSwish, the LSTM's gates. The same verdicts must hold there, as users run the models."""
    done = _cli(tmp_path, "run", "--tier", "full", "--models",
                "quantized_shufflenet_v2_x0_5,mobilenet_v3_small,lstm_bidirectional_4layer", "--opsets", "13",
                "--mode", "static", "--ep", "cpu", "--workers", "2", "--no-progress", "--out", "r.jsonl",
                "--ort-level", "all")
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(rows) == 3 and {(r["status"], r["ort_level"]) for r in rows} == {("pass", "all")}


# -- CUDA: requested, a GPU visible, ONNX Runtime unable to use it ------------------------------------------------
# Loaded at interpreter start (sitecustomize) in the run and in its worker processes: PyTorch sees a GPU, and this
# ONNX Runtime build has no CUDA provider (as when the CPU-only onnxruntime wheel shadows onnxruntime-gpu).
FAKE_GPU_WITHOUT_ORT_CUDA = """
import onnxruntime, torch
torch.cuda.is_available = lambda: True
onnxruntime.get_available_providers = lambda: ["CPUExecutionProvider"]
"""


@pytest.mark.slow
def test_a_cuda_run_on_a_gpu_that_onnx_runtime_cannot_use_fails(tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(FAKE_GPU_WITHOUT_ORT_CUDA)
    work = tmp_path / "work"
    work.mkdir()
    done = _cli(work, "run", "--tier", "full", "--models", "test_add_one", "--opsets", "13", "--mode", "static",
                "--ep", "all", "--workers", "1", "--no-progress", "--out", "r.jsonl",
                env={"MODEL_ZOO_EXTRA": EXTRA, "PYTHONPATH": f"{fake}{os.pathsep}{ROOT}"})
    assert done.returncode == 1 and "FAIL: 1 failing case(s)" in done.stderr
    assert "example/test_add_one/opset13/static/cuda: env_error" in done.stdout
    assert "no CUDAExecutionProvider" in done.stdout
