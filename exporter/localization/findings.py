"""What :func:`exporter.verify` finds: each compared value's agreement, the first diverging node with its minimal
repro and whose fault it is, the verdict before data-dependent selections, and the result that holds them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from exporter.numerics import ARBITER_AGREEMENT, NONFINITE_WORDS, Verdict
from exporter.program import ONNXProgram
from exporter.provenance import Origin


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
    inputs, the last one producing it; ``node``/``origin`` name that producer and where it came from (the captured
    graph's op, module scope, source line). ``in_model`` is the value's agreement in the full ONNX Runtime run, ``local``
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
    selection's own computation can: a *decision* is a captured graph's node turning float data into integers or bools
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
    decisions: dict[str, int]  # op kind (its TorchScript name: aten::topk) -> decision nodes of that kind
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
    harness's verdict on the outputs; ``capture`` the same comparison of the captured graph's outputs (TorchScript's,
    or the torch.export program's) with the model's (when it fails, the capture recorded something else than the
    model computes, e.g. a Python value baked in, and no conversion is to blame); ``compared`` counts the intermediate values compared; ``first_out_of_tolerance``
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
    export: ONNXProgram = field(repr=False)
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
            lines.append(f"the captured graph already differs from the model: {self.capture.message}")
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


def _nonfinite_part(message: str) -> str:
    """The NaN/Inf disagreement a local check's message names (``; ...``), or "": the max abs error of finite
    values alone would hide it."""
    return f"; {message.split(': ', 1)[-1]}" if NONFINITE_WORDS in message else ""
