"""The conformance runner: the selected cases, one model's cases per job, run in the worker pool (conformance.pool).

Cases of one model form one job, so one worker serves them in a row (one build and one trace serve every opset and
mode). A case that runs past its limit (``--timeout`` scaled by the model's cost) is recorded as ``timeout``, a case
whose worker dies as ``crash``, and a fresh worker takes over the model's remaining cases; each failing row carries
the command that re-runs its case.
"""

from __future__ import annotations

import collections
import shlex
import sys
from dataclasses import dataclass, field

from conformance.cases import Case
from conformance.pool import Job, Pool, run_jobs
from conformance.schema import EXPORT, TORCHSCRIPT, capture_choice, default_capture, empty_row
from conformance.worker import serve


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


def run(cases: list[Case], options: RunOptions) -> list[dict]:
    """Run ``cases`` (already filtered for resume) and return their rows in completion order."""
    rows: list[dict] = []
    bar = _progress(len(cases), options.progress)
    by_id = {case.case_id: case for case in cases}

    def finish_row(row: dict) -> None:
        row.update(options.static_fields)
        if row["status"] not in ("pass", "skipped") and not (row["status"] == "unsupported" and row.get("reason", "").startswith("expected")):
            row["rerun"] = rerun_command(row["case_id"], options.out, row.get("exporter") or "engine", row.get("capture"))

    def progress(row: dict) -> None:
        rows.append(row)
        if bar is not None:
            bar.update(1)
            counts = collections.Counter(r["status"] for r in rows)
            bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(counts.items())), refresh=False)

    pool = Pool(out=options.out, workers=options.workers, serve=serve, serve_args=(options.repro_dir,),
                failure_row=lambda key, status, error: _failure_row(by_id[key], status, error),
                startup_check="python -c 'import exporter'", finish_row=finish_row, progress=progress)
    try:
        run_jobs(pool, _model_jobs(cases, options))
    finally:
        if bar is not None:
            bar.close()
    return rows


def _model_jobs(cases: list[Case], options: RunOptions) -> list[Job]:
    """One job per model: its cases with their time limits (``--timeout`` scaled by the model's cost)."""
    groups: dict[str, list[Case]] = {}
    # Heavy models first keeps the run's tail short; light first gives the widest coverage early in a run
    # that may be cut short.
    for case in sorted(cases, key=lambda c: c.cost if options.light_first else -c.cost):
        groups.setdefault(case.name, []).append(case)
    return [Job(name, [(case.as_dict(), options.timeout_s * max(1.0, case.cost)) for case in group])
            for name, group in groups.items()]


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
