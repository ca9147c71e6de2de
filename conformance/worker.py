"""Running one case inside a worker process: build, reference, export, check, ONNX Runtime, compare.

A worker keeps the current model (built, calibrated, with its reference outputs and its TorchScript capture)
between cases, so the opsets and modes of one model share one build and one trace. Capturing does not
depend on the opset or on dynamic axes, so reusing it is sound; each export gets a fresh copy of the graph.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

import model_zoo
from conformance import op_cases, repro
from conformance.compare import compare_detections, reference_problem
from conformance.schema import EXPORT, SCRIPT, TRACE, empty_row
from conformance.session import fell_back, gpu_name
from exporter.numerics import Verdict, arbitrate, compare_arrays
from exporter.ort_session import make_session, ort_level

PERTURBED_SEED = 1
EXPORT_SEED = 0
_ERROR_LIMIT = 4000


def configure_process(threads: int = 1) -> None:
    """One thread per worker (the pool is the parallelism) and no TF32 anywhere, so CUDA compares like CPU."""
    torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = False
    # set_flags rather than the attribute: torch.testing's OpInfo database (imported by the op suite in the same
    # test process) freezes cuDNN's attributes, and set_flags is the setter that stays allowed.
    torch.backends.cudnn.set_flags(_allow_tf32=False)


@dataclass
class Prepared:
    """Everything about one zoo entry that does not depend on the opset, mode or provider."""

    entry: model_zoo.ZooEntry
    model: Any = None
    export_args: tuple | None = None
    checks: dict[str, tuple] = field(default_factory=dict)  # label -> positional args
    references: dict[tuple[str, str], Any] = field(default_factory=dict)  # (device, label) -> structured output
    torch_ms: dict[str, float] = field(default_factory=dict)
    problem: str = ""
    reference_checked: bool = False
    setup_error: str = ""
    captures: dict = field(default_factory=dict)
    device_models: dict[str, Any] = field(default_factory=dict)


def _clone(obj: Any) -> Any:
    """Deep copy of nested inputs: some models (in-place assignment) write into their arguments."""
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_clone(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def _to(obj: Any, device: str) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


def _as_float64(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_as_float64(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _as_float64(v) for k, v in obj.items()}
    return obj


def flat_tensors(obj: Any) -> list[torch.Tensor]:
    from exporter.capture import flatten

    leaves, _ = flatten(obj)
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def flat_outputs(obj: Any) -> list[np.ndarray]:
    from exporter.capture import flatten_outputs

    return [t.detach().cpu().numpy() for t in flatten_outputs(obj)]


class WorkerState:
    """The worker's memory of the current model (one at a time, to bound memory)."""

    def __init__(self, scratch: str):
        self.scratch = scratch
        self.current: Prepared | None = None

    def prepare(self, name: str) -> Prepared:
        if self.current is not None and self.current.entry.name == name:
            return self.current
        self.current = None
        gc.collect()
        entry = model_zoo.get(name)
        prepared = Prepared(entry)
        try:
            prepared.model = model_zoo.prepare_model(entry)
            prepared.export_args = _clone(entry.inputs(0, EXPORT_SEED))
            prepared.checks["input 0"] = entry.inputs(0, EXPORT_SEED)
            if entry.dynamic_axes:
                prepared.checks["dynamic input 1"] = entry.inputs(1, EXPORT_SEED)
            for index, make in enumerate(entry.extra_checks):
                prepared.checks[f"extra input {index}"] = make()
            prepared.checks["perturbed"] = entry.inputs(0, PERTURBED_SEED)
        except Exception as error:
            prepared.setup_error = f"building the model or its inputs failed: {type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"
        self.current = prepared
        return prepared

    def reference(self, prepared: Prepared, device: str, label: str) -> Any:
        """PyTorch's output for the check ``label`` on ``device`` (computed once)."""
        key = (device, label)
        if key not in prepared.references:
            model = prepared.model if device == "cpu" else self._device_model(prepared, device)
            args = _to(_clone(prepared.checks[label]), device)
            with torch.no_grad():
                start = time.perf_counter()
                prepared.references[key] = model(*args)
                if device == "cuda":
                    torch.cuda.synchronize()
                prepared.torch_ms[key[0] + label] = (time.perf_counter() - start) * 1e3
        return prepared.references[key]

    def float64_reference(self, prepared: Prepared, device: str, label: str) -> Any:
        """PyTorch's output for ``label`` with the model and its float inputs in float64 (computed once)."""
        key = (device + ":float64", label)
        if key not in prepared.references:
            if key[0] not in prepared.device_models:
                prepared.device_models[key[0]] = copy.deepcopy(prepared.model).to(device=device, dtype=torch.float64).eval()
            model = prepared.device_models[key[0]]
            args = _to(_as_float64(_clone(prepared.checks[label])), device)
            with torch.no_grad():
                prepared.references[key] = model(*args)
        return prepared.references[key]

    @staticmethod
    def _device_model(prepared: Prepared, device: str):
        if device not in prepared.device_models:
            prepared.device_models[device] = copy.deepcopy(prepared.model).to(device).eval()
        return prepared.device_models[device]


