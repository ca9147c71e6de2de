"""Tiny workers for the pool's own tests (tests/harness/test_pool.py): module-level, so that a spawned process imports them.

A job's payload is ``{"cases": [(key, action), ...], "limit_s": seconds, "out": results file}`` (and
``"die_before_cases": True`` for a job whose set-up kills its worker); each action is a function below that returns
the case's row, hangs, or kills its process.
"""

from __future__ import annotations

import functools
import os
import time

from conformance.pool import WorkerCase, serve_jobs


def serve(conn) -> None:
    serve_jobs(conn, _cases)


def cannot_start(conn) -> None:
    """A worker whose set-up fails before it can say ready (a broken install, a missing native library)."""
    os._exit(3)


def never_ready(conn) -> None:
    """A worker whose set-up never ends."""
    time.sleep(3600)


def _cases(job: dict, skip: frozenset[str]):
    if job.get("die_before_cases"):  # the job's own set-up crashes the process, before any case starts
        os._exit(5)
    for key, action in job["cases"]:
        if key not in skip:
            yield WorkerCase(key, job["limit_s"], functools.partial(ACTIONS[action], key, job))


def _row(key: str, job: dict) -> dict:
    return {"case_id": key, "status": "pass", "pid": os.getpid()}


def _hang(key: str, job: dict) -> dict:
    time.sleep(3600)
    return _row(key, job)


def _die(key: str, job: dict) -> dict:
    os._exit(7)


def _count_rows(key: str, job: dict) -> dict:
    """Wait (up to 10 s) for a row in the results file, then say how many there are: the parent writes each row as
    its case ends, not when the job or the run ends."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not _lines(job["out"]):
        time.sleep(0.05)
    return {**_row(key, job), "rows_seen": _lines(job["out"])}


def _lines(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path) as handle:
        return sum(1 for _ in handle)


ACTIONS = {"pass": _row, "hang": _hang, "die": _die, "count_rows": _count_rows}
