"""The per-operator test harness: one OpCase per op sample, run at an opset, static or dynamic, on a provider.

A case names its op (``name``, used in test ids), builds a model (a function of tensors or a module),
and makes sample inputs for two size variants: variant 0 is exported, variant 1 (different sizes on the
axes that should be dynamic) is fed to the dynamic export as a second check. Axes whose sizes differ between
the variants become the dynamic axes. Below ``min_opset`` the case must raise UnsupportedOperatorError naming
that minimum.
"""

from __future__ import annotations

import functools
import io
import os
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from conformance.compare import compare_arrays
from conformance.results import ResultsWriter
from conformance.schema import case_id, empty_row
from conformance.session import make_session
from conformance.tolerances import tolerance_for

OPSETS = tuple(range(7, 17))

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

    def min_opset_for(self, dynamic: bool) -> int:
        """The lowest opset that must export and run, static or dynamic (static exports may bake sizes in)."""
        return max(self.min_opset, self.dynamic_min_opset or 0) if dynamic else self.min_opset

    @property
    def name(self) -> str:
        return f"{self.op}_{self.sample}" if self.sample else self.op

    def build(self) -> torch.nn.Module:
        if self.module is not None:
            return self.module().eval()
        return _FunctionModule(self.fn).eval()

    def dynamic_axes(self, names: list[str]) -> dict[str, list[int]]:
        first, second = self.inputs(0), self.inputs(1)
        axes: dict[str, list[int]] = {}
        for name, a, b in zip(names, first, second):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim():
                differing = [i for i in range(a.dim()) if a.shape[i] != b.shape[i]]
                if differing:
                    axes[name] = differing
        return axes

    def has_dynamic_variant(self) -> bool:
        return self.dynamic and bool(self.dynamic_axes([f"input_{i}" for i in range(len(self.inputs(0)))]))


class _FunctionModule(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@dataclass
class CaseResult:
    status: str  # pass | mismatch | unsupported | export_error | checker_error | ort_error | skipped
    error: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    export_seconds: float | None = None
    ort_ms: float | None = None
    torch_ms: float | None = None
    node_count: int | None = None
    op_types: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    stage: str = ""


def input_names(count: int) -> list[str]:
    return [f"input_{i}" for i in range(count)]


def _flat_outputs(out: Any) -> list[torch.Tensor]:
    from exporter.capture import flatten_outputs

    return flatten_outputs(out)


def _feeds(session, tensors: list) -> dict[str, np.ndarray]:
    names = [i.name for i in session.get_inputs()]
    arrays = [t.detach().cpu().numpy() for t in tensors if isinstance(t, torch.Tensor)]
    return dict(zip(names, arrays))


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


def run_case(case: OpCase, opset: int, dynamic: bool, provider: str = "cpu") -> CaseResult:
    """Export ``case`` at ``opset`` and compare ONNX Runtime with PyTorch (on both size variants if dynamic)."""
    import exporter
    from exporter.errors import CheckerError, UnsupportedOperatorError

    torch.manual_seed(0)
    model = case.build()
    example = case.inputs(0)
    names = input_names(len(example))
    axes = case.dynamic_axes(names) if dynamic else None
    result = CaseResult(status="pass", dtypes=sorted({str(t.dtype).replace("torch.", "") for t in example if isinstance(t, torch.Tensor)}))
    buffer = io.BytesIO()
    start = time.perf_counter()
    try:
        exported = exporter.export(model, tuple(example), buffer, opset_version=opset, input_names=names, dynamic_axes=axes)
    except UnsupportedOperatorError as error:
        result.status, result.stage, result.error = "unsupported", "convert", str(error)
        return result
    except CheckerError as error:
        result.status, result.stage, result.error = "checker_error", "checker", str(error)
        return result
    except Exception as error:  # the harness records every failure; the test decides
        result.status, result.stage = "export_error", "convert"
        result.error = f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}"
        return result
    result.export_seconds = time.perf_counter() - start
    result.node_count = len(exported.model.graph.node)
    result.op_types = sorted({n.op_type for n in exported.model.graph.node})
    try:
        session = make_session(buffer.getvalue(), provider)
    except Exception as error:
        result.status, result.stage, result.error = "ort_error", "ort_load", f"{type(error).__name__}: {error}"
        return result
    variants = [0, 1] if dynamic else [0]
    for variant in variants:
        inputs = case.inputs(variant)
        with torch.no_grad():
            t0 = time.perf_counter()
            expected = _flat_outputs(model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]))
            result.torch_ms = (time.perf_counter() - t0) * 1e3
        try:
            t0 = time.perf_counter()
            actual = session.run(None, _feeds(session, list(inputs)))
            result.ort_ms = (time.perf_counter() - t0) * 1e3
        except Exception as error:
            result.status, result.stage, result.error = "ort_error", "ort_run", f"{type(error).__name__}: {error}"
            return result
        verdict = compare_arrays([e.detach().cpu().numpy() for e in expected], actual, tolerance(case, _output_dtype(expected)))
        result.max_abs_error = max(result.max_abs_error or 0.0, verdict.max_abs)
        result.max_rel_error = max(result.max_rel_error or 0.0, verdict.max_rel)
        result.rtol, result.atol = verdict.rtol, verdict.atol
        if not verdict.ok:
            result.status, result.stage = "mismatch", "accuracy"
            result.error = f"size variant {variant}: {verdict.message}"
            return result
    return result


def results_path() -> str | None:
    return os.environ.get("OP_TESTS_RESULTS")


def record(case: OpCase, opset: int, dynamic: bool, provider: str, result: CaseResult) -> None:
    """Append the case's row (the conformance results schema) to $OP_TESTS_RESULTS's per-worker part file."""
    path = results_path()
    if not path:
        return
    write_row(path, case_row(case, opset, dynamic, provider, result))


def case_row(case: OpCase, opset: int, dynamic: bool, provider: str, result: CaseResult) -> dict:
    mode = "dynamic" if dynamic else "static"
    row = empty_row()
    row.update(case_id=case_id("op", case.name, opset, mode, provider), kind="op", source="cases", name=case.name,
               op=case.op, opset=opset, provider=provider, mode=mode, exporter="engine",
               expected_min_opset=case.min_opset_for(dynamic))
    row.update(result.__dict__)
    return row


def write_row(path: str, row: dict) -> None:
    """Append ``row`` to this pytest worker's part of ``path`` (the session's end joins the parts)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _writer(f"{path}.{worker}.part").append(row)


@functools.lru_cache(maxsize=4)
def _writer(path: str) -> ResultsWriter:
    return ResultsWriter(path)
