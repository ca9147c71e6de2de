"""Checking one OpInfo sample: capture once, then export at each opset (static and dynamic), run ONNX Runtime,
compare with PyTorch, and let the reference evaluator rule on any disagreement. One results row per
(opset, mode), in the conformance results schema.
"""

from __future__ import annotations

import io
import re
import time
import traceback
from dataclasses import dataclass, field

import numpy as np
import torch

from conformance.arbitration import Disagreement, ReferenceEvaluatorRun, arbitrate
from conformance.feeds import feeds_for, session_inputs
from conformance.op_runner import caller_feeds
from conformance.pipeline import compare_stage, export_stage, run_stage, session_stage
from conformance.prepared import prepared_capture
from conformance.schema import case_id, empty_row, truncated
from exporter import Capture
from exporter.numerics import compare_arrays
from exporter.registry import MAX_OPSET, MIN_OPSET
from exporter.tolerances import tolerance_for
from op_tests.opinfo.samples import OpSample, dtype_name, dynamic_partner
from opcases import input_names

OPSETS = tuple(range(MIN_OPSET, MAX_OPSET + 1))
MODES = ("static", "dynamic")
# Tensor kinds ONNX cannot carry: such a sample is not capturable as an ONNX model, whatever the exporter does.
_NO_ONNX_TYPE = (torch.complex32, torch.complex64, torch.complex128, torch.bfloat16)
# OpInfos whose outputs PyTorch leaves uninitialized: their values mean nothing, only shapes and dtypes do.
_UNINITIALIZED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}
_RANDOM = "random op: PyTorch's output changes from run to run"
# OpInfos returning positions along dim of selected entries: (where dim sits among the sample's args, the output
# holding the selected values or None, the output holding the positions).
_SELECTIONS = {"topk": (1, 0, 1), "kthvalue": (1, 0, 1), "sort": (0, 0, 1), "argsort": (0, None, 0)}


@dataclass
class Prepared:
    """Everything about a sample that does not depend on the opset: its module, inputs and PyTorch's outputs."""

    sample: OpSample
    model: torch.nn.Module | None = None
    args: tuple = ()
    expected: list[np.ndarray] = field(default_factory=list)
    partner: OpSample | None = None
    partner_args: tuple = ()
    partner_expected: list[np.ndarray] = field(default_factory=list)
    dynamic_axes: dict[str, list[int]] = field(default_factory=dict)
    not_capturable: str = ""  # why the sample cannot become an ONNX model at all (not the exporter's fault)
    values_unspecified: str = ""  # why PyTorch's output values cannot be compared (random op, uninitialized memory)
    harness_error: str = ""  # the harness itself failed on this sample (a bug of ours: rows say crash)
    captures: dict = field(default_factory=dict)


def _outputs(model: torch.nn.Module, args: tuple, seed: int = 0) -> list[np.ndarray]:
    from exporter.frontends.base import flatten_outputs

    torch.manual_seed(seed)
    with torch.no_grad():
        result = model(*[a.clone() for a in args])  # clones: in-place ops must not alter the sample
    return [t.detach().numpy() for t in flatten_outputs(result)]


def prepare(sample: OpSample, group: list[OpSample]) -> Prepared:
    """Build the sample's module and reference outputs, or say why it cannot be captured at all. Never raises: a
    harness failure is kept and reported by every row of the sample."""
    try:
        return _prepare(sample, group)
    except Exception as error:
        return Prepared(sample, harness_error=f"preparing the sample failed: {type(error).__name__}: {error}\n"
                                              f"{traceback.format_exc(limit=-4)}")


