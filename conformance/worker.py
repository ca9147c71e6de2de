"""Running one case inside a worker process: build, reference, export, check, ONNX Runtime, compare.

A worker keeps the current model (built, calibrated, with its reference outputs and its TorchScript capture)
between cases, so the opsets and modes of one model share one build and one trace (``conformance.prepared``); each
export gets a fresh copy of the graph. Export, session, runs and comparison are ``conformance.pipeline``'s stages; a
float32 mismatch is arbitrated by a float64 run (``conformance.arbitration``), and a disagreement left is judged node
by node by ``conformance.localization``.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import model_zoo
from conformance import op_cases, repro
from conformance.arbitration import Disagreement, Float64Run, Ruling, arbitrate
from conformance.compare import compare_detections, reference_problem
from conformance.feeds import caller_values
from conformance.localization import (
    LOCALIZED,
    judge_before_selection,
    judge_rounding_growth,
    localize,
    rounding_only,
)
from conformance.pipeline import compare_stage, export_stage, run_stage, session_stage
from conformance.pool import WorkerCase, serve_jobs
from conformance.prepared import Prepared, WorkerState, clone_inputs, flat_outputs, prepared_capture
from conformance.schema import EXPORT, SCRIPT, TRACE, empty_row, truncated
from conformance.session import cuda_environment, gpu_name
from conformance.transformers_route import TRANSFORMERS, export_through_transformers
from exporter import Capture
from exporter.numerics import Verdict, compare_arrays


def configure_process(threads: int = 1) -> None:
    """One thread per worker (the pool is the parallelism) and no TF32 anywhere, so CUDA compares like CPU."""
    torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    # set_flags rather than the attribute: torch.testing's OpInfo database (imported by the op suite in the same
    # test process) freezes cuDNN's attributes, and set_flags is the setter that stays allowed.
    torch.backends.cudnn.set_flags(_allow_tf32=False)


def torchscript_capture(model) -> str:
    """The TorchScript capture the exporter makes of ``model``: 'script' for a ScriptModule or scripted function
    (its own graph), 'trace' otherwise (scripted functions it calls stay scripted inside the trace)."""
    return SCRIPT if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)) else TRACE


def aten_ops_of(captured) -> list[str]:
    """The captured graph's op kinds: TorchScript node kinds, or for a torch.export capture the ATen ops its program
    calls ('aten::convolution'), as converted at the case's opset."""
    if captured.capture != Capture.EXPORT:
        return aten_ops(captured.graph)
    kinds = set()
    for node in captured.graph.nodes:
        if node.op == "call_function":
            name = getattr(node.target, "name", None)
            kinds.add(name().partition(".")[0] if callable(name) else f"python::{getattr(node.target, '__name__', node.target)}")
    return sorted(kinds)


def aten_ops(graph) -> list[str]:
    kinds: set[str] = set()

    def visit(block_nodes):
        for node in block_nodes:
            kinds.add(node.kind())
            for block in node.blocks():
                visit(block.nodes())

    visit(graph.nodes())
    return sorted(kinds)


def run_conformance_case(case: dict, state: WorkerState, repro_root: str | None) -> dict:
    """Run one case and return its results row (everything but versions, git revision and rerun command)."""
    row = empty_row()
    row.update({k: case[k] for k in ("case_id", "kind", "name", "family", "opset", "provider", "mode", "exporter")})
    row["capture"] = EXPORT if case.get("capture") == EXPORT else None  # TorchScript's: known once the model is built
    start = time.perf_counter()
    artifacts: dict[str, Any] = {}
    # Op cases export to memory; a model case writes its model (and external data) into a folder of its own.
    workdir = "" if case["kind"] == "op" else tempfile.mkdtemp(prefix="case-", dir=state.scratch)
    try:
        if not _cuda_blocked(case, row):
            _run(case, state, row, artifacts, workdir)
    except Exception as error:  # a harness bug must still produce an honest row, not a lost case
        row.update(status="crash", error=truncated(f"harness error: {type(error).__name__}: {error}\n{traceback.format_exc()}"))
    finally:
        row["duration_s"] = round(time.perf_counter() - start, 3)
        if repro_root and _deserves_bundle(row):
            row["repro"] = repro.write_bundle(repro_root, row, artifacts)
            if artifacts.get("localization_dir"):
                row["localization"]["repro"] = os.path.join(row["repro"], "localization")
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return row


