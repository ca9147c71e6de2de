"""The one pool of worker processes that every runner uses: jobs handed out one at a time, a time limit per case.

The protocol, the same for every runner:

- the parent spawns a worker; the worker sets itself up (imports, caches), then says ``("ready", pid)``;
- the parent hands it one job at a time, as ``(payload, skip)``: ``skip`` holds the keys of the job's cases not to
  run (recorded before the run, or finished in it by a worker that has since died);
- for each case of the job the worker says ``("start", key, limit_s)``, runs it, and says ``("row", row)``; after
  the job's last case, ``("job_done", None)``; ``None`` from the parent ends the worker.

The parent is the only writer of the results file and appends each row as it arrives, so an interrupted run loses
nothing. A case that runs past its limit has its worker killed and gets a ``timeout`` row; a worker that dies in a
case (a native crash, out of memory) gets a ``crash`` row; either way a fresh worker takes over the rest of the same
job. A worker that does not say ready within ``STARTUP_LIMIT_S`` is replaced; three deaths in a row with no case in
flight stop the run with a RuntimeError.
"""

from __future__ import annotations

import collections
import datetime
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, NamedTuple

from conformance.results import ResultsWriter

# A worker's imports and set-up (torch, ONNX Runtime, the model zoo or the OpInfo database) on a loaded machine.
STARTUP_LIMIT_S = 600.0
# Deaths in a row with no case in flight after which the run stops: workers that cannot start (or a job whose own
# set-up kills them) would otherwise be respawned forever.
DEATHS_OUTSIDE_CASES = 3
_POLL_S = 0.5


@dataclass(frozen=True)
class Job:
    """What one worker is handed at a time: ``payload`` for its ``cases_of`` (a model's cases, an OpInfo unit),
    ``skip`` the keys of the job's cases already recorded, and ``name`` for messages."""

    name: str
    payload: Any
    skip: frozenset[str] = frozenset()


class WorkerCase(NamedTuple):
    """One case of a job, as the worker's ``cases_of`` yields it: its key (the case id), its time limit, and the
    call that runs it and returns its row."""

    key: str
    limit_s: float
    run: Callable[[], dict]


@dataclass
class Pool:
    """How a runner's jobs are run, and what the parent does with each row."""

    out: str  # the results file, appended to by the parent alone
    workers: int
    # The worker process's main function, serve(conn, *serve_args): it sets up, then calls serve_jobs.
    serve: Callable[..., None]
    serve_args: tuple
    # (case key, status, error) -> the row of a case whose worker was killed (``timeout``) or died (``crash``).
    failure_row: Callable[[str, str, str], dict]
    # A command that shows why workers cannot start (the error names it).
    startup_check: str
    # Fills the runner's own fields of a row (versions, a rerun command) just before it is written.
    finish_row: Callable[[dict], None] = lambda row: None
    # Called after each row is written (a progress bar, a count).
    progress: Callable[[dict], None] = lambda row: None


def serve_jobs(conn, cases_of: Callable[[Any, frozenset[str]], Iterable[WorkerCase]]) -> None:
    """The worker's side of the protocol, called once the worker is set up: say ready, then run each job handed
    over. ``cases_of(payload, skip)`` yields the job's cases whose keys are not in ``skip``, each set up lazily
    (nothing is spent on a skipped case)."""
    conn.send(("ready", os.getpid()))
    try:
        while (message := conn.recv()) is not None:
            payload, skip = message
            for case in cases_of(payload, skip):
                conn.send(("start", case.key, case.limit_s))
                conn.send(("row", case.run()))
            conn.send(("job_done", None))
    except (EOFError, KeyboardInterrupt):  # the parent is gone, or Ctrl-C reached the whole process group
        return


def run_jobs(pool: Pool, jobs: Iterable[Job]) -> int:
    """Run every job's cases in ``pool.workers`` worker processes, handing out jobs in the order given; returns the
    number of rows written."""
    return _Run(pool, jobs).run()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _death(exitcode: int | None) -> str:
    return f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"


@dataclass
class _Slot:
    """One worker process, the job it serves and the case it is running; respawned in place when it is lost."""

    pool: Pool
    context: Any
    job: Job | None = None
    finished: set[str] = field(default_factory=set)  # keys of the job's cases written in this run
    case: str | None = None
    limit_s: float = 0.0
    case_started: float = 0.0
    started_at: str = ""
    deaths: int = 0  # consecutive losses with no case in flight
    stopped: bool = False

    def __post_init__(self) -> None:
        self.spawn()

    def spawn(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=self.pool.serve, args=(child, *self.pool.serve_args), daemon=True)
        self.process.start()
        child.close()
        self.conn, self.ready, self.case, self.spawned = parent, False, None, time.monotonic()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()

    def send(self, message) -> None:
        try:
            self.conn.send(message)
        except OSError:  # the worker just died: the next look at it records that
            pass

    def stop(self) -> None:
        self.send(None)
        self.process.join(timeout=30)
        self.kill()
        self.stopped = True