def _prepare(sample: OpSample, group: list[OpSample]) -> Prepared:
    prepared = Prepared(sample)
    try:
        tensors = sample.tensors()
    except Exception as error:
        prepared.not_capturable = f"the sample's inputs cannot be flattened: {type(error).__name__}: {error}"
        return prepared
    prepared.not_capturable = _untypeable(tensors)
    if prepared.not_capturable:
        return prepared
    prepared.model, prepared.args = sample.module().eval(), tuple(tensors)
    try:
        prepared.expected = _outputs(prepared.model, prepared.args)
        if not _same(prepared.expected, _outputs(prepared.model, prepared.args, seed=1)):
            prepared.values_unspecified = _RANDOM
    except Exception as error:
        prepared.not_capturable = f"PyTorch cannot run the sample or its output is not tensors: {_first_line(error)}"
        return prepared
    if not prepared.expected:
        prepared.not_capturable = "the op returns no tensor (nothing to export)"
        return prepared
    if any(output.dtype.kind == "c" for output in prepared.expected):
        prepared.not_capturable = "the op returns a complex tensor: ONNX's operators have no complex arithmetic"
        return prepared
    try:
        traced = torch.jit.trace(prepared.model, prepared.args, check_trace=False)
    except Exception as error:
        prepared.not_capturable = f"torch.jit.trace cannot trace the call: {_first_line(error)}"
        return prepared
    # OpInfos of random ops seed the generator inside the call, so two runs agree; the graph still says random.
    if any(node.isNondeterministic() for node in traced.graph.nodes()):
        prepared.values_unspecified = _RANDOM
    if prepared.sample.key in _UNINITIALIZED:
        prepared.values_unspecified = f"{prepared.sample.key} leaves its values uninitialized"
    _prepare_dynamic(prepared, group)
    return prepared


def _prepare_dynamic(prepared: Prepared, group: list[OpSample]) -> None:
    found = dynamic_partner(prepared.sample, group)
    if found is None:
        return
    partner, axes = found
    try:
        args = tuple(partner.tensors())
        expected = _outputs(prepared.model, args)
    except Exception:
        return  # the partner does not run through this sample's module: no dynamic check for this sample
    prepared.partner, prepared.partner_args, prepared.partner_expected = partner, args, expected
    prepared.dynamic_axes = {f"input_{position}": differing for position, differing in axes.items()}


def _untypeable(tensors: list[torch.Tensor]) -> str:
    """Why ONNX cannot carry one of the sample's tensors ("" when it can; a sample of no tensors, such as a
    factory call, exports as a graph without inputs)."""
    for tensor in tensors:
        if tensor.layout != torch.strided:
            return f"a {tensor.layout} tensor argument: ONNX tensors are dense"
        if tensor.dtype in _NO_ONNX_TYPE:
            return f"a {dtype_name(tensor.dtype)} tensor argument: no ONNX Runtime CPU type for it"
    return ""


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
                                    for x, y in zip(a, b, strict=True))


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else ''}"


def modes_of(prepared: Prepared) -> tuple[str, ...]:
    """Static always; dynamic when another sample of the same op can feed this one's export."""
    return MODES if prepared.partner is not None else MODES[:1]


def base_row(prepared: Prepared, opset: int, mode: str, capture: Capture = Capture.TRACE) -> dict:
    sample = prepared.sample
    row = empty_row()
    row.update(case_id=case_id("op", opinfo_case_name(sample.name, capture), opset, mode, "cpu"), kind="op",
               source="opinfo", capture=str(capture),
               name=sample.name, op=sample.opinfo.name, variant=sample.opinfo.variant_test_name,
               sample=sample.index, dtype=dtype_name(sample.dtype), dtypes=[dtype_name(sample.dtype)],
               opset=opset, provider="cpu", mode=mode, exporter="engine", description=sample.describe(),
               rerun=f"python -m op_tests.opinfo run --ops {sample.key} --dtypes {dtype_name(sample.dtype)} "
                     f"--samples {sample.index} --opsets {opset} --capture {capture} --out results/opinfo.rerun.jsonl")
    if mode == "dynamic" and prepared.partner is not None:
        row["comparison"] = f"dynamic axes {prepared.dynamic_axes}; checked on sample {prepared.partner.index} too"
    return row


