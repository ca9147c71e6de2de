"""The results file: one reader for every command (a killed run's torn last line dropped with a warning, any other
unreadable line an error naming the file and line, exit 2) and one writer at a time (a lock a killed run does not
leave stuck). Real files, and the real command lines where they are cheap; the runs that start workers are slow.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conformance.results import ResultsFileError, ResultsWriter, read_rows, sole_writer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTRA = "tests.conformance_models:entries"
A, B = "example/test_add_one/opset13/static/cpu", "example/test_add_one/opset13/dynamic/cpu"


def _line(case_id: str, status: str = "pass", **extra) -> str:
    return json.dumps({"case_id": case_id, "status": status, "opset": 13, **extra}) + "\n"


def _cli(cwd, *argv: str, env: dict | None = None, **popen) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": ROOT, "MODEL_ZOO_EXTRA": EXTRA, **(env or {})}
    return subprocess.run([sys.executable, "-m", "conformance", *argv], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=600, **popen)


RUN_A_AND_B = ["run", "--tier", "full", "--models", "test_add_one", "--opsets", "13", "--ep", "cpu", "--workers", "1",
               "--no-progress", "--out", "r.jsonl"]


# -- one reader ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, says", [
    ("garbage\n", "line 2: not JSON"),
    ('{"case_id": "x", "sta\n', "line 2: not JSON"),  # a torn line with rows after it: not the last line any more
    ("[1, 2]\n", "line 2: a JSON list, not a row"),
    ('{"case_id": "x"}\n', "line 2: the row has no status"),
    ('{"status": "pass", "opset": 13}\n', "line 2: the row has no case_id"),
])
def test_a_line_that_is_no_row_is_an_error_naming_the_file_and_line(tmp_path, bad, says):
    path = tmp_path / "r.jsonl"
    path.write_text(_line(A) + bad + _line(B))
    with pytest.raises(ResultsFileError, match=f"^{path}, {says}"):
        read_rows(str(path))


def test_a_torn_last_line_is_dropped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text(_line(A) + "\n" + _line(B)[:25])
    assert [row["case_id"] for row in read_rows(str(path))] == [A]
    assert f"warning: {path}, line 3: a torn last line" in capsys.readouterr().err
    path.write_text(_line(A) + _line(B).rstrip("\n"))  # complete, only its newline missing: kept
    assert [row["case_id"] for row in read_rows(str(path))] == [A, B]


@pytest.mark.parametrize("argv", [
    ["summary", "bad.jsonl"],
    ["report", "bad.jsonl", "--out", "report"],
    ["report", "good.jsonl", "--baseline", "bad.jsonl", "--out", "report"],
    ["gate", "bad.jsonl", "--no-baseline"],
    ["gate", "good.jsonl", "--baseline", "bad.jsonl"],
    ["merge", "good.jsonl", "bad.jsonl", "--out", "merged.jsonl"],
    ["flaky", "good.jsonl", "bad.jsonl"],
    [*RUN_A_AND_B[:-1], "bad.jsonl"],  # resuming
])
def test_every_command_refuses_a_file_with_garbage_in_it_with_exit_2(tmp_path, argv):
    """Before: summary and report counted the readable rows (100 %) and said nothing, gate died with a raw
    JSONDecodeError and exit 1 (a FAIL's code), run --resume kept the garbage."""
    (tmp_path / "good.jsonl").write_text(_line(A))
    bad = _line(A) + "garbage\n" + _line(B) + _line(B)[:20]
    (tmp_path / "bad.jsonl").write_text(bad)
    done = _cli(tmp_path, *argv)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]  # report's is the reports builder's own line
    assert last.startswith((f"python -m conformance {argv[0]}: error: ", "reports: ")), done.stderr
    assert last.endswith(": bad.jsonl, line 2: not JSON (Expecting value, column 1)"), done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "bad.jsonl").read_text() == bad
    assert not (tmp_path / "merged.jsonl").exists() and not (tmp_path / "report").exists()


def test_summary_and_gate_warn_of_a_torn_last_line_and_judge_the_rest(tmp_path):
    (tmp_path / "r.jsonl").write_text(_line(A) + _line(B)[:30])
    summary = _cli(tmp_path, "summary", "r.jsonl")
    assert summary.returncode == 0 and "warning: r.jsonl, line 2: a torn last line" in summary.stderr
    assert "all        1      1 100.0%" in summary.stdout
    gate = _cli(tmp_path, "gate", "r.jsonl", "--no-baseline")
    assert gate.returncode == 0 and "warning: r.jsonl, line 2: a torn last line" in gate.stderr


