"""The worker pool itself (conformance.pool), with real spawned processes running the tiny workers of
tests/harness/pool_workers.py: time limits, deaths, workers that cannot start, resuming a job, rows written as cases end."""

from __future__ import annotations

import json

import pytest

from conformance import pool as pool_module
from conformance.pool import Job, Pool, run_jobs
from tests.harness import pool_workers


def _failure_row(key: str, status: str, error: str) -> dict:
    return {"case_id": key, "status": status, "error": error}


def _pool(out, serve=pool_workers.serve, workers: int = 1) -> Pool:
    return Pool(out=str(out), workers=workers, serve=serve, serve_args=(), failure_row=_failure_row,
                startup_check="python -c 'import tests.harness.pool_workers'")


def _job(name: str, out, cases: list[tuple[str, str]], limit_s: float = 30.0, skip=frozenset()) -> Job:
    return Job(name, {"cases": cases, "limit_s": limit_s, "out": str(out)}, frozenset(skip))


def _rows(out) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_hanging_case_gets_a_timeout_row_and_a_fresh_worker_runs_the_rest_of_its_job(tmp_path):
    out = tmp_path / "r.jsonl"
    job = _job("model", out, [("a", "pass"), ("b", "hang"), ("c", "pass")], limit_s=1.0)
    assert run_jobs(_pool(out), [job]) == 3
    a, b, c = _rows(out)
    assert [a["case_id"], b["case_id"], c["case_id"]] == ["a", "b", "c"]
    assert b["status"] == "timeout" and "time limit of 1 s" in b["error"] and b["duration_s"] >= 1.0
    assert a["status"] == c["status"] == "pass" and a["pid"] != c["pid"]
    assert all(row["started_at"] for row in (a, b, c))


def test_a_worker_dying_mid_case_gets_a_crash_row_and_a_fresh_worker_runs_the_rest_of_its_job(tmp_path):
    out = tmp_path / "r.jsonl"
    job = _job("model", out, [("a", "pass"), ("b", "die"), ("c", "pass")])
    assert run_jobs(_pool(out), [job]) == 3
    a, b, c = _rows(out)
    assert b["case_id"] == "b" and b["status"] == "crash" and "(exit code 7)" in b["error"]
    assert (a["case_id"], c["case_id"]) == ("a", "c") and a["pid"] != c["pid"]


def test_workers_that_cannot_start_stop_the_run_saying_how_to_see_why(tmp_path):
    out = tmp_path / "r.jsonl"
    with pytest.raises(RuntimeError, match=r"workers cannot start: 3 in a row died \(exit code 3\); run "
                                           r"`python -c 'import tests.harness.pool_workers'` to see why"):
        run_jobs(_pool(out, serve=pool_workers.cannot_start), [_job("model", out, [("a", "pass")])])
    assert not out.exists() or _rows(out) == []


def test_a_worker_that_never_says_ready_is_replaced_and_counts_as_failing_to_start(tmp_path, monkeypatch):
    monkeypatch.setattr(pool_module, "STARTUP_LIMIT_S", 0.5)
    out = tmp_path / "r.jsonl"
    with pytest.raises(RuntimeError, match=r"workers cannot start: 3 in a row did not say ready within 0.5 s"):
        run_jobs(_pool(out, serve=pool_workers.never_ready), [_job("model", out, [("a", "pass")])])


def test_rows_reach_the_file_as_their_cases_end(tmp_path):
    out = tmp_path / "r.jsonl"
    run_jobs(_pool(out), [_job("model", out, [("a", "pass"), ("b", "count_rows")])])
    assert [row.get("rows_seen") for row in _rows(out)] == [None, 1]


def test_every_job_runs_once_across_workers_and_skips_its_recorded_cases(tmp_path):
    out = tmp_path / "r.jsonl"
    jobs = [_job(f"model{i}", out, [(f"{i}/a", "pass"), (f"{i}/b", "pass")], skip={f"{i}/a"} if i % 2 else ())
            for i in range(4)]
    written = []
    pool = _pool(out, workers=2)
    pool.progress = written.append
    assert run_jobs(pool, jobs) == 6
    assert sorted(row["case_id"] for row in _rows(out)) == ["0/a", "0/b", "1/b", "2/a", "2/b", "3/b"]
    assert [row["case_id"] for row in written] == [row["case_id"] for row in _rows(out)]


def test_a_job_whose_set_up_kills_its_workers_stops_the_run_naming_the_job(tmp_path):
    out = tmp_path / "r.jsonl"
    job = Job("model", {"cases": [("a", "pass")], "limit_s": 30.0, "out": str(out), "die_before_cases": True})
    with pytest.raises(RuntimeError, match=r"workers die outside any case: 3 in a row died \(exit code 5\) on job model"):
        run_jobs(_pool(out), [job])