def opinfo_case_name(name: str, capture: Capture) -> str:
    """The case name in case ids: the capture's apart from the TorchScript one, so both live in one results file."""
    return f"opinfo/{name}" if capture == Capture.TRACE else f"opinfo-{capture}/{name}"


def check(prepared: Prepared, opset: int, mode: str, repro_root: str | None = None,
          capture: Capture = Capture.TRACE) -> dict:
    """The results row of ``prepared`` exported at ``opset`` in ``mode``, captured by tracing (``trace``) or by
    torch.export (``export``: ``dynamo=True``)."""
    row = base_row(prepared, opset, mode, capture)
    started = time.perf_counter()
    if prepared.harness_error:
        row.update(status="crash", stage="setup", error=truncated(prepared.harness_error))
    elif prepared.not_capturable:
        row.update(status="not_capturable", stage="capture", reason=prepared.not_capturable)
    else:
        try:
            _check(prepared, opset, mode, row, repro_root, capture)
        except Exception as error:  # a harness bug still yields an honest row
            row.update(status="crash", error=truncated(f"harness error: {type(error).__name__}: {error}\n"
                                                       f"{traceback.format_exc()}"))
    row["duration_s"] = round(time.perf_counter() - started, 4)
    return row


def _check(prepared: Prepared, opset: int, mode: str, row: dict, repro_root: str | None, capture: Capture) -> None:
    import exporter

    names = input_names(len(prepared.args))
    axes = prepared.dynamic_axes if mode == "dynamic" else None
    buffer = io.BytesIO()
    dynamo = capture == Capture.EXPORT
    traced = (lambda: prepared_capture(prepared.captures, prepared.model, prepared.args)) if not dynamo else None
    exported = export_stage(
        row,
        lambda captured: exporter.export_program(prepared.model, prepared.args, buffer, opset_version=opset, input_names=names,
                                         dynamic_axes=axes, dynamo=dynamo, captured=captured),
        capture=traced, explain=_explain_unsupported)
    if exported is None:
        return
    session = session_stage(row, buffer.getvalue(), "cpu")
    if session is None:
        return
    checks = [(prepared.args, prepared.expected)]
    if mode == "dynamic":
        checks.append((prepared.partner_args, prepared.partner_expected))
    _run_and_compare(prepared, exported.model_proto, session, checks, row, repro_root, names, capture)


def _explain_unsupported(row: dict, error: Exception) -> None:
    """An op with no symbolic at any opset is ``no_symbolic``; a refusal at this opset names the lowest that works."""
    from exporter.errors import UnsupportedOperatorError

    if not isinstance(error, UnsupportedOperatorError):
        return
    if error.min_opset is None and error.reason is None:
        row.update(status="no_symbolic", reason=f"no symbolic for {error.op_name}")
        return
    needs = re.search(r"needs opset >= (\d+)", str(error))
    lowest = error.min_opset if error.min_opset is not None and error.min_opset > row["opset"] else None
    row["lowest_opset"] = int(needs.group(1)) if needs else lowest


