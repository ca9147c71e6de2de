"""What an export leaves in ``artifacts_dir`` when asked, as torch.onnx's ``report``, ``profile``,
``dump_exported_program`` and ``verify`` options do: a markdown report of the export (written on failure too), a
profile of it (``cProfile``), the captured program (torch.export's ``.pt2``, or a TorchScript graph's text), and the
check of the model's outputs against PyTorch's on the example arguments.

File names follow torch.onnx's: ``onnx_export_<timestamp>_<status>.md`` and ``onnx_export_<timestamp>.pt2``.
"""

from __future__ import annotations

import collections
import contextlib
import cProfile
import datetime
import io
import pstats
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from exporter.frontends.base import Captured, flatten_outputs, split_args
from exporter.numerics import compare_arrays
from exporter.tolerances import DEFAULT_ATOL, DEFAULT_RTOL, Tolerance

# How many functions of the profile the report lists (by cumulative time).
PROFILE_LINES = 40
_TOLERANCE = Tolerance(DEFAULT_RTOL, DEFAULT_ATOL, "the model zoo's default tolerance (exporter.tolerances)")


@dataclass
class OutputCheck:
    """One output of the model on the example arguments: ONNX Runtime's against PyTorch's."""

    name: str
    ok: bool
    max_abs: float
    max_rel: float
    message: str = ""


class Artifacts:
    """The artifacts one export was asked for, and the report it writes."""

    def __init__(self, directory: Any, *, report: bool, profile: bool, dump: bool, verbose: bool | None) -> None:
        self.directory = Path(directory)
        self.report, self.profile, self.dump = report, profile, dump
        self.verbose = verbose
        self.timestamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S-%f")
        self.written: list[Path] = []
        self._profiler: cProfile.Profile | None = None
        if report or profile or dump:
            self.directory.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def profiling(self):
        if not self.profile:
            yield
            return
        self._profiler = cProfile.Profile()
        self._profiler.enable()
        try:
            yield
        finally:
            self._profiler.disable()

    def profile_text(self) -> str | None:
        if self._profiler is None:
            return None
        out = io.StringIO()
        pstats.Stats(self._profiler, stream=out).sort_stats("cumulative").print_stats(PROFILE_LINES)
        return out.getvalue()

    def dump_capture(self, captured: Captured) -> None:
        """Save the captured program: torch.export's with ``torch.export.save`` (``.pt2``), a TorchScript graph as
        text (``.txt``)."""
        if not self.dump:
            return
        self.written.append(captured.front_end.dump(captured, self.directory, f"onnx_export_{self.timestamp}"))

    def finish(self, model: Any, program: Any = None, error: BaseException | None = None,
               checks: list[OutputCheck] | None = None) -> None:
        """Write the report (``report``), or print the profile where no report takes it (as torch.onnx does)."""
        profile = self.profile_text()
        if not self.report:
            if profile is not None:
                print(profile)
            return
        status = _status(error, checks)
        path = self.directory / f"onnx_export_{self.timestamp}_{status}.md"
        path.write_text(_report_text(model, program, error, checks, profile, status))
        self.written.append(path)
        if self.verbose is not False:
            print(f"exporter: the export report is in {path}")


def _status(error: BaseException | None, checks: list[OutputCheck] | None) -> str:
    if error is not None:
        return type(error).__name__
    if checks is not None and not all(check.ok for check in checks):
        return "accuracy"
    return "success"


def _report_text(model: Any, program: Any, error: BaseException | None, checks: list[OutputCheck] | None,
                 profile: str | None, status: str) -> str:
    lines = [f"# ONNX export report: {type(model).__name__}", "", f"Status: **{status}**", ""]
    if error is not None:
        lines += ["## Error", "", "```", *traceback.format_exception(error), "```", ""]
    if program is not None:
        lines += _program_lines(program)
    if checks is not None:
        lines += ["## Verification (ONNX Runtime CPU against PyTorch, on the example arguments)", "",
                  f"Tolerance: rtol {DEFAULT_RTOL}, atol {DEFAULT_ATOL}.", "",
                  "| output | ok | max abs error | max rel error | note |", "|---|---|---:|---:|---|"]
        lines += [f"| {c.name} | {'yes' if c.ok else 'NO'} | {c.max_abs:.3g} | {c.max_rel:.3g} | {c.message} |"
                  for c in checks]
        lines.append("")
    if profile is not None:
        lines += ["## Profile (cProfile, by cumulative time)", "", "```", profile, "```", ""]
    return "\n".join(lines)


def _program_lines(program: Any) -> list[str]:
    proto = program.model_proto
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in proto.opset_import)
    capture = program.capture.capture if program.capture is not None else "?"
    ops = collections.Counter(node.op_type if not node.domain else f"{node.domain}::{node.op_type}"
                              for node in proto.graph.node)
    lines = ["## Model", "", f"- capture: {capture} (strategy: {program._capture_strategy})",
             f"- opsets: {opsets}; IR version {proto.ir_version}",
             f"- inputs: {', '.join(i.name for i in proto.graph.input)}",
             f"- outputs: {', '.join(o.name for o in proto.graph.output)}",
             f"- nodes: {len(proto.graph.node)}, initializers: {len(proto.graph.initializer)}",
             f"- ONNX Runtime workarounds: {', '.join(program.workarounds) or 'none'}", "",
             "## ONNX ops", "", "| op | count |", "|---|---:|"]
    lines += [f"| {op} | {count} |" for op, count in sorted(ops.items())]
    lines += ["", "## Export stages (seconds)", "", "| stage | seconds |", "|---|---:|"]
    lines += [f"| {stage} | {seconds:.3f} |" for stage, seconds in program.stage_seconds.items()]
    return lines + [""]


def check_outputs(program: Any, model: Any, args: Any) -> list[OutputCheck]:
    """The model's outputs on ``args`` (positional arguments and a trailing dict of keyword arguments), computed by
    PyTorch and by ``program`` on ONNX Runtime, compared at the zoo's default tolerance. A mismatch is warned of (as
    torch.onnx's ``verify`` logs it) and recorded; an output ONNX Runtime cannot compute is an error."""
    positional, kwargs = split_args(args)
    with torch.no_grad():
        expected = [t.detach() for t in flatten_outputs(model(*positional, **kwargs))]
    actual = program(*positional, **kwargs)
    program.release()
    checks = []
    for name, want, got in zip(program.output_names, expected, actual, strict=False):
        verdict = compare_arrays([_array(want)], [_array(got)], _TOLERANCE.at)
        checks.append(OutputCheck(name, verdict.ok, verdict.max_abs, verdict.max_rel, verdict.message))
        if not verdict.ok:
            warnings.warn(f"verify: output {name!r} differs from PyTorch's: {verdict.message}", UserWarning,
                          stacklevel=3)
    if len(expected) != len(actual):
        checks.append(OutputCheck("(count)", False, float("inf"), float("inf"),
                                  f"PyTorch returned {len(expected)} tensors, the ONNX model {len(actual)}"))
        warnings.warn(f"verify: {checks[-1].message}", UserWarning, stacklevel=3)
    return checks


def _array(tensor: torch.Tensor) -> np.ndarray:
    """numpy has no bfloat16 or float8: those compare as float32 (both sides alike)."""
    tensor = tensor.detach().cpu()
    return (tensor.float() if tensor.dtype.is_floating_point and tensor.element_size() < 2 or
            tensor.dtype == torch.bfloat16 else tensor).numpy()
