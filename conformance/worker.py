"""Running one case inside a worker process: build, reference, export, check, ONNX Runtime, compare.

A worker keeps the current model (built, calibrated, with its reference outputs and its TorchScript capture)
between cases, so the opsets and modes of one model share one build and one trace (``conformance.prepared``); each
export gets a fresh copy of the graph. A disagreement is judged node by node by ``conformance.localization``.
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
from conformance.compare import compare_detections, reference_problem
from conformance.localization import (
    LOCALIZED,
    NOT_LOCALIZED,
    judge_before_selection,
    judge_rounding_growth,
    localize,
    rounding_only,
)
from conformance.pool import WorkerCase, serve_jobs
from conformance.prepared import Prepared, WorkerState, clone_inputs, flat_outputs, flat_tensors, prepared_capture
from conformance.schema import EXPORT, SCRIPT, TRACE, empty_row, truncated
from conformance.session import cuda_environment, fell_back, gpu_name
from exporter.numerics import Verdict, arbitrate, compare_arrays
from exporter.ort_session import make_session, ort_level


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
    if getattr(captured, "front_end", None) != EXPORT:
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


def onnx_op_types(model) -> list[str]:
    types: set[str] = set()

    def visit(graph):
        for node in graph.node:
            types.add(node.op_type if not node.domain or node.domain == "ai.onnx" else f"{node.domain}::{node.op_type}")
            for attribute in node.attribute:
                if attribute.type == attribute.GRAPH:
                    visit(attribute.g)
                for sub in attribute.graphs:
                    visit(sub)

    visit(model.graph)
    return sorted(types)


def run_case(case: dict, state: WorkerState, repro_root: str | None) -> dict:
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
    import exporter
    from exporter.errors import CaptureError, CheckerError, UnsupportedOperatorError

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
    try:
        artifacts["checks"] = {label: (flat_tensors(prepared.checks[label]), flat_outputs(state.reference(prepared, device, label)))
                               for label in labels}
    except Exception as error:
        row.update(status="export_error", stage="setup", reason="the model could not be run in PyTorch on a check input",
                   error=truncated(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"))
        return

    path = os.path.join(workdir, "model.onnx")
    dynamic_axes = entry.dynamic_axes if mode == "dynamic" else None
    row["stage"] = "capture"
    started = time.perf_counter()
    try:
        if case.get("exporter") == "peer":
            result = _peer_export(prepared, path, opset, dynamic_axes)
        else:
            captured = prepared_capture(prepared.captures, prepared.model, prepared.export_args, dynamo=dynamo,
                                        dynamic_axes=dynamic_axes, input_names=entry.input_names)
            row["stage"] = "convert"
            result = exporter.export(prepared.model, prepared.export_args, path, opset_version=opset,
                                     input_names=entry.input_names, output_names=entry.output_names,
                                     dynamic_axes=dynamic_axes, dynamo=dynamo, captured=captured)
    except CaptureError as error:
        row.update(status="export_error", stage="capture", error=truncated(str(error)),
                   reason=("torch.export could not capture the model (dynamo=True): nothing was converted" if dynamo
                           else "TorchScript could not capture the model: nothing was converted"))
        return
    except UnsupportedOperatorError as error:
        row.update(status="unsupported", stage="convert", error=truncated(str(error)), reason=_unsupported_reason(entry, opset))
        return
    except CheckerError as error:
        row.update(status="checker_error", stage="checker", error=truncated(str(error)))
        return
    except Exception as error:
        row.update(status="export_error", stage=row["stage"], error=truncated(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-6)}"))
        return
    finally:
        row["export_seconds"] = round(time.perf_counter() - started, 4)
    artifacts["model_dir"] = workdir
    row["node_count"] = len(result.model.graph.node)
    row["op_types"] = onnx_op_types(result.model)
    row["workarounds"] = list(getattr(result, "workarounds", []))  # the peer's result records none
    row["aten_ops"] = aten_ops_of(result.capture) if result.capture is not None else []
    row["file_size"] = sum(os.path.getsize(os.path.join(workdir, f)) for f in os.listdir(workdir))

    row["stage"] = "ort_load"
    try:
        session = make_session(path, provider)
    except Exception as error:
        row.update(status="ort_error", error=truncated(f"{type(error).__name__}: {error}"))
        return
    row["session_providers"] = session.get_providers()
    row["ort_level"] = ort_level()
    if fell_back(session, provider):
        row.update(status="env_error", reason="ONNX Runtime fell back to CPU for this model although CUDA was requested",
                   error=f"session providers: {row['session_providers']}")
        return

    names = [i.name for i in session.get_inputs()]
    # exporter.verify re-judges and localizes a disagreement node by node on a TorchScript capture; the peer's export
    # and torch.export captures have no such judgment, so their verdict rests on the outputs alone.
    judged = case.get("exporter") != "peer" and not dynamo
    verdict: Verdict | None = None
    failing_label = ""
    tied: list[str] = []  # checks whose final detections all sit on near-ties
    failing: list[tuple[str, Verdict, list[np.ndarray]]] = []
    for label in labels:
        inputs, expected = artifacts["checks"][label]
        # Not strict: the export may drop an input its graph never reads (naming.drop_unused_inputs).
        feeds = {name: t.detach().cpu().numpy() for name, t in zip(names, inputs, strict=False)}
        row["stage"] = "ort_run"
        try:
            t0 = time.perf_counter()
            actual = session.run(None, feeds)
            if label == "input 0":
                row["ort_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
        except Exception as error:
            row.update(status="ort_error", error=truncated(f"{label}: {type(error).__name__}: {error}"))
            return
        row["stage"] = "accuracy"
        current = _compare(entry, expected, actual, state.reference(prepared, device, label))
        if not current.ok and entry.comparison == "outputs":
            current = _arbitrate(state, prepared, device, label, current, expected, actual)
        failing_label = failing_label or ("" if current.ok else label)
        if not current.ok:
            failing.append((label, current, expected))
        if current.compared_nothing:
            tied.append(label)
        current.message = f"{label}: {current.message}" if current.message else ""
        verdict = current if verdict is None else verdict.merge(current)
    on_cpu = "; PyTorch's outputs computed on the CPU" if provider != device else ""
    row.update(max_abs_error=verdict.max_abs, max_rel_error=verdict.max_rel, rtol=verdict.rtol, atol=verdict.atol,
               comparison=f"{verdict.comparison}; checked on {', '.join(labels)}{on_cpu}")
    if not verdict.ok:
        row.update(status="mismatch", error=verdict.message)
    elif prepared.problem:
        row.update(status="inconclusive", reason=prepared.problem, error=verdict.message)
    elif verdict.compared_nothing and judged:
        judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, tied, workdir)
    elif verdict.compared_nothing:
        row.update(status="inconclusive", error=verdict.message,
                   reason="a check had nothing to compare" + ("" if case.get("exporter") == "peer" else
                                                               f" ({NOT_LOCALIZED})"))
    else:
        row.update(status="pass", error=verdict.message)
    if opset < entry.min_opset and row["status"] == "pass":
        row["reason"] = f"exports below the zoo's expected minimum opset {entry.min_opset}"
    if row["status"] in LOCALIZED and dynamo:
        row["localization"] = {"error": NOT_LOCALIZED, "check": failing_label or "input 0"}
    elif row["status"] == "mismatch" and entry.comparison == "detection" and judged:
        # Detections beyond tolerance: judged, and localized, before and after the selection on the failing checks.
        judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, [label for label, _, _ in failing],
                                workdir, mismatch=True)
    elif row["status"] in LOCALIZED and judged and not row.get("selection"):
        result = localize(prepared, row, artifacts, opset, dynamic_axes, failing_label or "input 0", workdir)
        if row["status"] == "mismatch" and rounding_only(entry, failing):
            judge_rounding_growth(prepared, row, opset, dynamic_axes, failing, result)


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
    model: Any
    capture: Any = None


def _arbitrate(state: WorkerState, prepared: Prepared, device: str, label: str, verdict: Verdict,
               expected: list[np.ndarray], actual: list[np.ndarray]) -> Verdict:
    """A float32 mismatch, re-judged against a float64 run of the model (see ``compare.arbitrate``)."""
    try:
        exact = flat_outputs(state.float64_reference(prepared, device, label))
    except Exception as error:
        verdict.message += f" (float64 arbitration impossible: {type(error).__name__}: {str(error)[:200]})"
        return verdict
    decision = arbitrate(expected, actual, exact, verdict.atol)
    verdict.comparison += f"; {decision.comparison}"
    if decision.ok:
        verdict.ok, verdict.message = True, ""
    else:
        verdict.message += f"; {decision.comparison}"
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

    import exporter  # noqa: F401  (import and zoo-loading costs are paid before the first case's clock starts)

    model_zoo.entries()

    scratch = tempfile.mkdtemp(prefix="conformance-worker-")
    state = WorkerState(scratch)

    def model_cases(job: list[tuple[dict, float]], skip: frozenset[str]):
        for case, limit_s in job:
            if case["case_id"] not in skip:
                yield WorkerCase(case["case_id"], limit_s, functools.partial(run_case, case, state, repro_root))

    try:
        serve_jobs(conn, model_cases)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
