"""Localize a mismatch: the first ONNX node whose result disagrees with PyTorch, and whose fault it is.

:func:`verify` exports a model, runs the captured TorchScript graph with every intermediate value as an output
and ONNX Runtime with every intermediate value as an extra graph output, pairs them through the export's
provenance, and compares them in topological order. A value out of tolerance in the full run may only carry
rounding error grown upstream, so each such value gets a *local* check: the ONNX nodes that compute it from the
previous compared values (its subgraph), fed with PyTorch's own inputs. The first value whose local check fails
is the divergence; its subgraph, with those inputs, is the minimal repro, run in ONNX Runtime and in the ONNX
reference evaluator to say whose result is right.

Comparisons follow the conformance harness's policy, which lives in the library: ``exporter.numerics.compare_arrays``
with the per-operator tolerance of ``exporter.tolerances`` (by the TorchScript op's family), and sessions from
``exporter.ort_session.make_session``.
"""

from __future__ import annotations

import collections
import io
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from exporter.api import ExportResult, export
from exporter.capture import flatten, split_args
from exporter.errors import ExportArgumentError
from exporter.numerics import (ARBITER_AGREEMENT, ARBITRATION_WORDS, NONFINITE_WORDS, Verdict, arbitrate,
                               compare_arrays, scale_of)
from exporter.ort_session import make_session
from exporter.provenance import Origin
from exporter.tolerances import DEFAULT_ATOL, DEFAULT_FAMILY, DEFAULT_RTOL, family_of, tolerance_for
from exporter.ts_types import blocks_of, inputs_of

# A value out of tolerance in the full run is checked locally; past this many local checks without a failing one
# the divergence is reported as not localized (the cost is bounded on huge graphs).
DEFAULT_MAX_LOCAL_CHECKS = 2000
# A local subgraph is walked back at most this many nodes (a node kind that hides its inputs behind many
# unpaired values would otherwise pull in the whole graph).
_MAX_SUBGRAPH_NODES = 64


@dataclass
class Agreement:
    """One ONNX value compared with the PyTorch value it computes (``compare_arrays``'s verdict and errors)."""

    value: str
    origin: Origin | None
    ok: bool
    max_abs: float
    max_rel: float
    scale: float  # largest finite |x| of PyTorch's value
    rtol: float
    atol: float
    message: str = ""


@dataclass
class Repro:
    """The diverging subgraph with PyTorch's inputs, run in ONNX Runtime and in ``onnx.reference``.

    ``culprit`` says whose result is wrong: ``"export"`` (both ONNX runtimes agree with each other, not with
    PyTorch: the exported nodes compute something else), ``"onnxruntime"`` (the reference evaluator reproduces
    PyTorch, ONNX Runtime does not: the export is right) or ``"undecided"`` (the reference evaluator could not run
    the subgraph, or all three disagree); ``explanation`` says it in words. ``directory`` holds it in the ONNX
    backend-test layout (``model.onnx``, ``test_data_set_0/input_*.pb``, ``output_0.pb`` = PyTorch's result)
    when :func:`verify` was given a ``repro_dir``.
    """

    onnx_runtime: Agreement
    reference: Agreement | None
    culprit: str
    explanation: str
    directory: str | None = None


@dataclass
class Divergence:
    """The first value whose own computation disagrees with PyTorch.

    ``value`` is the ONNX value; ``nodes`` the ONNX nodes (name, op type, origin) that compute it from PyTorch's
    inputs, the last one producing it; ``node``/``origin`` name that producer and where it came from (TorchScript
    op, module scope, source line). ``in_model`` is the value's agreement in the full ONNX Runtime run, ``local``
    its agreement when its subgraph is fed PyTorch's inputs, ``inputs`` the agreement of those inputs in the full
    run, ``growth`` the agreement of each compared value on a path from it to a model output.
    """

    value: str
    node: str
    origin: Origin | None
    nodes: list[tuple[str, str, Origin | None]]
    in_model: Agreement
    local: Agreement
    inputs: list[Agreement]
    growth: list[Agreement]
    repro: Repro


