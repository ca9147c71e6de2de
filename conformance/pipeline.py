"""The one pipeline of an exported case, stage by stage: export, ONNX Runtime session, runs, comparison.

Op cases (``conformance.op_runner``), OpInfo samples (``op_tests.opinfo.check``) and model cases (``conformance.worker``)
fill their results row (``conformance.schema.empty_row``) through these stages, so a failure reads the same whichever
of them meets it. Each stage records what it reached in the row and returns what the next stage needs, or None when
the case stops there, the row then holding the status, the stage and the error:

- :func:`export_stage`: ``CaptureError`` is an export_error at capture, ``UnsupportedOperatorError`` unsupported at
  convert, ``CheckerError`` a checker_error at checker, anything else an export_error at the stage reached, with the
  innermost frames of its traceback; on success the export's time, node count, op types and workarounds;
- :func:`session_stage`: an ort_error at ort_load, or an env_error where ONNX Runtime fell back from CUDA;
- :func:`run_stage`: the run fed by name from the caller's values (``conformance.feeds``): a graph input that names
  no value of the caller's is a mismatch at ort_run, ONNX Runtime's failure an ort_error at ort_run; the first
  run's time;
- :func:`compare_stage`: the verdicts of every check input merged into a pass or a mismatch at accuracy.

A mismatch may go to ``conformance.arbitration.arbitrate``. What a caller judges besides (detections, ties between
selected values, random outputs, known failures) is its own.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from conformance.feeds import FeedError, feeds_for, session_inputs
from conformance.schema import truncated
from conformance.session import fell_back, gpu_name
from exporter.numerics import Verdict
from exporter.ort_session import make_session, ort_level

# The innermost frames of an unexpected export error's traceback that its row keeps: where it was raised.
TRACEBACK_FRAMES = 6


def fail(row: dict, status: str, error: str, **fields: Any) -> None:
    """Record in ``row`` a case that stops with ``status``, its ``error`` text truncated as rows hold it."""
    row.update(status=status, error=truncated(error), **fields)


def export_stage(row: dict, export: Callable[[Any], Any], capture: Callable[[], Any] | None = None,
                 explain: Callable[[dict, Exception], None] | None = None) -> Any | None:
    """The export's result (``.model``, and ``.workarounds`` where it has them), or None with the failure in ``row``.

    ``capture()`` runs first where the caller captures apart (a capture reused across opsets), and its result is
    handed to ``export``; otherwise ``export`` gets None and captures itself. ``explain(row, error)``, where given,
    adds the caller's own words to a failure the stage recorded (a reason, a finer status)."""
    started = time.perf_counter()
    try:
        row["stage"] = "capture"
        captured = capture() if capture is not None else None
        row["stage"] = "convert"
        exported = export(captured)
    except Exception as error:  # every failure becomes the row's; the caller's tests and gates judge it
        _export_failure(row, error)
        if explain is not None:
            explain(row, error)
        return None
    finally:
        row["export_seconds"] = round(time.perf_counter() - started, 4)
    row.update(node_count=len(exported.model_proto.graph.node), op_types=onnx_op_types(exported.model_proto),
               workarounds=list(getattr(exported, "workarounds", [])))
    return exported


def _export_failure(row: dict, error: Exception) -> None:
    from exporter.errors import CaptureError, CheckerError, UnsupportedOperatorError

    if isinstance(error, CaptureError):
        fail(row, "export_error", str(error), stage="capture")
    elif isinstance(error, UnsupportedOperatorError):
        fail(row, "unsupported", str(error), stage="convert")
    elif isinstance(error, CheckerError):
        fail(row, "checker_error", str(error), stage="checker")
    else:
        fail(row, "export_error", f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-TRACEBACK_FRAMES)}")


def onnx_op_types(model) -> list[str]:
    """The sorted op types of ``model``'s main graph and subgraphs, a custom domain's as 'domain::OpType'."""
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


def session_stage(row: dict, model: str | bytes, provider: str):
    """An ONNX Runtime session on ``provider`` for the model (a path or its bytes), or None with the failure in
    ``row``; the row records the session's providers, its optimization level and, on CUDA, the GPU."""
    row["stage"] = "ort_load"
    try:
        session = make_session(model, provider)
    except Exception as error:
        fail(row, "ort_error", f"{type(error).__name__}: {error}")
        return None
    row.update(session_providers=session.get_providers(), ort_level=ort_level())
    if provider == "cuda":
        row["gpu"] = gpu_name()
    if fell_back(session, provider):
        fail(row, "env_error", f"session providers: {row['session_providers']}",
             reason="ONNX Runtime fell back to CPU for this model although CUDA was requested")
        return None
    return session


def run_stage(row: dict, session, values: dict[str, Any], label: str = "",
              outputs: list[str] | None = None) -> list[np.ndarray] | None:
    """ONNX Runtime's outputs, or None with the failure in ``row`` (its error led by ``label``, the check input's
    name, where given), every graph output or those named ``outputs``. The session is fed by name: each graph input gets the caller's value of that name
    (``values``, from ``conformance.feeds.caller_values``; a value the graph has no input for, an argument the
    export dropped, is left out), and a graph input that names no value of the caller's is a mismatch, the export's
    inputs not being the caller's arguments. The case's first run is the row's ``ort_ms``."""
    row["stage"] = "ort_run"
    try:
        feeds = feeds_for(session_inputs(session), values)
    except FeedError as error:
        fail(row, "mismatch", _led(label, str(error)))
        return None
    try:
        started = time.perf_counter()
        results = session.run(outputs, feeds)
    except Exception as error:
        fail(row, "ort_error", _led(label, f"{type(error).__name__}: {error}"))
        return None
    if row["ort_ms"] is None:
        row["ort_ms"] = round((time.perf_counter() - started) * 1e3, 3)
    return results


def compare_stage(row: dict, verdicts: list[tuple[str, Verdict]]) -> Verdict:
    """The check inputs' verdicts, each with its label (or ''), merged (``Verdict.merge``: the first failure, the
    largest errors and tolerances) into the row: a pass, or a mismatch whose error is the first failing check's
    message led by its label. The merged verdict's message on a pass (a note, such as nothing left to compare) is
    the caller's to record."""
    labelled = [replace(verdict, message=_led(label, verdict.message) if verdict.message else "")
                for label, verdict in verdicts]
    merged = labelled[0]
    for verdict in labelled[1:]:
        merged = merged.merge(verdict)
    row.update(stage="accuracy", status="pass", max_abs_error=merged.max_abs, max_rel_error=merged.max_rel,
               rtol=merged.rtol, atol=merged.atol)
    if not merged.ok:
        row.update(status="mismatch", error=merged.message)
    return merged


def _led(label: str, text: str) -> str:
    """``text`` led by the check input's ``label`` where there is one."""
    return f"{label}: {text}" if label else text
