"""The full OpInfo matrix as a resumable run: worker processes check samples, the parent writes the rows.

A unit of work is one (OpInfo, dtype): its samples are generated once and each is checked at every requested
opset and mode. The parent is the only writer of the results file and appends each row as it arrives, so an
interrupted run loses nothing; re-running the same command skips every case already recorded. A case that
runs past its time limit, or whose worker dies (a native crash in ONNX Runtime), is recorded as ``timeout``
or ``crash`` and a fresh worker carries on after it.
"""

from __future__ import annotations

import datetime
import multiprocessing
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from conformance.results import ResultsWriter, latest_by_case, read_rows
from conformance.schema import empty_row

_POLL_S = 1.0
# The dtype name standing for "float32 where the OpInfo lists it, else its first listed dtype" (so every OpInfo,
# integer- and bool-only ones included, is attempted).
PRIMARY = "primary"
STARTUP_LIMIT_S = 300.0


@dataclass
class Plan:
    """What to run: OpInfo keys, dtype names, opsets, sample indices (None: all), where to write."""

    keys: list[str]
    dtypes: list[str]
    opsets: list[int]
    out: str
    samples: list[int] | None = None
    workers: int = 1
    timeout_s: float = 120.0
    repro_dir: str | None = None
    redo: tuple[str, ...] = ()  # statuses (or "all") whose recorded cases run again (after a fix)
    capture: str = "trace"  # "trace" (TorchScript) or "export" (torch.export, dynamo=True)
    static_fields: dict = field(default_factory=dict)


def units(plan: Plan) -> list[tuple[str, str]]:
    return [(key, dtype) for key in plan.keys for dtype in plan.dtypes]


def serve(conn, plan: Plan, work: list[tuple[str, str]]) -> None:
    """Worker process: check every sample of ``work`` not yet in the results file, announcing each case."""
    import warnings

    import onnxruntime
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    onnxruntime.set_default_logger_severity(3)  # run errors are recorded in rows, not printed
    from op_tests.opinfo.check import check, modes_of, prepare
    from op_tests.opinfo.samples import dtype_name as dtype_name_of
    from op_tests.opinfo.samples import listed_dtypes, opinfos_by_key, samples

    done = {case: row["status"] for case, row in latest_by_case(read_rows(plan.out)).items()}
    done = {case for case, status in done.items() if status not in plan.redo and "all" not in plan.redo}
    table = opinfos_by_key()
    for key, dtype_name in work:
        opinfo = table[key]
        listed = listed_dtypes(opinfo)
        if dtype_name == PRIMARY:
            if not listed:
                conn.send(("row", _no_dtype(opinfo, plan)))
                continue
            dtype_name = dtype_name_of(listed[0])
        dtype = getattr(torch, dtype_name)
        if dtype not in listed:
            continue
        try:
            group = samples(opinfo, dtype)
        except Exception as error:  # the OpInfo's own generator fails: one row says so
            conn.send(("row", _generation_failure(opinfo, dtype_name, plan, error)))
            continue
        for sample in group:
            if plan.samples is not None and sample.index not in plan.samples:
                continue
            prepared = None
            for opset in plan.opsets:
                for mode in ("static", "dynamic"):
                    case = _case_id(sample.name, opset, mode, plan.capture)
                    if case in done:
                        continue
                    prepared = prepared or prepare(sample, group)
                    if mode not in modes_of(prepared):
                        continue
                    conn.send(("start", case))
                    conn.send(("row", check(prepared, opset, mode, plan.repro_dir, plan.capture)))
    conn.send(("done", None))


def _case_id(name: str, opset: int, mode: str, capture: str = "trace") -> str:
    from conformance.schema import case_id
    from op_tests.opinfo.check import opinfo_case_name

    return case_id("op", opinfo_case_name(name, capture), opset, mode, "cpu")


def _no_dtype(opinfo, plan: Plan) -> dict:
    """The row of an OpInfo that lists none of the dtypes ONNX Runtime's CPU provider serves."""
    from op_tests.opinfo.samples import DTYPES, dtype_name, opinfo_key

    row = empty_row()
    name = f"{opinfo_key(opinfo)}/none/s0"
    row.update(case_id=_case_id(name, plan.opsets[0], "static"), kind="op", source="opinfo", name=name,
               op=opinfo.name, variant=opinfo.variant_test_name, dtype="none", opset=plan.opsets[0], provider="cpu",
               mode="static", status="not_capturable", stage="setup",
               reason=f"the OpInfo lists none of {[dtype_name(d) for d in DTYPES]} on CPU "
                      f"(it lists {sorted(dtype_name(d) for d in opinfo.supported_dtypes('cpu'))})")
    return row