@dataclass
class SelectionCheck:
    """The verdict on a model whose outputs come out of data-dependent selections (top-k, NMS, thresholds).

    Where the final outputs sit on near-ties, a last-bit difference upstream may legitimately keep other elements,
    so the outputs cannot tell a right export from a wrong one. The values *before* the selection and the
    selection's own computation can: a *decision* is a TorchScript node turning float data into integers or bools
    (``aten::topk``, ``torchvision::nms``, comparisons, ``aten::argmax``; shape queries are not decisions), and
    every compared value downstream of one is *post-selection*. The check passes when

    - every pre-selection value agrees with PyTorch in the full run or, where rounding grew out of the per-operator
      tolerance, on PyTorch's own inputs (its local check: no node diverges on its inputs);
    - the *frontier*, the pre-selection values a decision or a post-selection node reads (head outputs, decoded
      boxes, scores before NMS / top-k), agree with PyTorch in the full run within the model's output tolerance;
    - every post-selection value (the decisions included) computed by the exported nodes from PyTorch's own inputs
      equals PyTorch's result: integers and bools exactly, floats within the per-operator tolerance; a top-k or
      sort may order exactly equal elements differently (``tie_broken``: its indices pick the same values).

    Then the exported graph computes PyTorch's function node by node and the values entering the selections agree
    within tolerance: the outputs differ only where a selection is discontinuous. ``failure`` is the first value
    failing, ``stage`` which of the three (``pre-selection``, ``frontier``, ``selection``).
    """

    ok: bool
    decisions: dict[str, int]  # TorchScript op kind -> decision nodes of that kind
    pre_selection: int
    frontier: int
    frontier_max_abs: float
    frontier_max_rel: float
    post_selection: int
    local_checks: int
    tie_broken: int
    unpaired_frontier: int
    failure: Agreement | None = None
    stage: str = ""
    divergence: Divergence | None = None  # the failing value's node, inputs and repro (local failures only)
    float64_arbitrated: int = 0  # local checks passed by float64 arbitration (PyTorch's own float32 rounding)
    # frontier values outside the model's tolerance but within ARBITER_AGREEMENT of their scale, every node upstream
    # agreeing on PyTorch's own inputs: float32 rounding grown along the graph (e.g. a deep backbone)
    frontier_rounding: int = 0
    frontier_max_scaled: float = 0.0  # the largest frontier error relative to its value's scale

    def summary(self) -> str:
        decisions = ", ".join(f"{n} {k}" for k, n in sorted(self.decisions.items()))
        rounding = (f"; {self.frontier_rounding} of them beyond it but within {ARBITER_AGREEMENT:g} of their scale, "
                    "every node upstream agreeing on PyTorch's inputs: rounding grown along the graph"
                    if self.frontier_rounding else "")
        text = (f"judged before the data-dependent selection ({decisions}): {self.pre_selection} pre-selection values "
                f"agree (in the model or on PyTorch's inputs), {self.frontier} values entering the selection agree "
                f"within the model's tolerance (max abs {self.frontier_max_abs:.3g}, max rel {self.frontier_max_rel:.3g}, "
                f"at most {self.frontier_max_scaled:.2g} of their scale{rounding}), "
                f"{self.post_selection} post-selection values computed from PyTorch's inputs equal PyTorch's "
                f"({self.local_checks} local checks, {self.float64_arbitrated} of them passed by float64 arbitration; "
                f"{self.tie_broken} top-k/sort broke exact ties differently)")
        if self.failure is not None:
            f = self.failure
            text += (f"; FAILS at {self.stage} value {f.value} ({f.origin}): {f.message or 'differs'}")
        return text


