"""The full OpInfo matrix as a resumable run in the worker pool (conformance.pool).

A job is one (OpInfo, dtype) unit: its samples are generated once and each is checked at every requested opset and
mode. The parent is the only writer of the results file and appends each row as it arrives, so an interrupted run
loses nothing; re-running the same command skips every case already recorded. A case that runs past its time limit,
or whose worker dies (a native crash in ONNX Runtime), is recorded as ``timeout`` or ``crash`` and a fresh worker
carries on with the rest of its unit.
"""

from __future__ import annotations

import collections
import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from conformance.pool import Job, Pool, WorkerCase, run_jobs, serve_jobs
from conformance.results import latest_by_case, read_rows
from conformance.schema import TRACE, empty_row

# The dtype name standing for "float32 where the OpInfo lists it, else its first listed dtype" (so every OpInfo,
# integer- and bool-only ones included, is attempted).
PRIMARY = "primary"
# The case ids of this runner's rows: op/opinfo/<key>/... (traced) and op/opinfo-export/<key>/... (torch.export).
_CASE_PREFIX = "op/opinfo"


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
    capture: str = TRACE  # TRACE (TorchScript) or EXPORT (torch.export, dynamo=True): exporter.Capture's words
    static_fields: dict = field(default_factory=dict)


def units(plan: Plan) -> list[tuple[str, str]]:
    return [(key, dtype) for key in plan.keys for dtype in plan.dtypes]


def run(plan: Plan) -> int:
    """Run ``plan`` to completion (resuming); returns the number of rows written."""
    recorded = _recorded_by_key(plan)
    jobs = [Job(f"{key}/{dtype}", (key, dtype), recorded.get(key, frozenset())) for key, dtype in units(plan)]
    pool = Pool(out=plan.out, workers=plan.workers, serve=serve, serve_args=(plan,), failure_row=_failure_row,
                startup_check="python -c 'from op_tests.opinfo.samples import opinfos_by_key; opinfos_by_key()'",
                finish_row=lambda row: row.update(plan.static_fields), progress=_progress_every(500))
    return run_jobs(pool, jobs)


def _recorded_by_key(plan: Plan) -> dict[str, frozenset[str]]:
    """The cases recorded in the results file and not to be redone (``plan.redo``), by OpInfo key: what each unit's
    job skips."""
    by_key = collections.defaultdict(set)
    for case, row in latest_by_case(read_rows(plan.out)).items():
        if case.startswith(_CASE_PREFIX) and row["status"] not in plan.redo and "all" not in plan.redo:
            by_key[case.split("/")[2]].add(case)
    return {key: frozenset(cases) for key, cases in by_key.items()}


def _progress_every(count: int):
    """A progress callback saying how many rows are written, every ``count`` rows."""
    written = 0

    def progress(row: dict) -> None:
        nonlocal written
        written += 1
        if written % count == 0:
            print(f"{written} rows written", file=sys.stderr, flush=True)

    return progress


def serve(conn, plan: Plan) -> None:
    """Worker process of conformance.pool: set up, then check the samples of each (OpInfo key, dtype) unit."""
    import warnings

    import onnxruntime
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    onnxruntime.set_default_logger_severity(3)  # run errors are recorded in rows, not printed
    import op_tests.opinfo.check  # noqa: F401  (import costs are paid before the worker says ready)
    from op_tests.opinfo.samples import opinfos_by_key

    table = opinfos_by_key()
    serve_jobs(conn, lambda unit, skip: _unit_cases(table[unit[0]], unit[1], skip, plan))


def _unit_cases(opinfo, dtype_name: str, skip: frozenset[str], plan: Plan) -> Iterator[WorkerCase]:
    """The cases of one (OpInfo, dtype) unit not in ``skip``: each sample at every opset and mode it has, or the one
    row saying why the unit has no samples."""
    import torch

    from op_tests.opinfo.check import check, modes_of, prepare
    from op_tests.opinfo.samples import dtype_name as dtype_name_of
    from op_tests.opinfo.samples import listed_dtypes, samples

    listed = listed_dtypes(opinfo)
    if dtype_name == PRIMARY:
        if not listed:
            yield from _known_row(_no_dtype(opinfo, plan), skip, plan)
            return
        dtype_name = dtype_name_of(listed[0])
    dtype = getattr(torch, dtype_name)
    if dtype not in listed:
        return
    try:
        group = samples(opinfo, dtype)
    except Exception as error:  # the OpInfo's own generator fails: one row says so
        yield from _known_row(_generation_failure(opinfo, dtype_name, plan, error), skip, plan)
        return
    for sample in group:
        if plan.samples is not None and sample.index not in plan.samples:
            continue
        prepared = None
        for opset in plan.opsets:
            for mode in ("static", "dynamic"):
                case = _case_id(sample.name, opset, mode, plan.capture)
                if case in skip:
                    continue
                prepared = prepared or prepare(sample, group)
                if mode in modes_of(prepared):
                    yield WorkerCase(case, plan.timeout_s,
                                     functools.partial(check, prepared, opset, mode, plan.repro_dir, plan.capture))


def _known_row(row: dict, skip: frozenset[str], plan: Plan) -> Iterator[WorkerCase]:
    """A unit's one row known without checking anything, as a case (unless recorded)."""
    if row["case_id"] not in skip:
        yield WorkerCase(row["case_id"], plan.timeout_s, lambda: row)


def _case_id(name: str, opset: int, mode: str, capture: str = TRACE) -> str:
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


def _failure_row(case: str, status: str, error: str) -> dict:
    """The row of a case whose worker was killed (``timeout``) or died (``crash``), read from its case id."""
    from op_tests.opinfo.samples import opinfos_by_key

    parts = case.split("/")
    opinfo = opinfos_by_key()[parts[2]]
    row = empty_row()
    row.update(case_id=case, kind="op", source="opinfo", name="/".join(parts[2:5]), op=opinfo.name,
               variant=opinfo.variant_test_name, sample=int(parts[4][1:]),
               dtype=parts[3], dtypes=[parts[3]], opset=int(parts[5].removeprefix("opset")), mode=parts[6],
               provider="cpu", status=status, error=error)
    return row
