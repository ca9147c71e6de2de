"""The per-operator test harness: one OpCase per op sample, run at an opset, static or dynamic, on a provider.

A case names its op (``name``, used in test ids), builds a model (a function of tensors or a module),
and makes sample inputs for two size variants: variant 0 is exported, variant 1 (different sizes on the
axes that should be dynamic) is fed to the dynamic export as a second check. Axes whose sizes differ between
the variants become the dynamic axes. Below ``min_opset`` the case must raise UnsupportedOperatorError naming
that minimum.

Outputs are compared value by value (``compare="values"``), except for random ops (``compare="distribution"``):
ONNX Runtime draws its own numbers, so those are compared by shape, dtype and distribution, with a two-sample
Kolmogorov-Smirnov test between PyTorch's draws and ONNX Runtime's (ONNX Runtime seeded, so a verdict repeats).
Each row records which comparison it rests on (``comparison``). Export, session, runs and comparison are
``conformance.pipeline``'s stages, shared with the OpInfo suite and the model runner.
"""

from __future__ import annotations

import functools
import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from conformance.feeds import caller_values
from conformance.pipeline import compare_stage, export_stage, run_stage, session_stage
from conformance.results import ResultsWriter
from conformance.schema import capture_choice, case_id, empty_row
from conformance.verdict import KNOWN_FAILURE
from exporter.numerics import Verdict, compare_arrays
from exporter.registry import MAX_OPSET, MIN_OPSET
from exporter.tolerances import tolerance_for
from op_tests.schemas import schema_problems

OPSETS = tuple(range(MIN_OPSET, MAX_OPSET + 1))
# The opsets and modes at which the op cases run under the torch.export capture. By default opsets 18 (where
# dynamo=True callers are) and the newest, each case once at each: dynamic where it has a dynamic variant (symbolic shapes are where torch.export's
# programs differ most), else static. OP_TESTS_EXPORT_OPSETS=all (or a comma-separated list) and
# OP_TESTS_EXPORT_MODES=static,dynamic widen it.
EXPORT_OPSETS = OPSETS if os.environ.get("OP_TESTS_EXPORT_OPSETS") == "all" else tuple(
    int(opset) for opset in os.environ.get("OP_TESTS_EXPORT_OPSETS", f"18,{MAX_OPSET}").split(","))
EXPORT_MODES = tuple(os.environ.get("OP_TESTS_EXPORT_MODES", "dynamic").split(","))



def no_kernel_from_22(op_type: str) -> dict[int, str]:
    """Known failures at opsets 22 and up of a case whose export needs ``op_type``, which ONNX Runtime 1.31 has no
    kernel for at its opset-22 version: the export is refused naming opset 21 (``exporter.lowering.runtime``)."""
    return {opset: f"refused: ONNX Runtime 1.31 has no kernel for {op_type}-22 (exporter.lowering.runtime."
                   "NO_KERNEL_FROM_22); opset 21 exports it" for opset in range(22, MAX_OPSET + 1)}


# ONNX Runtime's CUDA provider refuses what its CPU provider computes (seen on an NVIDIA H200 and an H100 with
# onnxruntime-gpu 1.31.1, 2026-11-27, at every opset that exports the model): a reduction over an empty axis
# without keepdims.
CUDA_EMPTY_REDUCTION = ("ONNX Runtime's CUDA reductions refuse an empty axis without keepdims: 'Can't reduce on dim "
                        "with value of 0 if 'keepdims' is false'; the CPU provider computes the same model right")


@dataclass
class OpCase:
    op: str  # the ATen op under test, without namespace, e.g. "gather" or "max_pool2d"
    inputs: Callable[[int], tuple]  # size variant (0 or 1) -> positional example inputs
    sample: str = ""  # what this sample exercises, e.g. "negative_dim"; part of the test id
    fn: Callable[..., Any] | None = None  # a function of the inputs ...
    module: Callable[[], torch.nn.Module] | None = None  # ... or a module factory
    min_opset: int = 7  # lowest opset that must export and run
    dynamic_min_opset: int | None = None  # lowest opset for the dynamic export, when above min_opset
    rtol: float | None = None  # overrides of the per-dtype tolerance, with a reason
    atol: float | None = None
    tolerance_reason: str = ""
    dynamic: bool = True  # False when dynamic shapes make no sense for this op
    known_failures: dict[int, str] = field(default_factory=dict)  # opset -> reason naming the ONNX/ORT limitation
    # opset -> reason, for failures of the dynamic export alone where the static one passes (a dynamic export that
    # the exporter refuses is ``dynamic_min_opset``'s, not a known failure)
    dynamic_known_failures: dict[int, str] = field(default_factory=dict)
    # opset -> reason naming the gap of ONNX Runtime's CUDA provider, seen on a GPU, where its CPU provider passes
    cuda_known_failures: dict[int, str] = field(default_factory=dict)
    compare: str = "values"  # "values", or "distribution" for random outputs (see the module docstring)
    # Why the dynamic export keeps a count the trace fixes (the number of pieces a split makes of a dynamic dim, equal
    # at both size variants): exported with check_dynamic_axes=False, which the engine otherwise refuses (see
    # exporter/capture/traced_sizes.py); empty for every case the check must pass.
    frozen_by_trace: str = ""

    def known_failures_on(self, provider: str, dynamic: bool) -> dict[int, str]:
        """The expected failures on ``provider`` of the static or dynamic export: ``known_failures``, the dynamic
        export's own too, and on CUDA ``cuda_known_failures`` too."""
        known = {**self.known_failures, **(self.dynamic_known_failures if dynamic else {})}
        return {**known, **self.cuda_known_failures} if provider == "cuda" else known

    def min_opset_for(self, dynamic: bool) -> int:
        """The lowest opset that must export and run, static or dynamic (static exports may bake sizes in)."""
        return max(self.min_opset, self.dynamic_min_opset or 0) if dynamic else self.min_opset

    @property
    def name(self) -> str:
        return f"{self.op}_{self.sample}" if self.sample else self.op

    def build(self) -> torch.nn.Module:
        if self.module is not None:
            return self.module().eval()
        return FunctionModule(self.fn).eval()

    def dynamic_axes(self, names: list[str]) -> dict[str, list[int]]:
        first, second = self.inputs(0), self.inputs(1)
        axes: dict[str, list[int]] = {}
        for name, a, b in zip(names, first, second, strict=True):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim():
                differing = [i for i in range(a.dim()) if a.shape[i] != b.shape[i]]
                if differing:
                    axes[name] = differing
        return axes

    def has_dynamic_variant(self) -> bool:
        return self.dynamic and bool(self.dynamic_axes([f"input_{i}" for i in range(len(self.inputs(0)))]))