def _generation_failure(opinfo, dtype: str, plan: Plan, error: Exception) -> dict:
    from op_tests.opinfo.samples import opinfo_key

    row = empty_row()
    name = f"{opinfo_key(opinfo)}/{dtype}/generator"
    row.update(case_id=_case_id(name, plan.opsets[0], "static"), kind="op", source="opinfo", name=name,
               op=opinfo.name, variant=opinfo.variant_test_name, dtype=dtype, dtypes=[dtype], opset=plan.opsets[0],
               provider="cpu", mode="static", status="not_capturable", stage="setup",
               reason=f"the OpInfo's sample generator fails: {type(error).__name__}: {error}"[:500])
    return row


class _Worker:
    def __init__(self, context, plan: Plan, work: list[tuple[str, str]]):
        self.context, self.plan, self.work = context, plan, work
        self.case: str | None = None
        self.started = time.monotonic()
        self.finished = False
        self.deaths = 0  # consecutive deaths with no case in flight (a worker that cannot start)
        self.spawn()

    def spawn(self) -> None:
        parent, child = self.context.Pipe()
        self.process = self.context.Process(target=serve, args=(child, self.plan, self.work), daemon=True)
        self.process.start()
        child.close()
        self.conn, self.case, self.started = parent, None, time.monotonic()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()


def run(plan: Plan) -> int:
    """Run ``plan`` to completion (resuming); returns the number of rows written."""
    writer = ResultsWriter(plan.out)
    all_units = units(plan)
    shares = [all_units[i:: plan.workers] for i in range(plan.workers)]
    context = multiprocessing.get_context("spawn")
    workers = [_Worker(context, plan, share) for share in shares if share]
    written = 0

    def write(row: dict, started_at: str | None = None) -> None:
        nonlocal written
        row.update(plan.static_fields)
        row["started_at"] = started_at or _now()
        writer.append(row)
        written += 1
        if written % 500 == 0:
            print(f"{written} rows written", file=sys.stderr, flush=True)

    try:
        while workers:
            ready = wait([w.conn for w in workers] + [w.process.sentinel for w in workers], timeout=_POLL_S)
            for worker in list(workers):
                if worker.conn in ready and _drain(worker, write):
                    if worker.finished:
                        worker.kill()
                        workers.remove(worker)
                    continue
                if not worker.process.is_alive():
                    _record_failure(worker, write, "crash", f"the worker died (exit code {worker.process.exitcode})")
                elif worker.case is not None and time.monotonic() - worker.started > plan.timeout_s:
                    _record_failure(worker, write, "timeout", f"ran past {plan.timeout_s:.0f} s; the worker was killed")
    finally:
        for worker in workers:
            worker.kill()
    return written


def _drain(worker: _Worker, write) -> bool:
    """Read every pending message of ``worker``; False when its pipe broke (it died)."""
    try:
        while worker.conn.poll():
            kind, payload = worker.conn.recv()
            if kind == "start":
                worker.case, worker.started = payload, time.monotonic()
            elif kind == "row":
                write(payload)
                worker.case = None
            elif kind == "done":
                worker.finished = True
    except (EOFError, OSError):
        return False
    return True


def _record_failure(worker: _Worker, write, status: str, error: str) -> None:
    """The in-flight case (if any) gets a ``crash``/``timeout`` row; a fresh worker resumes after it."""
    from op_tests.opinfo.samples import opinfos_by_key

    worker.deaths = 0 if worker.case is not None else worker.deaths + 1
    if worker.deaths >= 3:
        raise RuntimeError(f"OpInfo workers die before checking anything ({error}); run one in the foreground")
    if worker.case is not None:
        row = empty_row()
        parts = worker.case.split("/")
        opinfo = opinfos_by_key()[parts[2]]
        row.update(case_id=worker.case, kind="op", source="opinfo", name="/".join(parts[2:5]), op=opinfo.name,
                   variant=opinfo.variant_test_name, sample=int(parts[4][1:]),
                   dtype=parts[3], dtypes=[parts[3]], opset=int(parts[5].removeprefix("opset")), mode=parts[6],
                   provider="cpu", status=status, error=error)
        write(row)
    worker.kill()
    worker.spawn()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