def _run_and_compare(prepared: Prepared, model, session, checks: list, row: dict, repro_root: str | None,
                     names: list[str], capture: str) -> None:
    tolerance = tolerance_for(row["dtype"], prepared.sample.opinfo.name)
    feeds_list, expected_list, actual_list = [], [], []
    for args, expected in checks:
        values = caller_feeds(args, names, capture)  # fed by the names the export was given, not by position
        actual = run_stage(row, session, values)
        if actual is None:
            return
        feeds_list.append(feeds_for(session_inputs(session), values))
        expected_list.append(expected), actual_list.append(actual)
    verdicts = [compare_arrays(e, a, tolerance.at) for e, a in zip(expected_list, actual_list, strict=True)]
    verdict = compare_stage(row, [("", v) for v in verdicts])
    row["tolerance_reason"] = tolerance.reason
    if prepared.values_unspecified:
        _judge_layout_only(row, prepared.values_unspecified, expected_list, actual_list)
    elif not verdict.ok and _only_ties_differ(prepared, checks, actual_list, tolerance.at):
        row.update(status="pass", error="", reason="positions differ only between tied values: PyTorch may return any "
                   "of them, ONNX returns the first; each returned position holds the selected value")
    elif not verdict.ok and _pytorch_float16_less_precise(prepared, checks, actual_list, tolerance.at):
        row.update(status="pass", error="", reason="PyTorch's float16 kernel is the less precise one: ONNX Runtime "
                   "agrees with PyTorch computing in float64 (rounded to float16) within tolerance, PyTorch's float16 "
                   "result does not")
    elif not verdict.ok:
        ruling = arbitrate(Disagreement(expected_list, actual_list, tolerance.at, verdict.atol),
                           ReferenceEvaluatorRun(model, feeds_list, repro_root))
        row.update(status=ruling.status, arbiter=ruling.text, repro=ruling.repro)


def _only_ties_differ(prepared: Prepared, checks: list, actual_list: list, at) -> bool:
    """For topk/kthvalue/sort/argsort (not stable sorts, whose order of ties is defined): the values agree and
    every position ONNX returns holds the value PyTorch selected there (on ties PyTorch may return any of the equal
    values' positions, ONNX returns the first)."""
    selection = _SELECTIONS.get(prepared.sample.key)
    args, kwargs = prepared.sample.sample.args, prepared.sample.sample.kwargs
    if selection is None or kwargs.get("stable"):
        return False
    dim_position, values_at, positions_at = selection
    dim = kwargs.get("dim", args[dim_position] if len(args) > dim_position else -1)
    for (inputs, expected), actual in zip(checks, actual_list, strict=True):
        source = inputs[0]
        if source.dim() == 0:
            return False
        if values_at is not None and not compare_arrays(expected[values_at:values_at + 1],
                                                        actual[values_at:values_at + 1], at).ok:
            return False
        positions = torch.from_numpy(np.asarray(actual[positions_at]))
        wanted = torch.from_numpy(np.asarray(expected[positions_at]))
        if positions.dim() < source.dim():  # keepdim=False
            positions, wanted = positions.unsqueeze(dim), wanted.unsqueeze(dim)
        if not torch.equal(torch.take_along_dim(source, positions, dim), torch.take_along_dim(source, wanted, dim)):
            return False
    return True


def _pytorch_float16_less_precise(prepared: Prepared, checks: list, actual_list: list, at) -> bool:
    """For float16: ONNX Runtime matches the op computed in float64 and rounded to float16, and PyTorch's own float16
    result does not (PyTorch's half kernels may round intermediates, e.g. grid_sample's sampling positions)."""
    if prepared.sample.dtype != torch.float16:
        return False
    for (inputs, expected), actual in zip(checks, actual_list, strict=True):
        try:
            exact = _outputs(prepared.model, tuple(a.double() if a.dtype == torch.float16 else a for a in inputs))
        except Exception:
            return False
        exact = [e.astype(np.float16) if e.dtype == np.float64 else e for e in exact]
        if not compare_arrays(exact, actual, at).ok or compare_arrays(exact, expected, at).ok:
            return False
    return True


def _judge_layout_only(row: dict, why: str, expected_list: list, actual_list: list) -> None:
    """Values that mean nothing (``why``: a random op, uninitialized memory): only output count, shapes and dtypes
    can be compared."""
    for expected, actual in zip(expected_list, actual_list, strict=True):
        layout = [(e.shape, e.dtype) for e in expected]
        if layout != [(np.asarray(a).shape, np.asarray(a).dtype) for a in actual]:
            row.update(status="mismatch", error=f"{why}: output shapes/dtypes differ from PyTorch's {layout}")
            return
    row.update(status="inconclusive", error="",
               reason=f"{why}, so only the outputs' count, shapes and dtypes were compared (they agree)")