class FunctionModule(torch.nn.Module):
    """A module whose forward is ``fn`` of its inputs."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def input_names(count: int) -> list[str]:
    return [f"input_{i}" for i in range(count)]


def _flat_outputs(out: Any) -> list[torch.Tensor]:
    from exporter.capture import flatten_outputs

    return flatten_outputs(out)


def caller_feeds(arguments: tuple, names: list[str], capture: str = "trace") -> dict[str, Any]:
    """A size variant's arguments keyed by the names the case gives them at export (``export_arguments``): ONNX
    Runtime is fed by these names (``conformance.pipeline.run_stage``), not by position, so an export that drops an
    unused argument, or binds one to the wrong input, cannot shift the others. As torch.onnx does, a Python number
    is a 0-d input of a TorchScript capture; torch.export's capture holds it as a constant."""
    return caller_values(arguments, names, numbers=capture != "export")


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


def export_arguments(case: OpCase, dynamic: bool, capture: str = "trace") -> tuple[tuple, list[str], dict | None]:
    """The example inputs (size variant 0), input names and dynamic axes ``case`` is exported with. Call it after
    seeding and building the model, as ``run_case`` does, so the inputs are the same draws."""
    example = case.inputs(0)
    names = input_names(len(example))
    axes = case.dynamic_axes(names) if dynamic else None  # by position among all the arguments
    if capture == "export":  # a torch.export program holds Python numbers as constants: only tensors are inputs
        names = [name for name, x in zip(names, example, strict=True) if isinstance(x, torch.Tensor)]
    return example, names, axes


def run_case(case: OpCase, opset: int, dynamic: bool, provider: str = "cpu", capture: str = "trace") -> dict:
    """Export ``case`` at ``opset`` and compare ONNX Runtime with PyTorch (on both size variants if dynamic): the
    case's results row (``case_row``). ``capture`` "export" captures with torch.export (``dynamo=True``): a model it
    cannot capture is an ``export_error`` at the capture stage with its reason, and a scripted case is skipped
    (torch.export takes an nn.Module). The row's ``capture`` says which capture made it: trace, script or export."""
    import exporter

    torch.manual_seed(0)
    model = case.build()
    example, names, axes = export_arguments(case, dynamic, capture)
    scripted = isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction))
    row = case_row(case, opset, dynamic, provider, "export" if capture == "export" else "script" if scripted else "trace")
    row["dtypes"] = sorted({str(t.dtype).replace("torch.", "") for t in example if isinstance(t, torch.Tensor)})
    if capture == "export" and scripted:
        row.update(status="skipped", stage="capture",
                   reason=f"{type(model).__name__} is a scripted model: torch.export (dynamo=True) takes an nn.Module; "
                          "its TorchScript case covers it")
        return row
    buffer = io.BytesIO()
    exported = export_stage(row, lambda captured: exporter.export_program(
        model, tuple(example), buffer, opset_version=opset, input_names=names, dynamic_axes=axes,
        dynamo=capture == "export", captured=captured, check_dynamic_axes=not case.frozen_by_trace))
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


def case_row(case: OpCase, opset: int, dynamic: bool, provider: str, capture: str) -> dict:
    """The results row of one op case before it runs (the conformance results schema, kind "op"), as op_tests and the
    conformance runner both record it. ``capture``: "trace", "script" or "export"; a torch.export case's id ends in
    '/export' (conformance.schema.case_id)."""
    mode = "dynamic" if dynamic else "static"
    row = empty_row()
    row.update(case_id=case_id("op", case.name, opset, mode, provider, capture_choice(capture)), kind="op",
               source="cases", name=case.name, op=case.op, opset=opset, provider=provider, mode=mode,
               exporter="engine", expected_min_opset=case.min_opset_for(dynamic), capture=capture, comparison="values")
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


def results_path() -> str | None:
    return os.environ.get("OP_TESTS_RESULTS")


def record(row: dict) -> None:
    """Append an op case's row (the conformance results schema) to $OP_TESTS_RESULTS's per-worker part file."""
    path = results_path()
    if path:
        write_row(path, row)


def write_row(path: str, row: dict) -> None:
    """Append ``row`` to this pytest worker's part of ``path`` (the session's end joins the parts)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _writer(f"{path}.{worker}.part").append(row)


@functools.lru_cache(maxsize=4)
def _writer(path: str) -> ResultsWriter:
    return ResultsWriter(path)