class _Run:
    """The parent's loop: hands out jobs, writes rows, enforces the limits and replaces lost workers."""

    def __init__(self, pool: Pool, jobs: Iterable[Job]):
        self.pool = pool
        self.pending = collections.deque(jobs)
        self.writer = ResultsWriter(pool.out)
        self.written = 0

    def run(self) -> int:
        context = multiprocessing.get_context("spawn")
        slots = [_Slot(self.pool, context) for _ in range(min(self.pool.workers, len(self.pending)))]
        try:
            while slots:
                ready = wait([s.conn for s in slots] + [s.process.sentinel for s in slots], timeout=_POLL_S)
                for slot in slots:
                    self._tend(slot, ready)
                slots = [s for s in slots if not s.stopped]
        finally:
            for slot in slots:
                slot.kill()
        return self.written

    def _tend(self, slot: _Slot, ready: list) -> None:
        alive = self._drain(slot) if slot.conn in ready or slot.process.sentinel in ready else True
        if slot.stopped:
            return
        now = time.monotonic()
        if not alive or not slot.process.is_alive():
            self._drain(slot)  # a row sent just before the end still counts
            if slot.stopped:  # its last message ended its job, and no job was left to hand out
                return
            slot.process.join(timeout=5)
            how = _death(slot.process.exitcode)
            if slot.case is None:
                self._count_loss(slot, f"died ({how})")
            else:
                self._fail_case(slot, "crash", f"the worker process died while running the case ({how})")
        elif slot.case is not None and now - slot.case_started > slot.limit_s:
            self._fail_case(slot, "timeout", f"the case ran past its time limit of {slot.limit_s:.0f} s; its worker "
                                             "was killed")
        elif not slot.ready and now - slot.spawned > STARTUP_LIMIT_S:
            self._count_loss(slot, f"did not say ready within {STARTUP_LIMIT_S:g} s")
        else:
            return
        slot.kill()
        slot.spawn()  # a fresh worker takes over the rest of the job once it is ready

    def _drain(self, slot: _Slot) -> bool:
        """Handle every message ``slot``'s worker has sent; False once its pipe is broken (the worker is gone)."""
        while not slot.stopped:
            try:
                if not slot.conn.poll():
                    return True
                message = slot.conn.recv()
            except (EOFError, OSError):
                return False
            self._handle(slot, message)
        return True

    def _handle(self, slot: _Slot, message: tuple) -> None:
        kind, *payload = message
        if kind == "ready":
            slot.ready = True
            self._give_work(slot)
        elif kind == "start":
            slot.case, slot.limit_s = payload
            slot.case_started, slot.started_at, slot.deaths = time.monotonic(), _now(), 0
        elif kind == "row":
            self._write(slot, payload[0])
        elif kind == "job_done":
            slot.job = None
            self._give_work(slot)

    def _give_work(self, slot: _Slot) -> None:
        """Send ``slot`` the rest of its job, else the next pending job, else tell its worker to end."""
        if slot.job is None and self.pending:
            slot.job, slot.finished = self.pending.popleft(), set()
        if slot.job is None:
            slot.stop()
        else:
            slot.send((slot.job.payload, slot.job.skip | slot.finished))

    def _write(self, slot: _Slot, row: dict) -> None:
        row["started_at"] = slot.started_at
        self.pool.finish_row(row)
        self.writer.append(row)
        self.written += 1
        slot.finished.add(slot.case)
        slot.case = None
        self.pool.progress(row)

    def _fail_case(self, slot: _Slot, status: str, error: str) -> None:
        """The case in flight on a lost worker gets its ``status`` row (``timeout``, ``crash``) saying ``error``."""
        row = self.pool.failure_row(slot.case, status, error)
        row["duration_s"] = round(time.monotonic() - slot.case_started, 3)
        self._write(slot, row)

    def _count_loss(self, slot: _Slot, cause: str) -> None:
        """A worker lost with no case in flight (``cause``): the run stops at DEATHS_OUTSIDE_CASES in a row."""
        slot.deaths += 1
        if slot.deaths >= DEATHS_OUTSIDE_CASES:
            raise RuntimeError(self._giving_up(slot, cause))

    def _giving_up(self, slot: _Slot, cause: str) -> str:
        if not slot.ready:
            return (f"workers cannot start: {DEATHS_OUTSIDE_CASES} in a row {cause}; run "
                    f"`{self.pool.startup_check}` to see why")
        job = slot.job.name if slot.job else "none"
        return (f"workers die outside any case: {DEATHS_OUTSIDE_CASES} in a row {cause} on job {job} (the job's own "
                "set-up kills them); run that job alone to see why")
