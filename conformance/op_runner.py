"""The op-case runner: one ``opcases.OpCase`` exported at an opset, static or dynamic, on a provider, and compared
with PyTorch; its results row. The pytest tier (``op_tests/test_ops.py``) and the conformance runner
(``conformance.op_cases``) both run cases through ``run_case``, so their rows read the same.

Outputs are compared value by value (``compare="values"``), except for random ops (``compare="distribution"``):
ONNX Runtime draws its own numbers, so those are compared by shape, dtype and distribution, with a two-sample
Kolmogorov-Smirnov test between PyTorch's draws and ONNX Runtime's (ONNX Runtime seeded, so a verdict repeats).
Each row records which comparison it rests on (``comparison``). Export, session, runs and comparison are
``conformance.pipeline``'s stages, shared with the OpInfo suite and the model runner.
"""

from __future__ import annotations

import functools
import io
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from conformance.feeds import caller_values
from conformance.onnx_schemas import schema_problems
from conformance.pipeline import compare_stage, export_stage, run_stage, session_stage
from conformance.schema import capture_choice, case_id, empty_row
from conformance.verdict import KNOWN_FAILURE
from exporter import Capture
from exporter.numerics import Verdict, compare_arrays
from exporter.tolerances import tolerance_for
from opcases import OpCase, input_names


def _flat_outputs(out: Any) -> list[torch.Tensor]:
    from exporter.frontends.base import flatten_outputs

    return flatten_outputs(out)


def caller_feeds(arguments: tuple, names: list[str], capture: Capture = Capture.TRACE) -> dict[str, Any]:
    """A size variant's arguments keyed by the names the case gives them at export (``export_arguments``): ONNX
    Runtime is fed by these names (``conformance.pipeline.run_stage``), not by position, so an export that drops an
    unused argument, or binds one to the wrong input, cannot shift the others. As torch.onnx does, a Python number
    is a 0-d input of a TorchScript capture; torch.export's capture holds it as a constant."""
    return caller_values(arguments, names, numbers=capture != Capture.EXPORT)


def tolerance(case: OpCase, dtype: str) -> Callable[[float], tuple[float, float]]:
    """The shared table's tolerance for ``dtype`` and the case's op family, with the case's own override (which
    must carry a ``tolerance_reason``)."""
    entry = tolerance_for(dtype, case.op)

    def at(scale: float) -> tuple[float, float]:
        rtol, atol = entry.at(scale)
        return (case.rtol if case.rtol is not None else rtol, case.atol if case.atol is not None else atol)

    return at


def _output_dtype(expected: list[torch.Tensor]) -> str:
    floats = [str(t.dtype).replace("torch.", "") for t in expected if t.is_floating_point()]
    return floats[0] if floats else "float32"


# Two-sample Kolmogorov-Smirnov at significance 1e-6: c(alpha) = sqrt(-ln(alpha / 2) / 2). With a few thousand
# draws per side it tells a uniform from a normal, or a 10% wider range, while a correct export fails it once in
# a million runs (and with ONNX Runtime seeded, never on the same inputs).
KS_ALPHA = 1e-6
_KS_C = float(np.sqrt(-np.log(KS_ALPHA / 2) / 2))


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The largest distance between the empirical distribution functions of two samples."""
    a, b = np.sort(a.ravel().astype(np.float64)), np.sort(b.ravel().astype(np.float64))
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / a.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


def compare_distributions(expected: list[np.ndarray], actual: list[np.ndarray]) -> Verdict:
    """Random outputs: the same count, shapes and dtypes, and the same distribution (no errors are measured)."""
    if len(expected) != len(actual):
        return Verdict(False, f"output count differs: torch {len(expected)}, onnx {len(actual)}", comparison="distribution")
    statistics = []
    for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
        if tuple(e.shape) != tuple(a.shape) or e.dtype != a.dtype:
            return Verdict(False, f"output {index}: {a.dtype}{tuple(a.shape)} != torch {e.dtype}{tuple(e.shape)}",
                           comparison="distribution")
        if e.size == 0:
            continue
        statistic = ks_statistic(e, a)
        critical = _KS_C * float(np.sqrt((e.size + a.size) / (e.size * a.size)))
        statistics.append(f"D={statistic:.3f} (critical {critical:.3f})")
        if statistic > critical:
            return Verdict(False, f"output {index}: distributions differ: two-sample KS D={statistic:.3f} > "
                                  f"{critical:.3f} (alpha {KS_ALPHA})", comparison="distribution")
    return Verdict(True, comparison="distribution: shape, dtype and two-sample KS " + ", ".join(statistics))


def export_modes(case: OpCase, opset: int, wanted: tuple[str, ...] = ("static", "dynamic")) -> list[str]:
    """The modes the op tests export ``case`` in at ``opset``: static, and dynamic where the case has a dynamic
    variant and ``opset`` is at least its ``min_opset``; of those the ``wanted`` ones, or else the first (so every
    case runs at every opset)."""
    modes = ["static", "dynamic"] if case.has_dynamic_variant() and opset >= case.min_opset else ["static"]
    return [mode for mode in modes if mode in wanted] or modes[:1]


def export_arguments(case: OpCase, dynamic: bool,
                     capture: Capture = Capture.TRACE) -> tuple[tuple, list[str], dict | None]:
    """The example inputs (size variant 0), input names and dynamic axes ``case`` is exported with. Call it after
    seeding and building the model, as ``run_case`` does, so the inputs are the same draws."""
    example = case.inputs(0)
    names = input_names(len(example))
    axes = case.dynamic_axes(names) if dynamic else None  # by position among all the arguments
    if capture == Capture.EXPORT:  # a torch.export program holds Python numbers as constants: only tensors are inputs
        names = [name for name, x in zip(names, example, strict=True) if isinstance(x, torch.Tensor)]
    return example, names, axes


def run_case(case: OpCase, opset: int, dynamic: bool, provider: str = "cpu", capture: Capture = Capture.TRACE) -> dict:
    """Export ``case`` at ``opset`` and compare ONNX Runtime with PyTorch (on both size variants if dynamic): the
    case's results row (``case_row``). ``capture`` "export" captures with torch.export (``dynamo=True``): a model it
    cannot capture is an ``export_error`` at the capture stage with its reason, and a scripted case is skipped
    (torch.export takes an nn.Module). The row's ``capture`` says which capture made it: trace, script or export."""
    import exporter

    torch.manual_seed(0)
    model = case.build()
    example, names, axes = export_arguments(case, dynamic, capture)
    scripted = isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction))
    row = case_row(case, opset, dynamic, provider,
                   Capture.EXPORT if capture == Capture.EXPORT else Capture.SCRIPT if scripted else Capture.TRACE)
    row["dtypes"] = sorted({str(t.dtype).replace("torch.", "") for t in example if isinstance(t, torch.Tensor)})
    if capture == Capture.EXPORT and scripted:
        row.update(status="skipped", stage="capture",
                   reason=f"{type(model).__name__} is a scripted model: torch.export (dynamo=True) takes an nn.Module; "
                          "its TorchScript case covers it")
        return row
    buffer = io.BytesIO()
    exported = export_stage(row, lambda captured: exporter.export_program(
        model, tuple(example), buffer, opset_version=opset, input_names=names, dynamic_axes=axes,
        dynamo=capture == Capture.EXPORT, captured=captured, check_dynamic_axes=not case.frozen_by_trace))
    if exported is not None:
        _check_exported(case, model, exported.model_proto, buffer.getvalue(), dynamic, provider, row,
                        functools.partial(caller_feeds, names=names, capture=capture))
    note_known_failure(case, row)
    return row