def test_the_writer_cuts_a_torn_last_line_so_no_garbage_stays_inside_the_file(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_line(A) + _line(B)[:30])
    ResultsWriter(str(path)).append({"case_id": B, "status": "pass"})
    assert path.read_text() == _line(A) + json.dumps({"case_id": B, "status": "pass"}) + "\n"
    path.write_text(_line(A).rstrip("\n"))  # a complete row missing its newline gets one
    ResultsWriter(str(path)).append({"case_id": B, "status": "pass"})
    assert [row["case_id"] for row in read_rows(str(path))] == [A, B]


@pytest.mark.slow
def test_a_resumed_run_reruns_the_case_of_a_torn_last_line(tmp_path):
    (tmp_path / "r.jsonl").write_text(_line(A, mode="static") + _line(B)[:40])
    done = _cli(tmp_path, *RUN_A_AND_B)
    assert done.returncode == 0, done.stderr
    assert "warning: r.jsonl, line 2: a torn last line" in done.stderr and "1 already in r.jsonl, 1 to run" in done.stderr
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(line)["case_id"] for line in lines] == [A, B]  # the fragment is gone, B ran once


# -- one writer ---------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_run_on_the_same_results_file_refuses_at_once(tmp_path):
    """Two real runs on one --out: the second exits 2 with a clear message, runs nothing and writes no row; once
    the first is killed (SIGKILL: no cleanup), the file can be written again. Before: both ran every case."""
    environment = {**os.environ, "PYTHONPATH": ROOT, "MODEL_ZOO_EXTRA": EXTRA}
    hanging = [*RUN_A_AND_B[:4], "test_sleeps", *RUN_A_AND_B[5:], "--timeout", "600"]
    first = subprocess.Popen([sys.executable, "-m", "conformance", *hanging], cwd=tmp_path, env=environment,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    lock = tmp_path / "r.jsonl.lock"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            time.sleep(0.2)
        second = _cli(tmp_path, *RUN_A_AND_B)
        assert first.poll() is None, "the first run ended early"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert second.returncode == 2, second.stderr
    assert (f"python -m conformance run: error: r.jsonl is being written by another run (process {first.pid} holds "
            "r.jsonl.lock); wait for it to end, or pass another --out") in second.stderr
    assert "to run" not in second.stderr  # refused before selecting any work
    assert read_rows(str(tmp_path / "r.jsonl")) == []  # test_sleeps hangs: no row yet, and none from the second run
    with sole_writer(str(tmp_path / "r.jsonl")):  # the killed run's lock went with its process
        pass


def test_the_lock_is_held_for_the_writer_and_released_after(tmp_path):
    out = str(tmp_path / "r.jsonl")
    with sole_writer(out):
        probe = subprocess.run([sys.executable, "-c", "import sys; from conformance.results import sole_writer\n"
                                f"with sole_writer({out!r}): pass"], env={**os.environ, "PYTHONPATH": ROOT},
                               capture_output=True, text=True, timeout=60)
        assert probe.returncode == 1 and "ResultsFileError" in probe.stderr and "is being written by" in probe.stderr
    with sole_writer(out):  # released on leaving, and the lock file left behind is no obstacle
        pass


def test_the_recorded_revision_is_the_engines_wherever_the_run_starts(tmp_path, monkeypatch):
    import pathlib
    import subprocess

    from conformance.results import git_revision

    root = pathlib.Path(__file__).resolve().parents[2]
    engine_head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, check=True).stdout.strip()
    other = tmp_path / "other_repository"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "other"], check=True)
    for where in (other, tmp_path):  # inside another repository, and outside any
        monkeypatch.chdir(where)
        assert git_revision().split("+")[0] == engine_head


def test_a_held_results_file_is_refused_before_any_work_and_a_free_one_writes_nothing(tmp_path):
    from conformance.results import ResultsFileError, refuse_if_held

    path = str(tmp_path / "r.jsonl")
    refuse_if_held(path)
    assert os.listdir(tmp_path) == []  # probing a file no run holds writes nothing
    with sole_writer(path):
        with pytest.raises(ResultsFileError, match="is being written by another run"):
            refuse_if_held(path)
    refuse_if_held(path)  # released: free again