def prepared_capture(cache: dict, model, args, dynamo: bool = False, dynamic_axes=None, input_names=None):
    """One capture per (model, args) within this worker, reused by every export of them: TorchScript's, or with
    ``dynamo`` torch.export's, one per set of ``dynamic_axes`` (its program fixes which axes are dynamic). A capture
    that failed fails again at once, with the same error, for every export that would reuse it (torch.export is not
    asked again at each opset)."""
    import exporter

    key = (id(model), id(args), dynamo, repr(sorted((dynamic_axes or {}).items())) if dynamo else None)
    if key not in cache:
        try:
            cache[key] = exporter.prepare_capture(model, args, dynamo=dynamo, dynamic_axes=dynamic_axes,
                                                  input_names=input_names) if dynamo else exporter.prepare_capture(model, args)
        except Exception as error:
            cache[key] = error
    if isinstance(cache[key], Exception):
        raise cache[key]
    return cache[key]


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


def _truncate(text: str) -> str:
    return text if len(text) <= _ERROR_LIMIT else text[: _ERROR_LIMIT // 2] + "\n...\n" + text[-_ERROR_LIMIT // 2 :]


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


NO_GPU = "no CUDA device on this machine (torch.cuda.is_available() is False)"


@functools.lru_cache(maxsize=1)
def cuda_environment() -> tuple[str, str]:
    """(status, reason) for CUDA cases on this machine: ("", "") when they can run; ("skipped", why) without a
    GPU; ("env_error", why) when PyTorch sees a GPU but ONNX Runtime cannot use it (no CUDAExecutionProvider in
    this build, or a provider that fails to start and falls back to CPU: missing or mismatched CUDA/cuDNN
    libraries). Checked once per worker with a one-node probe model, so the cause shows before any export."""
    import onnxruntime as ort

    if not torch.cuda.is_available():
        return "skipped", NO_GPU
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return "env_error", (f"PyTorch sees a GPU but this ONNX Runtime ({ort.__version__}) has no CUDAExecutionProvider "
                             f"(providers: {ort.get_available_providers()}); is the CPU-only onnxruntime package "
                             "installed over onnxruntime-gpu?")
    try:
        with _captured_stderr() as logged:
            providers = make_session(_probe_model(), "cuda").get_providers()
    except Exception as error:
        return "env_error", f"PyTorch sees a GPU but ONNX Runtime cannot create a CUDA session: {type(error).__name__}: {error}"
    if providers[0] != "CUDAExecutionProvider":
        return "env_error", ("PyTorch sees a GPU but ONNX Runtime could not start CUDAExecutionProvider and fell back to "
                             f"{providers}: {_last_lines(''.join(logged))}")
    return "", ""


def _probe_model() -> bytes:
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "cuda_probe",
                              [value("x", TensorProto.FLOAT, [1])], [value("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()


@contextlib.contextmanager
def _captured_stderr():
    """Collect what the process writes to stderr (file descriptor 2) into the yielded list, as one text on exit:
    ONNX Runtime reports why a provider failed there, not as an exception."""
    captured: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            captured.append(log.read())


def _last_lines(text: str, count: int = 3) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in text.splitlines()]
    return " | ".join([line for line in lines if line][-count:]) or "ONNX Runtime logged no reason"


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
        row.update(status="crash", error=_truncate(f"harness error: {type(error).__name__}: {error}\n{traceback.format_exc()}"))
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
        row.update(status="export_error", stage="setup", error=_truncate(prepared.setup_error),
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
        row.update(status="export_error", stage="setup", error=_truncate(prepared.setup_error),
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
                   error=_truncate(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=6)}"))
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
        row.update(status="export_error", stage="capture", error=_truncate(str(error)),
                   reason=("torch.export could not capture the model (dynamo=True): nothing was converted" if dynamo
                           else "TorchScript could not capture the model: nothing was converted"))
        return
    except UnsupportedOperatorError as error:
        row.update(status="unsupported", stage="convert", error=_truncate(str(error)), reason=_unsupported_reason(entry, opset))
        return
    except CheckerError as error:
        row.update(status="checker_error", stage="checker", error=_truncate(str(error)))
        return
    except Exception as error:
        row.update(status="export_error", stage=row["stage"], error=_truncate(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=-6)}"))
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
        row.update(status="ort_error", error=_truncate(f"{type(error).__name__}: {error}"))
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
        feeds = {name: t.detach().cpu().numpy() for name, t in zip(names, inputs)}
        row["stage"] = "ort_run"
        try:
            t0 = time.perf_counter()
            actual = session.run(None, feeds)
            if label == "input 0":
                row["ort_ms"] = round((time.perf_counter() - t0) * 1e3, 3)
        except Exception as error:
            row.update(status="ort_error", error=_truncate(f"{label}: {type(error).__name__}: {error}"))
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
        _judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, tied, workdir)
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
        _judge_before_selection(prepared, row, artifacts, opset, dynamic_axes, [label for label, _, _ in failing],
                                workdir, mismatch=True)
    elif row["status"] in LOCALIZED and judged and not row.get("selection"):
        result = _localize(prepared, row, artifacts, opset, dynamic_axes, failing_label or "input 0", workdir)
        if row["status"] == "mismatch" and _rounding_only(entry, failing):
            _judge_rounding_growth(prepared, row, opset, dynamic_axes, failing, result)


def _rounding_only(entry, failing: list) -> bool:
    """Whether every failing check is a float tolerance failure (not a shape, dtype, count or NaN difference) that
    rounding grown along the graph can explain: within ``ARBITER_AGREEMENT`` of its output's scale for float
    models (a chaotic or wrong output cannot be); of any size for a quantized model, where each layer may land a
    step of its own output grid apart and the steps grow layer by layer (the node-by-node judgment bounds every
    quantized value to one step on PyTorch's own inputs)."""
    from exporter.numerics import ARBITER_AGREEMENT, scale_of

    if entry.comparison == "detection" or not failing:
        return False
    return all("max abs error" in verdict.message
               and (entry.comparison == "quantized" or verdict.max_abs <= ARBITER_AGREEMENT * scale_of(expected))
               for _, verdict, expected in failing)


def _judge_rounding_growth(prepared: Prepared, row: dict, opset: int, dynamic_axes, failing: list, first) -> None:
    """A float mismatch that float64 arbitration did not settle, re-judged node by node: ``exporter.verify``
    compares every intermediate value with PyTorch's, and every value out of the per-operator tolerance gets a
    local check (its nodes fed PyTorch's own inputs). When, on every failing check, the capture reproduces the
    model and no node diverges on its own inputs (all local checks run, none failing), the exported graph computes
    PyTorch's function node by node and the outputs differ only by float32 rounding grown along the graph: the
    row passes, saying so. Otherwise it stays a mismatch, localized."""
    import exporter

    entry = prepared.entry
    evidence = []
    for label, _, _ in failing:
        result = first if label == failing[0][0] else None
        if result is None:
            try:
                result = exporter.verify(prepared.model, prepared.export_args, opset, check_args=prepared.checks[label],
                                         output_tolerance=entry.tolerance, max_local_checks=LOCAL_CHECKS,
                                         input_names=entry.input_names, output_names=entry.output_names,
                                         dynamic_axes=dynamic_axes,
                                         captured=prepared_capture(prepared.captures, prepared.model, prepared.export_args))
            except Exception:
                return
        if result is None or not result.capture.ok or result.divergence is not None or not result.localized:
            return
        growth = ""
        if result.first_out_of_tolerance is not None:
            growth = f", the first out of tolerance {result.first_out_of_tolerance.value} ({result.first_out_of_tolerance.origin})"
        evidence.append(f"{label}: {result.compared} intermediate values compared, the {result.local_checks} out of "
                        f"per-operator tolerance in the full run each agree when computed from PyTorch's own inputs"
                        f"{' (' + str(len(result.float64_arbitrated)) + ' by float64 arbitration)' if result.float64_arbitrated else ''}"
                        f"{growth}")
    row["comparison"] += f"; outputs out of tolerance ({row['error']}) re-judged node by node: {'; '.join(evidence)}"
    if entry.comparison == "quantized":
        reason = ("outputs beyond the model's tolerance only by requantization steps grown along the graph: every "
                  "quantized value within one step of PyTorch's, and no node diverging, on PyTorch's own inputs "
                  "(exporter.verify)")
    else:
        reason = ("outputs beyond the model's tolerance only by float32 rounding grown along the graph: no node "
                  "diverges on its own inputs (exporter.verify)")
    row.update(status="pass", error="", reason=reason)


# Rows whose verdict leaves a question that exporter.verify answers: which node diverges first, and whose fault.
LOCALIZED = ("mismatch", "inconclusive")
NOT_LOCALIZED = ("not judged node by node: exporter.verify localizes TorchScript captures, not torch.export's; the "
                 "verdict rests on the outputs alone")
# Local checks per localization: enough for the graphs of the zoo, bounded so a localization fits the case's time.
LOCAL_CHECKS = 300


def _localize(prepared: Prepared, row: dict, artifacts: dict, opset: int, dynamic_axes, label: str, workdir: str):
    """Record ``exporter.verify``'s localization of the row's disagreement (on the check input ``label``) in
    ``row["localization"]``; its repro goes to the bundle's ``localization/`` folder. Returns verify's result (None
    when it failed)."""
    import exporter

    entry = prepared.entry
    repro_dir = os.path.join(workdir, "localization")
    try:
        result = exporter.verify(prepared.model, prepared.export_args, opset, check_args=prepared.checks[label],
                                 output_tolerance=entry.tolerance, repro_dir=repro_dir,
                                 max_local_checks=LOCAL_CHECKS, input_names=entry.input_names,
                                 output_names=entry.output_names, dynamic_axes=dynamic_axes,
                                 captured=prepared_capture(prepared.captures, prepared.model, prepared.export_args))
    except Exception as error:
        row["localization"] = {"error": _truncate(f"{type(error).__name__}: {error}"), "check": label}
        return None
    row["localization"] = localization_facts(result, label)
    if result.divergence is not None:
        artifacts["localization_dir"] = repro_dir
    return result


def _judge_before_selection(prepared: Prepared, row: dict, artifacts: dict, opset: int, dynamic_axes,
                            labels: list[str], workdir: str, mismatch: bool = False) -> None:
    """Decide a detection case before its selection, on the checks ``labels``: those whose final detections all
    sit on near-ties, or (``mismatch``) those whose detections differ beyond tolerance.
    ``exporter.verify(..., judge_selection=True)`` compares the values entering the data-dependent selections and
    checks every node, before and after them, on PyTorch's own inputs (see ``exporter.verify.SelectionCheck``).
    ``pass`` when every check's judgment passes: the export computes PyTorch's function node by node, and the final
    difference comes from the selections' near-ties or from float32 rounding grown along the graph; ``mismatch``
    with the failing value localized otherwise. The row's ``comparison`` and ``selection`` say how."""
    import exporter

    entry = prepared.entry
    judged = []
    for label in labels:
        repro_dir = os.path.join(workdir, "localization")
        try:
            result = exporter.verify(prepared.model, prepared.export_args, opset, check_args=prepared.checks[label],
                                     output_tolerance=entry.tolerance, repro_dir=repro_dir,
                                     max_local_checks=LOCAL_CHECKS, judge_selection=True,
                                     input_names=entry.input_names, output_names=entry.output_names,
                                     dynamic_axes=dynamic_axes,
                                     captured=prepared_capture(prepared.captures, prepared.model, prepared.export_args))
        except Exception as error:
            if not mismatch:
                row.update(status="inconclusive", reason="every final detection on a near-tie, and judging before "
                           f"the selection failed ({label}): {type(error).__name__}: {str(error)[:500]}")
            row["localization"] = {"error": _truncate(f"{type(error).__name__}: {error}"), "check": label}
            return
        check = result.selection
        judged.append({"check": label, "ok": check.ok, "stage": check.stage, "summary": check.summary(),
                       "decisions": check.decisions, "pre_selection": check.pre_selection, "frontier": check.frontier,
                       "frontier_max_abs": check.frontier_max_abs, "post_selection": check.post_selection,
                       "local_checks": check.local_checks, "tie_broken": check.tie_broken})
        why = "detections beyond tolerance" if mismatch else "every final detection on a near-tie"
        row["comparison"] += f"; {label}: {why}, so {check.summary()}"
        if not check.ok:
            failure = check.failure
            row.update(status="mismatch", error=f"{row['error'] + '; ' if mismatch else ''}{label}: {check.summary()}")
            facts = localization_facts(result, label)
            facts.update(finding=f"fails before/in the selection ({check.stage})", value=failure.value,
                         node=_producer_name(result.export.model, failure.value),
                         kind=failure.origin.kind if failure.origin else "",
                         scope=failure.origin.scope if failure.origin else "",
                         source=failure.origin.source if failure.origin else "", local_max_abs=failure.max_abs)
            row["localization"] = facts
            if check.divergence is not None:
                d = check.divergence
                facts.update(node=d.node, op_types=[op for _, op, _ in d.nodes],
                             inputs_agree=all(a.ok for a in d.inputs), culprit=d.repro.culprit,
                             explanation=d.repro.explanation,
                             growth=[[s.value, s.max_abs / s.scale if s.scale else s.max_abs] for s in d.growth])
                artifacts["localization_dir"] = repro_dir
            row["selection"] = judged
            return
    row["selection"] = judged
    if mismatch:
        row["comparison"] += f"; the detections' own difference ({row['error']}) is float32 rounding grown along the graph"
        row.update(status="pass", error="", reason="detections beyond tolerance, judged node by node before and after "
                   "the data-dependent selection: no node diverges on PyTorch's own inputs and the values entering the "
                   "selection agree within the model's tolerance or rounding grown along the graph (exporter.verify)")
        return
    row.update(status="pass", reason="final detections all on near-ties: judged before the data-dependent selection "
               "(values entering it within the model's tolerance, every node after it equal to PyTorch's on "
               "PyTorch's inputs)")


def _producer_name(model, value: str) -> str:
    return next((node.name for node in model.graph.node if value in node.output), "")


def localization_facts(result, label: str) -> dict:
    """The row's ``localization`` field: where the first divergence is, whose fault, how its error grows."""
    facts: dict[str, Any] = {"check": label, "compared": result.compared, "local_checks": result.local_checks,
                             "localized": result.localized, "summary": result.summary()}
    divergence = result.divergence
    if divergence is None:
        first = result.first_out_of_tolerance
        facts["finding"] = (f"the captured TorchScript graph differs from the model: {result.capture.message}"
                            if not result.capture.ok else "no value out of tolerance" if first is None else
                            "no node diverges on its own inputs: the error is rounding grown along the graph"
                            if result.localized else "not localized within the local-check budget")
        return facts
    origin = divergence.origin
    facts.update(
        finding="diverging node", node=divergence.node, value=divergence.value,
        op_types=[op for _, op, _ in divergence.nodes], kind=origin.kind if origin else "",
        scope=origin.scope if origin else "", source=origin.source if origin else "",
        inputs_agree=all(a.ok for a in divergence.inputs), local_max_abs=divergence.local.max_abs,
        culprit=divergence.repro.culprit, explanation=divergence.repro.explanation,
        # error relative to the value's scale along a path to an output: the report's growth chart
        growth=[[step.value, step.max_abs / step.scale if step.scale else step.max_abs] for step in divergence.growth],
    )
    return facts


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
        torch.onnx.export(prepared.model, _clone(prepared.export_args), path, opset_version=opset, dynamo=False,
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
    """Worker process main loop: announce readiness, then answer each case with its row until told to stop."""
    import warnings

    warnings.filterwarnings("ignore")
    configure_process()
    import exporter  # noqa: F401  (import and zoo-loading costs are paid before the first case's clock starts)
    import onnxruntime  # noqa: F401

    model_zoo.entries()

    scratch = tempfile.mkdtemp(prefix="conformance-worker-")
    state = WorkerState(scratch)
    conn.send(("ready", os.getpid()))
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            conn.send(("row", run_case(message, state, repro_root)))
    except (EOFError, KeyboardInterrupt):
        return
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