def note_known_failure(case: OpCase, row: dict) -> None:
    """A failure at an opset the case lists among its known failures (on the row's provider, static or dynamic)
    carries that limitation as its reason ("known failure: ..."), which the release gate does not count as a failure."""
    known = case.known_failures_on(row["provider"], row["mode"] == "dynamic").get(row["opset"])
    if known and row["status"] not in ("pass", "skipped"):
        row["reason"] = f"{KNOWN_FAILURE}: {known}"


def case_row(case: OpCase, opset: int, dynamic: bool, provider: str, capture: Capture) -> dict:
    """The results row of one op case before it runs (the conformance results schema, kind "op"), as op_tests and the
    conformance runner both record it. ``capture``: its :class:`exporter.Capture` (trace, script or export); a
    torch.export case's id ends in '/export' (conformance.schema.case_id)."""
    mode = "dynamic" if dynamic else "static"
    row = empty_row()
    row.update(case_id=case_id("op", case.name, opset, mode, provider, capture_choice(capture)), kind="op",
               source="cases", name=case.name, op=case.op, opset=opset, provider=provider, mode=mode,
               exporter="engine", expected_min_opset=case.min_opset_for(dynamic), capture=str(capture), comparison="values")
    return row


def _check_exported(case: OpCase, model: torch.nn.Module, onnx_model, onnx_bytes: bytes, dynamic: bool, provider: str,
                    row: dict, named: Callable[[tuple], dict[str, Any]]) -> None:
    """Check the exported model's operators against their ONNX schemas, then compare ONNX Runtime with PyTorch on
    the case's size variants, each fed by the names ``named`` gives its arguments."""
    problems = schema_problems(onnx_model)
    if problems:
        row.update(status="checker_error", stage="schema", error="; ".join(problems))
        return
    if case.compare == "distribution":  # random kernels take ONNX Runtime's global seed when the session is built
        import onnxruntime

        onnxruntime.set_seed(0)
    session = session_stage(row, onnx_bytes, provider)
    if session is None:
        return
    verdicts = []
    for variant in [0, 1] if dynamic else [0]:
        inputs = case.inputs(variant)
        with torch.no_grad():
            started = time.perf_counter()
            expected = _flat_outputs(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            row["torch_ms"] = (time.perf_counter() - started) * 1e3
        actual = run_stage(row, session, named(inputs))
        if actual is None:
            return
        expected_arrays = [e.detach().cpu().numpy() for e in expected]
        if case.compare == "distribution":
            verdict = compare_distributions(expected_arrays, actual)
            row["comparison"] = verdict.comparison
        else:
            verdict = compare_arrays(expected_arrays, actual, tolerance(case, _output_dtype(expected)))
        verdicts.append((f"size variant {variant}", verdict))
        if not verdict.ok:
            break
    compare_stage(row, verdicts)
    if case.compare == "distribution":  # the errors of values drawn apart measure nothing
        row.update(max_abs_error=None, max_rel_error=None, rtol=None, atol=None)