@dataclass
class VerifyResult:
    """What :func:`verify` found.

    ``ok`` is True when the model's outputs agree with PyTorch's and no value diverges locally. ``outputs`` is the
    harness's verdict on the outputs; ``capture`` the same comparison of the captured TorchScript graph's outputs
    with the model's (when it fails, tracing recorded something else than the model computes, e.g. a Python value
    baked in, and no conversion is to blame); ``compared`` counts the intermediate values compared; ``first_out_of_tolerance``
    is the first value outside tolerance in the full run (it may only carry rounding grown upstream);
    ``divergence`` the first value whose local check fails (None when none does: out-of-tolerance values then
    come from accumulated rounding, each node agreeing on its own inputs); ``local_checks`` how many local
    checks ran; ``localized`` False when ``max_local_checks`` ran out first. ``export`` is the export itself.
    """

    ok: bool
    outputs: Verdict
    capture: Verdict
    compared: int
    first_out_of_tolerance: Agreement | None
    divergence: Divergence | None
    local_checks: int
    localized: bool
    export: ExportResult = field(repr=False)
    selection: SelectionCheck | None = None  # with judge_selection=True: the verdict before the selections
    # values whose local check passed only by float64 arbitration: PyTorch's own float32 result is as far from
    # the float64 one as ONNX Runtime's (within ARBITRATION_FACTOR), so neither diverges
    float64_arbitrated: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """A few lines saying what diverged, where in the model, and whose result is right."""
        lines = [f"outputs: {'agree' if self.outputs.ok else 'DIFFER'} ({self.outputs.message or self.outputs.comparison})",
                 f"{self.compared} intermediate values compared, {self.local_checks} local checks"]
        if self.divergence is not None:
            d = self.divergence
            lines.append(f"first diverging node: {d.node} -> {d.value}: {d.origin}")
            lines.append(f"  with PyTorch's inputs: max abs error {d.local.max_abs:.3g} (scale {d.local.scale:.3g}, "
                         f"rtol {d.local.rtol:g}, atol {d.local.atol:.3g}){_nonfinite_part(d.local.message)}")
            lines.append(f"  inputs agree: {all(i.ok for i in d.inputs)} ({len(d.inputs)} compared)")
            lines.append(f"  whose fault: {d.repro.culprit}: {d.repro.explanation}")
        elif not self.capture.ok:
            lines.append(f"the captured TorchScript graph already differs from the model: {self.capture.message}")
        elif self.first_out_of_tolerance is not None:
            first = self.first_out_of_tolerance
            reason = ("no node diverges on its own inputs: the error is float rounding grown along the graph"
                      if self.localized else "not localized within max_local_checks")
            lines.append(f"first value out of tolerance: {first.value} ({first.origin}); {reason}")
        if self.float64_arbitrated:
            lines.append(f"{len(self.float64_arbitrated)} local check(s) passed by float64 arbitration (PyTorch's "
                         f"float32 result as far from float64 as ONNX Runtime's): {', '.join(self.float64_arbitrated[:5])}")
        if self.selection is not None:
            lines.append(self.selection.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready facts (everything but the export), for results rows and reports."""
        def plain(obj):
            if isinstance(obj, Origin):
                return {"kind": obj.kind, "scope": obj.scope, "source": obj.source}
            if isinstance(obj, dict):
                return {k: plain(v) for k, v in obj.items() if k != "stack"}
            if isinstance(obj, (list, tuple)):
                return [plain(v) for v in obj]
            return obj

        facts = {k: v for k, v in self.__dict__.items() if k not in ("export", "outputs", "capture", "selection")}
        facts = {k: plain(asdict(v) if hasattr(v, "__dataclass_fields__") and not isinstance(v, Origin) else v)
                 for k, v in facts.items()}
        for key in ("outputs", "capture"):
            verdict = getattr(self, key)
            facts[key] = {"ok": verdict.ok, "message": verdict.message, "max_abs": verdict.max_abs,
                          "comparison": verdict.comparison}
        return facts


def verify(
    model: Any,
    args: Any,
    opset_version: int | None = None,
    *,
    check_args: Any = None,
    output_tolerance: Callable[[float], tuple[float, float]] | None = None,
    repro_dir: str | None = None,
    max_local_checks: int = DEFAULT_MAX_LOCAL_CHECKS,
    judge_selection: bool = False,
    **export_options: Any,
) -> VerifyResult:
    """Export ``model`` and find the first ONNX node whose result disagrees with PyTorch, with its provenance.

    ``model``, ``args`` and ``export_options`` (``input_names``, ``dynamic_axes``, ...) are as for
    :func:`exporter.export` (the model is exported to memory). The comparison runs on ``check_args`` (default
    ``args``; another input size for a dynamic export), in PyTorch and on ONNX Runtime's CPU provider.
    Intermediate values are judged by the harness's per-operator tolerance (``exporter.tolerances``) of the
    TorchScript op that computes them; the model's outputs by ``output_tolerance`` (scale -> (rtol, atol)), or by
    the zoo's default model tolerance (``exporter.tolerances.DEFAULT_RTOL``/``DEFAULT_ATOL``) when None. Values
    inside control flow (If/Loop bodies) are not compared.
    ``repro_dir`` receives the diverging subgraph as an ONNX backend test. ``judge_selection`` also judges the
    model before its data-dependent selections (``VerifyResult.selection``, a :class:`SelectionCheck`): for
    detectors whose final outputs sit on near-ties. Returns a :class:`VerifyResult`.
    """
    if max_local_checks < 1:
        raise ExportArgumentError(f"max_local_checks must be at least 1, got {max_local_checks!r}")
    if "f" in export_options:
        raise ExportArgumentError("verify exports to memory: do not pass `f`")
    if export_options.get("dynamo"):
        raise ExportArgumentError("verify localizes through the TorchScript capture's graph; torch.export programs "
                                  "are not localized yet: verify with dynamo=False (the same op library converts both)")
    result = export(model, args, io.BytesIO(), opset_version=opset_version, **export_options)
    check_args = args if check_args is None else check_args
    flat_inputs = _graph_inputs_of(check_args, result.capture.user_inputs)
    ts_inputs = list(flat_inputs) + [tensor for _, tensor in result.capture.params]
    with torch.no_grad():
        eager = model(*split_args(check_args)[0], **split_args(check_args)[1])
    verifier = _Verifier(result, ts_inputs, output_tolerance, repro_dir, max_local_checks)
    return verifier.run(eager, judge_selection=judge_selection)


def _graph_inputs_of(args: Any, user_inputs: list) -> list:
    """The arguments as the captured graph's inputs take them: flattened, except that a list argument that is one
    input (a scripted list, an ONNX sequence) stays one list of tensors, whatever its length."""
    positional, kwargs = split_args(args)
    out: list = []
    for argument in list(positional) + list(kwargs.values()):
        if isinstance(argument, (list, tuple)) and len(out) < len(user_inputs) and isinstance(user_inputs[len(out)], list):
            out.append(flatten(list(argument), numbers_as_tensors=True)[0])
        else:
            out.extend(flatten(argument, numbers_as_tensors=True)[0])
    return out


_QUANTIZED_SCALAR_TYPES = frozenset({"QUInt8", "QInt8", "QInt32"})


# -- tolerance ------------------------------------------------------------------------------------------------
def _op_tolerance(kind: str, dtype: np.dtype) -> Callable[[float], tuple[float, float]]:
    """The harness's per-operator tolerance for a TorchScript op (``aten::_convolution`` -> the conv family)."""
    name = kind.partition("::")[2].strip("_")
    # OpInfo names put many ops under nn.functional (linear, layer_norm): try that spelling where the bare one
    # falls back to the default family.
    op = name if family_of(name) != DEFAULT_FAMILY else f"nn.functional.{name}"
    return tolerance_for(str(dtype), op).at


def _nonfinite_part(message: str) -> str:
    """The NaN/Inf disagreement a local check's message names (``; ...``), or "": the max abs error of finite
    values alone would hide it."""
    return f"; {message.split(': ', 1)[-1]}" if NONFINITE_WORDS in message else ""


def _model_tolerance(scale: float) -> tuple[float, float]:
    """The default tolerance of a model's outputs, the zoo's for an entry that gives none."""
    return DEFAULT_RTOL, DEFAULT_ATOL


def _one_step(scale: float) -> tuple[float, float]:
    """Quantized values, compared as their integers: at most one step apart. PyTorch's kernels requantize with a
    fixed-point multiplier where ONNX's QuantizeLinear divides in float32, so a value on a rounding boundary may
    land one step to either side."""
    return 0.0, 1.0


def _agreement(name: str, origin: Origin | None, expected: np.ndarray, actual: np.ndarray, tolerance) -> Agreement:
    if tolerance is _one_step:
        expected, actual = expected.astype(np.float64), np.asarray(actual).astype(np.float64)
    verdict = compare_arrays([expected], [actual], tolerance)
    rtol, atol = tolerance(scale_of([expected]))
    return Agreement(name, origin, verdict.ok, verdict.max_abs, verdict.max_rel, scale_of([expected]), rtol, atol,
                     verdict.message)


# -- the two runs ---------------------------------------------------------------------------------------------
def _torch_values(graph: torch._C.Graph, inputs: list[torch.Tensor], wanted: list[torch._C.Value]):
    """Run ``graph`` on ``inputs`` with the ``wanted`` top-level values as extra outputs: ({value.unique(): array},
    the graph's own outputs).

    Each value is cloned right where it is produced, so an in-place op later in the graph cannot change it.
    """
    copy = graph.copy()
    by_unique = {}
    for original, copied in zip(graph.inputs(), copy.inputs()):
        by_unique[original.unique()] = copied
    for original_node, copied_node in zip(graph.nodes(), copy.nodes()):
        for original, copied in zip(original_node.outputs(), copied_node.outputs()):
            by_unique[original.unique()] = copied
    none = copy.insertConstant(None)
    none.node().moveBefore(copy.nodes().__next__())
    clones = []
    for value in wanted:
        copied = by_unique[value.unique()]
        clone = copy.create("aten::clone", [copied, none])
        clone.output().setType(copied.type())
        clone.insertAfter(none.node() if copied.node().kind() == "prim::Param" else copied.node())
        clones.append(clone.output())
    outputs = _run_returning(copy, list(copy.outputs()) + clones, inputs, "exporter_verify")
    count = len(outputs) - len(wanted)
    return ({value.unique(): _to_numpy(tensor) for value, tensor in zip(wanted, outputs[count:])},
            [_to_numpy(tensor) for tensor in outputs[:count]])


def _float64_values(graph: torch._C.Graph, inputs: list[torch.Tensor], wanted: list[torch._C.Value]) -> dict[int, np.ndarray]:
    """PyTorch's float64 result of the nodes producing ``wanted``, each computed from its own float inputs cast to
    float64 (its other inputs, sizes and indices, as the graph computes them): {value.unique(): array}.

    Each producer is cloned right after itself in a copy of ``graph`` with ``aten::to(double)`` on its float tensor
    inputs, and the clone's result becomes an extra output: one run of the graph arbitrates every value at once.
    """
    copy = graph.copy()
    by_unique = {}
    for original_node, copied_node in zip(graph.nodes(), copy.nodes()):
        for original, copied in zip(original_node.outputs(), copied_node.outputs()):
            by_unique[original.unique()] = copied
    first = copy.nodes().__next__()
    constants = {}
    for value in (torch.float64, False, None):
        constants[repr(value)] = copy.insertConstant(value)
        constants[repr(value)].node().moveBefore(first)
    results = []
    for value in wanted:
        copied = by_unique[value.unique()]
        node = copied.node()
        casts = {}
        for read in node.inputs():
            if read.type().kind() == "TensorType" and read.type().scalarType() in ("Float", "Half", "BFloat16"):
                cast = copy.create("aten::to", [read, constants["torch.float64"], constants["False"],
                                                constants["False"], constants["None"]])
                cast.output().setType(read.type().with_dtype(torch.float64))
                cast.insertBefore(node)
                casts[read.unique()] = cast.output()
        clone = copy.createClone(node, lambda read: casts.get(read.unique(), read))
        clone.insertAfter(node)
        for out in clone.outputs():
            if out.type().kind() == "TensorType" and out.type().scalarType() == "Float":
                out.setType(out.type().with_dtype(torch.float64))
        results.append(clone.outputsAt(list(node.outputs()).index(copied)))
    outputs = _run_returning(copy, results, inputs, "exporter_verify_float64")
    return {value.unique(): _to_numpy(tensor) for value, tensor in zip(wanted, outputs)}


def _run_returning(graph: torch._C.Graph, results: list, inputs: list[torch.Tensor], name: str) -> tuple:
    """Run ``graph`` on ``inputs`` with ``results`` (its values) as its outputs, replacing its own: a graph
    function returns one value, so they are returned as one tuple."""
    while len(list(graph.outputs())):
        graph.eraseOutput(0)
    packed = graph.create("prim::TupleConstruct", results)
    packed.output().setType(torch._C.TupleType([v.type() for v in results]))
    graph.appendNode(packed)
    graph.registerOutput(packed.output())
    function = torch._C._create_function_from_graph(name, graph)
    with torch.no_grad():
        return function(*inputs)


def _to_numpy(tensor: torch.Tensor | list) -> np.ndarray | list:
    """The tensor's values; a quantized tensor's integers (what the exported QuantizeLinear computes); a list input's
    items."""
    if isinstance(tensor, list):
        return [_to_numpy(item) for item in tensor]
    if tensor.is_quantized:
        return tensor.int_repr().numpy()
    return tensor.detach().cpu().resolve_conj().resolve_neg().numpy()


def _run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], extra: dict[str, int]) -> dict[str, np.ndarray]:
    """ONNX Runtime's value of every graph output and of each name in ``extra`` (name -> ONNX element type)."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    for name, elem_type in extra.items():
        if name not in present:
            exposed.graph.output.append(onnx.helper.make_tensor_value_info(name, elem_type, None))
    session = make_session(exposed.SerializeToString(), "cpu")
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


# -- the verifier -----------------------------------------------------------------------------------------------
class _Verifier:
    def __init__(self, result: ExportResult, ts_inputs: list[torch.Tensor], output_tolerance, repro_dir, max_local):
        self.result = result
        self.model = result.model
        self.provenance = result.provenance
        self.ts_graph = result.capture.graph
        self.ts_inputs = ts_inputs
        self.output_tolerance = output_tolerance
        self.repro_dir = repro_dir
        self.max_local = max_local
        graph = self.model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.position = {id(node): k for k, node in enumerate(graph.node)}
        ts_index = {v.unique(): k for k, v in enumerate(self.ts_graph.inputs())}
        self.feeds = {}
        for graph_input in graph.input:
            if graph_input.name in self.initializers:
                continue
            ts_value = self.provenance.values[graph_input.name][0]
            self.feeds[graph_input.name] = _to_numpy(ts_inputs[ts_index[ts_value.unique()]])

    # which ONNX values are paired with a PyTorch value
    def _pairs(self) -> dict[str, torch._C.Value]:
        top = self.ts_graph.block()
        pairs: dict[str, torch._C.Value] = {}
        taken: set[int] = set()
        for node in self.model.graph.node:
            if node.op_type == "Constant" and not node.domain:
                continue  # a folded value: nothing of ONNX Runtime's to compare
            for name in node.output:
                entry = self.provenance.values.get(name)
                if entry is None or entry[1] is None:
                    continue
                ts_value = entry[0]
                if ts_value.type().kind() != "TensorType" or ts_value.node().owningBlock() != top:
                    continue
                if ts_value.unique() not in taken:
                    taken.add(ts_value.unique())
                    pairs[name] = ts_value
        return pairs

    def run(self, eager: Any, judge_selection: bool = False) -> VerifyResult:
        from exporter.capture import flatten_outputs

        pairs = self._pairs()
        # The data a top-k or sort ranks, to tell an exact tie broken otherwise from a wrong selection.
        ranked = [node.inputsAt(0) for node in self.ts_graph.nodes() if node.kind() in _RANKING]
        wanted = list(pairs.values()) + [v for v in ranked if v.type().kind() == "TensorType"]
        self.torch, captured_outputs = _torch_values(self.ts_graph, self.ts_inputs, wanted)
        types = {name: self.provenance.values[name][1] for name in pairs}
        types.update(self._other_types(pairs))
        self.onnx = _run_onnx(self.model, self.feeds, types)
        self.expected = {name: self.torch[ts.unique()] for name, ts in pairs.items()}
        self.pairs = pairs

        expected_outputs = [_to_numpy(t) for t in flatten_outputs(eager)]
        actual_outputs = [self.onnx[o.name] for o in self.model.graph.output]
        tolerance = self.output_tolerance or _model_tolerance
        outputs = compare_arrays(expected_outputs, actual_outputs, tolerance)
        capture = compare_arrays(expected_outputs, captured_outputs, tolerance)

        in_model = {name: self._in_model(name) for name in pairs}
        first = next((a for a in in_model.values() if not a.ok), None)
        divergence, checks, arbitrated = None, 0, []
        for name, agreement in in_model.items():
            if agreement.ok:
                continue
            if checks == self.max_local:
                break
            checks += 1
            local = self._local_check(name)
            if local is not None and local.ok and ARBITRATION_WORDS in local.message:
                arbitrated.append(name)
            if local is not None and not local.ok:
                subgraph, boundary = self._subgraph(name)
                divergence = self._divergence(name, subgraph, boundary, in_model)
                break
        localized = divergence is not None or checks < self.max_local or all(a.ok for a in in_model.values())
        selection = self._judge_selection(in_model) if judge_selection else None
        return VerifyResult(outputs.ok and divergence is None, outputs, capture, len(in_model), first, divergence,
                            checks, localized, self.result, selection, arbitrated)

    # judging before the selections
    def _judge_selection(self, in_model: dict[str, Agreement]) -> SelectionCheck:
        """See :class:`SelectionCheck`. Values are visited in graph order; the first failing one is recorded."""
        decisions, post = _selections(self.ts_graph)
        block = self.ts_graph.block()
        frontier_ts = set()
        for node in self.ts_graph.nodes():
            if any(v.unique() in post for v in node.outputs()):  # a decision or a node after one
                frontier_ts.update(v.unique() for v in _node_reads(node) if v.unique() not in post
                                   and v.type().kind() == "TensorType" and v.node().owningBlock() == block
                                   and v.node().kind() != "prim::Constant")
        paired = {ts.unique(): name for name, ts in self.pairs.items()}
        model_tolerance = self.output_tolerance or _model_tolerance
        kinds = collections.Counter(node.kind() for node in decisions)
        check = SelectionCheck(True, dict(kinds), 0, 0, 0.0, 0.0, 0, 0, 0,
                               sum(1 for u in frontier_ts if u not in paired and u not in self.torch))

        def fail(agreement: Agreement, stage: str) -> SelectionCheck:
            check.ok, check.failure, check.stage = False, agreement, stage
            if stage != "frontier":
                subgraph, boundary = self._subgraph(agreement.value, closed=stage == "selection")
                check.divergence = self._divergence(agreement.value, subgraph, boundary, in_model)
            return check

        for name, agreement in in_model.items():
            ts = self.pairs[name]
            if ts.unique() in post:
                check.post_selection += 1
                if agreement.ok:
                    continue
                check.local_checks += 1
                local = self._local_check(name, closed=True)
                if local is None:
                    check.tie_broken += 1
                elif not local.ok:
                    return fail(local, "selection")
                else:
                    check.float64_arbitrated += ARBITRATION_WORDS in local.message
                continue
            check.pre_selection += 1
            if not agreement.ok:
                check.local_checks += 1
                local = self._local_check(name)
                if local is not None and not local.ok:
                    return fail(local, "pre-selection")
                check.float64_arbitrated += local is not None and ARBITRATION_WORDS in local.message
            if ts.unique() in frontier_ts:
                check.frontier += 1
                judged = _agreement(name, self.provenance.value(name), self.expected[name], self.onnx[name],
                                    model_tolerance)
                check.frontier_max_abs = max(check.frontier_max_abs, judged.max_abs)
                check.frontier_max_rel = max(check.frontier_max_rel, judged.max_rel)
                scaled = judged.max_abs / judged.scale if judged.scale else 0.0
                check.frontier_max_scaled = max(check.frontier_max_scaled, scaled)
                if not judged.ok:
                    # Every node up to here agrees on PyTorch's own inputs: rounding grown along the graph (a deep
                    # backbone), which the harness accepts for a model's outputs within ARBITER_AGREEMENT of the scale.
                    if judged.scale and scaled <= ARBITER_AGREEMENT and "max abs error" in judged.message:
                        check.frontier_rounding += 1
                        continue
                    return fail(judged, "frontier")
        return check

    def _arbitrated(self, name: str, local: Agreement, actual: np.ndarray) -> Agreement:
        """A float32 local disagreement re-judged against PyTorch's float64 result of the same node on the same
        inputs (``exporter.numerics.arbitrate``, as the harness does for a model's outputs): ONNX Runtime's result
        passes when it deviates from float64 at most twice as much as PyTorch's own float32 result (plus atol)."""
        ts = self.pairs[name]
        if ts.node().blocks() and list(ts.node().blocks()):
            return local
        try:
            exact = _float64_values(self.ts_graph, self.ts_inputs, [ts])[ts.unique()]
        except Exception as error:  # the node does not run in float64 (an op without a double kernel)
            local.message += f"; no float64 arbitration: {type(error).__name__}: {str(error)[:200]}"
            return local
        decision = arbitrate([self.expected[name]], [actual], [exact], local.atol)
        arbitrated = Agreement(**{**asdict(local), "origin": local.origin})
        arbitrated.ok = decision.ok
        arbitrated.message = f"{local.message}; {decision.comparison}" if local.message else decision.comparison
        return arbitrated

    def _local_check(self, name: str, closed: bool = False) -> Agreement | None:
        """The local check of ``name`` (see :meth:`_subgraph` for ``closed``, used after a selection, where the
        full run's other values follow ONNX Runtime's own selections). None for top-k/sort indices that order
        exactly equal elements otherwise than PyTorch: the same values picked, an equally right answer."""
        subgraph, boundary = self._subgraph(name, closed=closed)
        local, _, actual = self._run_local(name, subgraph, boundary)
        if actual is not None and not local.ok and self.expected[name].dtype == np.float32:
            local = self._arbitrated(name, local, actual)
        if local.ok or actual is None:
            return local
        ts = self.pairs[name]
        node = ts.node()
        ranked = node.inputsAt(0).unique() if node.kind() in _RANKING else None
        if ranked in self.torch and ts.type().scalarType() == "Long" and actual.shape == self.expected[name].shape:
            data, dim = self.torch[ranked], _constant(node, "dim")
            if dim is not None and data.ndim == actual.ndim:
                try:
                    same = np.array_equal(np.take_along_axis(data, actual, dim),
                                          np.take_along_axis(data, self.expected[name], dim))
                except (IndexError, ValueError):
                    same = False
                if same:
                    return None
        return local

    def _other_types(self, pairs: dict) -> dict[str, int]:
        """Element types of unpaired values ONNX Runtime should also expose (a local subgraph may read them)."""
        inferred = onnx.shape_inference.infer_shapes(self.model, strict_mode=False)
        types = {}
        for info in list(inferred.graph.value_info):
            if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type and info.name not in pairs:
                types[info.name] = info.type.tensor_type.elem_type
        return types

    def _in_model(self, name: str) -> Agreement:
        expected = self.expected[name]
        return _agreement(name, self.provenance.value(name), expected, self.onnx[name], self._tolerance(name))

    # local subgraphs
    def _subgraph(self, name: str, closed: bool = False) -> tuple[list[onnx.NodeProto], list[str]]:
        """The ONNX nodes computing ``name`` from paired values, graph inputs and values of other TorchScript
        nodes (its boundary), in graph order, and that boundary. ``closed``: only paired values and graph inputs
        bound it (values no PyTorch tensor stands for are recomputed, not taken from the full run)."""
        owner = self.pairs[name].node()
        owners = [owner]
        if owner.kind() in ("prim::ListUnpack", "prim::TupleUnpack"):  # an element of a multi-output op's list
            owners.append(owner.input().node())
        nodes: dict[int, onnx.NodeProto] = {}
        boundary: list[str] = []
        pending = [self.producer[name]]
        while pending:
            node = pending.pop()
            if id(node) in nodes:
                continue
            nodes[id(node)] = node
            for read in _reads(node):
                if not read or read in self.initializers or read in boundary:
                    continue
                producer = self.producer.get(read)
                if producer is None or read in self.pairs:
                    boundary.append(read)  # a graph input, an outer-scope value, or a compared value
                    continue
                from_other = self.provenance.nodes.get(producer.name) not in (None, *owners)
                if (not closed and producer.op_type != "Constant" and (from_other or len(nodes) >= _MAX_SUBGRAPH_NODES)
                        and read in self.onnx):
                    boundary.append(read)
                    continue
                pending.append(producer)
        return sorted(nodes.values(), key=lambda n: self.position[id(n)]), boundary

    def _boundary_value(self, name: str) -> np.ndarray:
        """PyTorch's value of a boundary name where it has one, else ONNX Runtime's (a value no TorchScript tensor
        stands for, such as a shape, taken as computed in the full run)."""
        if name in self.expected:
            return self.expected[name]
        if name in self.feeds:
            return self.feeds[name]
        return self.onnx[name]

    def _local_model(self, name: str, subgraph: list, boundary: list[str]) -> onnx.ModelProto:
        used = {read for node in subgraph for read in _reads(node)}
        inputs = [numpy_helper_value_info(b, self._boundary_value(b)) for b in boundary]
        output = numpy_helper_value_info(name, self.expected[name])
        graph = onnx.helper.make_graph(
            subgraph, "diverging_subgraph", inputs, [output],
            initializer=[t for n, t in self.initializers.items() if n in used])
        local = onnx.helper.make_model(graph, opset_imports=list(self.model.opset_import), ir_version=self.model.ir_version)
        local.functions.extend(self.model.functions)
        return local

    def _run_local(self, name: str, subgraph: list, boundary: list[str]):
        """The local check: ONNX Runtime's result of the subgraph on PyTorch's inputs (agreement, model, result)."""
        local = self._local_model(name, subgraph, boundary)
        feeds = {b: self._boundary_value(b) for b in boundary}
        expected = self.expected[name]
        origin = self.provenance.value(name)
        try:
            actual = make_session(local.SerializeToString(), "cpu").run([name], feeds)[0]
        except Exception as error:  # the subgraph alone fails to load or run: that is a local failure too
            text = f"ONNX Runtime cannot run the subgraph: {type(error).__name__}: {error}"
            return Agreement(name, origin, False, float("nan"), float("nan"), 0.0, 0.0, 0.0, text), local, None
        return _agreement(name, origin, expected, actual, self._tolerance(name)), local, actual

    def _tolerance(self, name: str):
        if self.pairs[name].type().scalarType() in _QUANTIZED_SCALAR_TYPES:
            return _one_step
        return _op_tolerance(self.pairs[name].node().kind(), self.expected[name].dtype)

    def _divergence(self, name: str, subgraph: list, boundary: list[str], in_model: dict) -> Divergence:
        from onnx.reference import ReferenceEvaluator

        ort, local, actual = self._run_local(name, subgraph, boundary)
        feeds = {b: self._boundary_value(b) for b in boundary}
        expected, origin = self.expected[name], self.provenance.value(name)
        try:
            computed = np.asarray(ReferenceEvaluator(_for_reference(local)).run([name], feeds)[0])
        except Exception as error:
            repro = Repro(ort, None, "undecided",
                          f"the ONNX reference evaluator cannot run the subgraph: {type(error).__name__}: {error}")
        else:
            ref = _agreement(name, origin, expected, computed, self._tolerance(name))
            both = _agreement(name, origin, computed, actual, self._tolerance(name)) if actual is not None else None
            repro = _judge(ort, ref, both)
        if self.repro_dir:
            repro.directory = _write_backend_test(self.repro_dir, local, list(feeds.items()), expected)
        producer = self.producer[name]
        return Divergence(
            value=name, node=producer.name, origin=self.provenance.node(producer.name),
            nodes=[(n.name, n.op_type, self.provenance.node(n.name)) for n in subgraph],
            in_model=in_model[name], local=ort,
            inputs=[in_model[b] for b in boundary if b in in_model],
            growth=[in_model[n] for n in self._path_to_output(name)],
            repro=repro,
        )

    def _path_to_output(self, name: str) -> list[str]:
        """Compared values on a shortest path (in TorchScript uses) from ``name`` to a model output, ``name`` first."""
        onnx_of = {ts.unique(): n for n, ts in self.pairs.items()}
        outputs = {v.unique() for v in self.ts_graph.outputs()}
        start = self.pairs[name]
        previous = {start.unique(): None}
        queue = collections.deque([start])
        end = None
        while queue:
            value = queue.popleft()
            if value.unique() in outputs:
                end = value
                break
            for use in value.uses():
                if use.user.owningBlock() != self.ts_graph.block():
                    continue
                for out in use.user.outputs():
                    if out.unique() not in previous:
                        previous[out.unique()] = value.unique()
                        queue.append(out)
        path, step = [], end.unique() if end is not None else start.unique()
        while step is not None:
            if step in onnx_of:
                path.append(onnx_of[step])
            step = previous[step]
        return path[::-1]


# onnx.reference implements QuantizeLinear/DequantizeLinear from opset 19 only; their 8-bit forms compute the same
# from opset 10 on.
_REFERENCE_QDQ_OPSET = 19


def _for_reference(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as onnx.reference can run it: a subgraph with QuantizeLinear/DequantizeLinear is re-declared at
    opset 19 when every other op it holds has the same definition there (else unchanged, and the evaluator says
    what it lacks)."""
    default = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    ops = {node.op_type for node in model.graph.node if node.domain in ("", "ai.onnx")}
    if default is None or default.version >= _REFERENCE_QDQ_OPSET or not ops & {"QuantizeLinear", "DequantizeLinear"}:
        return model
    unchanged = all(onnx.defs.get_schema(op, default.version).since_version
                    == onnx.defs.get_schema(op, _REFERENCE_QDQ_OPSET).since_version
                    for op in ops - {"QuantizeLinear", "DequantizeLinear"})
    if not unchanged:
        return model
    redeclared = onnx.ModelProto()
    redeclared.CopyFrom(model)
    next(o for o in redeclared.opset_import if o.domain in ("", "ai.onnx")).version = _REFERENCE_QDQ_OPSET
    return redeclared


# TorchScript ops ranking their first input along ``dim``: exactly equal elements may come in either order.
_RANKING = ("aten::topk", "aten::sort", "aten::argsort")
# Ops whose integer result depends on a float tensor's shape only: not decisions.
_SHAPE_QUERIES = ("aten::size", "aten::_shape_as_tensor", "aten::numel", "aten::dim", "aten::len", "prim::shape",
                  "onnx::Shape", "aten::sym_size")
_INTEGRAL = ("Long", "Int", "Short", "Char", "Byte", "Bool")
# Ops reading some arguments (by position) for their shape or dtype only: those carry no data into the result.
_SHAPE_ONLY_ARGUMENTS = {"aten::expand_as": (1,), "aten::view_as": (1,), "aten::reshape_as": (1,),
                         "aten::type_as": (1,), "aten::zeros_like": (0,), "aten::ones_like": (0,),
                         "aten::empty_like": (0,), "aten::full_like": (0,), "aten::new_zeros": (0,),
                         "aten::new_ones": (0,), "aten::new_empty": (0,), "aten::new_full": (0,)}


def _is_tensor_of(value: torch._C.Value, kinds: tuple[str, ...] | None) -> bool:
    if value.type().kind() != "TensorType":
        return False
    scalar = value.type().scalarType()
    return scalar in kinds if kinds is not None else scalar is not None and scalar not in _INTEGRAL


def _node_reads(node: torch._C.Node) -> list[torch._C.Value]:
    """A TorchScript node's inputs and the outer values its blocks read."""
    reads = inputs_of(node)
    for block in blocks_of(node):
        for inner in block.nodes():
            reads.extend(_node_reads(inner))
        reads.extend(block.returnNode().inputs())
    return reads


def _selections(graph: torch._C.Graph) -> tuple[list[torch._C.Node], set[int]]:
    """The top-level decision nodes (a float tensor computed from the inputs' data in, an integer or bool tensor
    out) and the unique ids of every value computed from one of their results (theirs included). Values computed
    from shapes only (an image's size turned into a resize's output size) carry no data: no decision there."""
    decisions, post = [], set()
    data = {v.unique() for v in graph.inputs()}
    for node in graph.nodes():
        reads = _node_reads(node)
        if node.kind() in _SHAPE_ONLY_ARGUMENTS:
            reads = [v for k, v in enumerate(reads) if k not in _SHAPE_ONLY_ARGUMENTS[node.kind()]]
        if node.kind() not in _SHAPE_QUERIES and any(v.unique() in data for v in reads):
            data.update(v.unique() for v in node.outputs())
        if any(v.unique() in post for v in reads):
            post.update(v.unique() for v in node.outputs())
            continue
        if (node.kind() not in _SHAPE_QUERIES and any(_is_tensor_of(v, None) and v.unique() in data for v in reads)
                and any(_is_tensor_of(v, _INTEGRAL) for v in node.outputs())):
            decisions.append(node)
            post.update(v.unique() for v in node.outputs())
    return decisions, post


def _constant(node: torch._C.Node, argument: str) -> Any:
    """The constant value of ``node``'s argument named ``argument`` (by its schema), or None."""
    try:
        schema = node.schema()
        names = [a.name for a in (torch._C.parse_schema(schema) if isinstance(schema, str) else schema).arguments]
        value = node.inputsAt(names.index(argument))
    except (ValueError, RuntimeError):
        return None
    return value.toIValue() if value.node().kind() == "prim::Constant" else None


def _reads(node: onnx.NodeProto) -> list[str]:
    """The names a node reads: its inputs and the outer-scope names its subgraphs use."""
    names = list(node.input)
    for attribute in node.attribute:
        for graph in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
            defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
            for inner in graph.node:
                names.extend(n for n in _reads(inner) if n not in defined)
                defined.update(inner.output)
    return names


def numpy_helper_value_info(name: str, array: np.ndarray) -> onnx.ValueInfoProto:
    """A tensor ValueInfo with ``array``'s element type and shape."""
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)


def _judge(ort: Agreement, ref: Agreement, ref_vs_ort: Agreement | None) -> Repro:
    """Whose result is right, from ONNX Runtime's and the reference evaluator's agreement with PyTorch (and with
    each other: ``ref_vs_ort``, None when ONNX Runtime could not run the subgraph)."""
    if ref.ok and not ort.ok:
        return Repro(ort, ref, "onnxruntime", "the ONNX reference evaluator computes PyTorch's result from the same "
                     "subgraph and inputs, ONNX Runtime does not: the export is right, ONNX Runtime diverges")
    if not ref.ok and ref_vs_ort is not None and ref_vs_ort.ok:
        return Repro(ort, ref, "export", "ONNX Runtime and the ONNX reference evaluator agree with each other and "
                     "not with PyTorch: the exported nodes do not compute what PyTorch computes")
    if ref.ok and ort.ok:
        return Repro(ort, ref, "undecided", "the subgraph alone agrees with PyTorch in both runtimes")
    return Repro(ort, ref, "undecided", "PyTorch, ONNX Runtime and the ONNX reference evaluator all disagree")


def _write_backend_test(root: str, model: onnx.ModelProto, inputs: list[tuple[str, np.ndarray]],
                        expected: np.ndarray) -> str:
    """Write ``model`` with its inputs and PyTorch's expected output in the ONNX backend-test layout."""
    data = os.path.join(root, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(root, "model.onnx"))
    for k, (name, array) in enumerate(inputs):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as handle:
            handle.write(numpy_helper.from_array(array, name).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as handle:
        handle.write(numpy_helper.from_array(expected, model.graph.output[0].name).SerializeToString())
    return root