def _cuda_blocked(case: dict, row: dict) -> bool:
    """Record a CUDA case that cannot run here (skipped without a GPU, env_error when ONNX Runtime cannot use it)."""
    if case["provider"] != "cuda":
        return False
    status, reason = cuda_environment()
    if status:
        row.update(status=status, reason=reason, stage="setup", error=reason if status == "env_error" else "")
    else:
        row["gpu"] = gpu_name()
    return bool(status)


def _deserves_bundle(row: dict) -> bool:
    if row["kind"] == "op":  # an op case is its own repro: the rerun command runs just that case
        return False
    if row["status"] in ("mismatch", "export_error", "checker_error", "ort_error"):
        return True
    if row["status"] == "inconclusive":  # its localization's repro, when it found a diverging node
        return bool((row.get("localization") or {}).get("node"))
    return row["status"] == "unsupported" and row["reason"].startswith("engine gap")


def reference_device(entry: model_zoo.ZooEntry, provider: str) -> str:
    """Where PyTorch computes the outputs that a case on ``provider`` is compared with: on the GPU for CUDA cases,
    each side on the device under test; on the CPU for a model PyTorch cannot run on CUDA (``cuda_reference``)."""
    return "cuda" if provider == "cuda" and entry.cuda_reference else "cpu"


