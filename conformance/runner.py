"""The parallel runner: a pool of worker processes, one case at a time each, with a per-case time limit.

Cases of one model go to the same worker in a row (one build and one trace serve every opset and mode).
A case that runs past its limit has its worker killed and is recorded as ``timeout``; a worker that dies
(native crash, out of memory) has its case recorded as ``crash``; either way a fresh worker takes over the
model's remaining cases and the run goes on. The parent is the only writer of the results file, and writes
each row as soon as its case ends, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import collections
import datetime
import multiprocessing
import shlex
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from conformance.cases import Case
from conformance.results import ResultsWriter
from conformance.schema import EXPORT, TORCHSCRIPT, capture_choice, default_capture, empty_row
from conformance.worker import serve

STARTUP_LIMIT_S = 600.0
_POLL_S = 0.5


@dataclass
class RunOptions:
    out: str
    workers: int = 2
    timeout_s: float = 300.0
    repro_dir: str | None = None
    progress: bool = True
    light_first: bool = False
    static_fields: dict = field(default_factory=dict)  # versions, git_rev: the same on every row


def rerun_command(case_id: str, out: str, exporter: str = "engine", capture: str = TORCHSCRIPT) -> str:
    rerun_out = out[: -len(".jsonl")] + ".rerun.jsonl" if out.endswith(".jsonl") else out + ".rerun"
    peer = " --exporter peer" if exporter == "peer" else ""
    export = " --capture export" if capture_choice(capture) == EXPORT else ""
    return f"python -m conformance run --case {shlex.quote(case_id)}{peer}{export} --out {shlex.quote(rerun_out)}"


class _Slot:
    """One worker process and the model queue it is serving."""

    def __init__(self, context, options: RunOptions):
        self.context = context
        self.options = options
        self.queue: collections.deque[Case] = collections.deque()
        self.case: Case | None = None
        self.started_at = ""
        self.started = 0.0
        self.failed_starts = 0
        self._spawn()

    def _spawn(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=serve, args=(child, self.options.repro_dir), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.ready = False
        self.spawned = time.monotonic()

    def respawn(self) -> None:
        self.kill()
        self._spawn()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()

    def send_next(self) -> None:
        self.case = self.queue.popleft()
        self.started = time.monotonic()
        self.started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.conn.send(self.case.as_dict())

    def limit(self) -> float:
        return self.options.timeout_s * max(1.0, self.case.cost) if self.case else STARTUP_LIMIT_S


def run(cases: list[Case], options: RunOptions) -> list[dict]:
    """Run ``cases`` (already filtered for resume) and return their rows in completion order."""
    writer = ResultsWriter(options.out)
    groups = collections.OrderedDict()
    # Heavy models first keeps the run's tail short; light first gives the widest coverage early in a run
    # that may be cut short.
    for case in sorted(cases, key=lambda c: c.cost if options.light_first else -c.cost):
        groups.setdefault(case.name, collections.deque()).append(case)
    pending = collections.deque(groups.values())
    context = multiprocessing.get_context("spawn")
    slots = [_Slot(context, options) for _ in range(min(options.workers, len(pending)))]
    rows: list[dict] = []
    bar = _progress(len(cases), options.progress)

    def finish(slot: _Slot, row: dict) -> None:
        row.update(options.static_fields)
        row["started_at"] = slot.started_at
        if row["status"] not in ("pass", "skipped") and not (row["status"] == "unsupported" and row.get("reason", "").startswith("expected")):
            row["rerun"] = rerun_command(row["case_id"], options.out, row.get("exporter") or "engine", row.get("capture"))
        writer.append(row)
        rows.append(row)
        slot.case = None
        if bar is not None:
            bar.update(1)
            counts = collections.Counter(r["status"] for r in rows)
            bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(counts.items())), refresh=False)

    try:
        while slots:
            for slot in list(slots):
                if slot.ready and slot.case is None:
                    if not slot.queue and pending:
                        slot.queue = pending.popleft()
                    if slot.queue:
                        slot.send_next()
                    else:
                        slot.conn.send(None)
                        slot.process.join(timeout=30)
                        slot.kill()
                        slots.remove(slot)
            if not slots:
                break
            ready = wait([s.conn for s in slots] + [s.process.sentinel for s in slots], timeout=_POLL_S)
            for slot in list(slots):
                alive = True
                if slot.conn in ready:
                    try:
                        kind, payload = slot.conn.recv()
                        if kind == "ready":
                            slot.ready, slot.failed_starts = True, 0
                        elif kind == "row" and slot.case is not None:
                            finish(slot, payload)
                        continue
                    except (EOFError, OSError):
                        alive = False
                if not alive or not slot.process.is_alive():
                    _on_death(slot, finish)
                    continue
                now = time.monotonic()
                if slot.case is not None and now - slot.started > slot.limit():
                    row = _failure_row(slot.case, "timeout", f"the case ran past its time limit of {slot.limit():.0f} s; its worker was killed")
                    row["duration_s"] = round(now - slot.started, 3)
                    finish(slot, row)
                    slot.respawn()
                elif not slot.ready and now - slot.spawned > STARTUP_LIMIT_S:
                    slot.respawn()
    finally:
        for slot in slots:
            slot.kill()
        if bar is not None:
            bar.close()
    return rows


def _on_death(slot: _Slot, finish) -> None:
    slot.process.join(timeout=5)
    code = slot.process.exitcode
    if not slot.ready:
        slot.failed_starts += 1
        if slot.failed_starts >= 3:
            raise RuntimeError(f"conformance workers cannot start (exit code {code}); run `python -c 'import exporter'` to see why")
    if slot.case is not None:
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        row = _failure_row(slot.case, "crash", f"the worker process died while running the case ({how})")
        row["duration_s"] = round(time.monotonic() - slot.started, 3)
        finish(slot, row)
    slot.respawn()


def _failure_row(case: Case, status: str, error: str) -> dict:
    row = empty_row()
    row.update({k: v for k, v in case.as_dict().items() if k in row and k != "capture"})
    # The worker died before saying how it captured: export, or the TorchScript capture the case is known by.
    row.update(status=status, error=error, capture=EXPORT if case.capture == EXPORT else default_capture(row))
    return row


def _progress(total: int, enabled: bool):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="case", dynamic_ncols=True, file=sys.stderr)