def _run(case: dict, state: WorkerState, row: dict, artifacts: dict, workdir: str) -> None:
    if case["kind"] == "op":
        op_cases.run(case, row)
        return

    provider, mode, opset = case["provider"], case["mode"], case["opset"]
    prepared = state.prepare(case["name"])
    entry = prepared.entry
    device = reference_device(entry, provider)
    row["expected_min_opset"] = entry.min_opset
    dynamo = row["capture"] == EXPORT
    if prepared.model is not None and not dynamo:
        row["capture"] = torchscript_capture(prepared.model)
    if dynamo and prepared.model is not None and torchscript_capture(prepared.model) == SCRIPT:
        row.update(status="skipped", stage="capture",
                   reason=f"{type(prepared.model).__name__} is a scripted model: torch.export (dynamo=True) takes an "
                          "nn.Module; its TorchScript case covers it")
        return
    if prepared.setup_error:
        row.update(status="export_error", stage="setup", error=truncated(prepared.setup_error),
                   reason="the model could not be built or run in PyTorch; nothing was exported")
        return
    try:
        reference = state.reference(prepared, device, "input 0")
        if not prepared.reference_checked:
            perturbed = flat_outputs(state.reference(prepared, device, "perturbed"))
            prepared.problem = reference_problem(flat_outputs(reference), perturbed)
            prepared.reference_checked = True
    except Exception as error:
        prepared.setup_error = f"running the model in PyTorch failed: {type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"
        row.update(status="export_error", stage="setup", error=truncated(prepared.setup_error),
                   reason="the model could not be built or run in PyTorch; nothing was exported")
        return
    row["torch_ms"] = prepared.torch_ms.get(device + "input 0")
    labels = ["input 0"] + (["dynamic input 1"] if mode == "dynamic" else []) + [
        k for k in prepared.checks if k.startswith("extra")]
    # Each check's values keyed by the names the caller gives them (the entry's input_names over forward's binding),
    # so ONNX Runtime is fed by name: an export that binds an argument to the wrong input feeds another tensor.
    named = functools.partial(caller_values, input_names=entry.input_names, model=prepared.model, numbers=not dynamo)
    try:
        artifacts["checks"] = {label: (named(prepared.checks[label]), flat_outputs(state.reference(prepared, device, label)))
                               for label in labels}
    except Exception as error:
        row.update(status="export_error", stage="setup", reason="the model could not be run in PyTorch on a check input",
                   error=truncated(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"))
        return

    path = os.path.join(workdir, "model.onnx")
    dynamic_axes = entry.dynamic_axes if mode == "dynamic" else None
    result = _export(case, prepared, row, path, dynamic_axes)
    if result is None:
        return
    artifacts["model_dir"] = workdir
    row["aten_ops"] = aten_ops_of(result.capture) if result.capture is not None else []
    row["file_size"] = sum(os.path.getsize(os.path.join(workdir, f)) for f in os.listdir(workdir))
    session = session_stage(row, path, provider)
    if session is None:
        return

    # exporter.verify re-judges and localizes a disagreement node by node on either capture; the peer's and
    # transformers' exports have no such judgment, so their verdicts rest on the outputs alone.
    judged = case.get("exporter", "engine") == "engine"
    # transformers' exporter writes every field of the model's output; the zoo compares the one it names
    outputs = entry.output_names if case.get("exporter") == TRANSFORMERS else None
    verdicts: list[tuple[str, Verdict]] = []
    for label in labels:
        values, expected = artifacts["checks"][label]
        actual = run_stage(row, session, values, label, outputs)
        if actual is None:
            return
        current = _compare(entry, expected, actual, state.reference(prepared, device, label))
        if not current.ok and entry.comparison == "outputs":
            exact = functools.partial(_float64_outputs, state, prepared, device, label)
            current = _arbitrated(current, arbitrate(Disagreement([expected], [actual], entry.tolerance, current.atol),
                                                     Float64Run(exact)))
        verdicts.append((label, current))
    failing = [(label, verdict, artifacts["checks"][label][1]) for label, verdict in verdicts if not verdict.ok]
    failing_label = failing[0][0] if failing else ""
    tied = [label for label, verdict in verdicts if verdict.compared_nothing]  # checks whose detections all tie
    verdict = compare_stage(row, verdicts)
    on_cpu = "; PyTorch's outputs computed on the CPU" if provider != device else ""
    row["comparison"] = f"{verdict.comparison}; checked on {', '.join(labels)}{on_cpu}"
    if verdict.ok and prepared.problem:
        row.update(status="inconclusive", reason=prepared.problem, error=verdict.message)
    elif verdict.ok and verdict.compared_nothing and judged:
        judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, tied, workdir, dynamo=dynamo)
    elif verdict.ok and verdict.compared_nothing:
        row.update(status="inconclusive", error=verdict.message, reason="a check had nothing to compare")
    if opset < entry.min_opset and row["status"] == "pass":
        row["reason"] = f"exports below the zoo's expected minimum opset {entry.min_opset}"
    if row["status"] == "mismatch" and entry.comparison == "detection" and judged:
        # Detections beyond tolerance: judged, and localized, before and after the selection on the failing checks.
        judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, [label for label, _, _ in failing],
                                workdir, mismatch=True, dynamo=dynamo)
    elif row["status"] in LOCALIZED and judged and not row.get("selection"):
        result = localize(prepared, row, artifacts, opset, dynamic_axes, failing_label or "input 0", workdir,
                          dynamo=dynamo)
        if row["status"] == "mismatch" and rounding_only(entry, failing):
            judge_rounding_growth(prepared, row, opset, dynamic_axes, failing, result, dynamo=dynamo)


def _peer_export(prepared: Prepared, path: str, opset: int, dynamic_axes):
    """Export with PyTorch's own TorchScript-based exporter, the peer the engine is measured against.

    Only the harness calls it (to validate the zoo and the runner against a mature exporter); the engine never does.
    Its failures are mapped onto the same statuses: unsupported operators, checker failures, other errors.
    """
    import onnx
    import torch.onnx
    from torch.onnx.errors import UnsupportedOperatorError as PeerUnsupported

    from exporter.errors import CheckerError, UnsupportedOperatorError

    entry = prepared.entry
    try:
        torch.onnx.export(prepared.model, clone_inputs(prepared.export_args), path, opset_version=opset, dynamo=False,
                          input_names=entry.input_names, output_names=entry.output_names, dynamic_axes=dynamic_axes)
    except PeerUnsupported as error:
        raise UnsupportedOperatorError("peer", opset, reason=str(error)) from error
    model = onnx.load(path)
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as error:
        raise CheckerError(f"the exported model fails the ONNX checker: {error}") from error
    return _PeerResult(model)


@dataclass
class _PeerResult:
    model_proto: Any
    capture: Any = None


def _export(case: dict, prepared: Prepared, row: dict, path: str, dynamic_axes):
    """The engine's export of the case to ``path`` (its capture shared across opsets), or the peer's; None where it
    failed, the row saying why (``pipeline.export_stage``), in the zoo's terms for a refusal."""
    import exporter

    entry, opset, dynamo = prepared.entry, case["opset"], row["capture"] == EXPORT
    explain = functools.partial(_explain_export_failure, entry, opset, dynamo)
    if case.get("exporter") == "peer":
        return export_stage(row, lambda _: _peer_export(prepared, path, opset, dynamic_axes), explain=explain)
    if case.get("exporter") == TRANSFORMERS:
        return export_stage(row, lambda _: export_through_transformers(prepared, path, opset), explain=explain)
    return export_stage(
        row,
        lambda captured: exporter.export_program(prepared.model, prepared.export_args, path, opset_version=opset,
                                         input_names=entry.input_names, output_names=entry.output_names,
                                         dynamic_axes=dynamic_axes, dynamo=dynamo, captured=captured),
        capture=lambda: prepared_capture(prepared.captures, prepared.model, prepared.export_args, dynamo=dynamo,
                                         dynamic_axes=dynamic_axes, input_names=entry.input_names),
        explain=explain)


def _explain_export_failure(entry, opset: int, dynamo: bool, row: dict, error: Exception) -> None:
    """The zoo's words on a capture that failed or an operator refused."""
    from exporter.errors import CaptureError, UnsupportedOperatorError

    if isinstance(error, CaptureError):
        row["reason"] = ("torch.export could not capture the model (dynamo=True): nothing was converted" if dynamo
                         else "TorchScript could not capture the model: nothing was converted")
    elif isinstance(error, UnsupportedOperatorError):
        row["reason"] = _unsupported_reason(entry, opset)


def _float64_outputs(state: WorkerState, prepared: Prepared, device: str, label: str) -> list[list[np.ndarray]]:
    return [flat_outputs(state.float64_reference(prepared, device, label))]


def _arbitrated(verdict: Verdict, ruling: Ruling) -> Verdict:
    """``verdict`` with the float64 run's ruling on it: cleared, or failing with the run's words added."""
    verdict.comparison += f"; {ruling.text}"
    if ruling.status == "pass":
        verdict.ok, verdict.message = True, ""
    else:
        verdict.message += f"; {ruling.text}"
    return verdict


def _compare(entry, expected: list[np.ndarray], actual: list[np.ndarray], structured: Any) -> Verdict:
    if entry.comparison == "detection":
        # Keys from the reference itself (one image: a list holding one dict), so the order cannot drift.
        return compare_detections(list(structured[0].keys()), expected, actual, entry.tolerance)
    return compare_arrays(expected, actual, entry.tolerance)


def _unsupported_reason(entry, opset: int) -> str:
    if opset < entry.min_opset:
        return f"expected: {entry.min_opset_reason or f'the zoo expects opset >= {entry.min_opset}'}"
    return f"engine gap: the zoo expects {entry.name} to export at opset >= {entry.min_opset}"


def serve(conn, repro_root: str | None) -> None:
    """Worker process of conformance.pool: set up, then run each job (one model's cases, each with its time limit)."""
    import warnings

    warnings.filterwarnings("ignore")
    configure_process()
    import onnxruntime  # noqa: F401

    # The engine's import (the package root imports lazily) and the zoo's loading are paid before the first case's
    # clock starts.
    import exporter.contract  # noqa: F401
    import exporter.symbolics  # noqa: F401

    model_zoo.entries()

    scratch = tempfile.mkdtemp(prefix="conformance-worker-")
    state = WorkerState(scratch)

    def model_cases(job: list[tuple[dict, float]], skip: frozenset[str]):
        for case, limit_s in job:
            if case["case_id"] not in skip:
                yield WorkerCase(case["case_id"], limit_s, functools.partial(run_conformance_case, case, state, repro_root))

    try:
        serve_jobs(conn, model_cases)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
