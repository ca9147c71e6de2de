"""The node-by-node judgments of a model case's disagreement, by ``exporter.verify``: where the first diverging node
is and whose fault (localization), whether a float mismatch is rounding grown along the graph, and a detector judged
before its data-dependent selection."""

from __future__ import annotations

import os
from typing import Any

from conformance.prepared import Prepared, prepared_capture
from conformance.schema import truncated


def rounding_only(entry, failing: list) -> bool:
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


def _capture_options(prepared: Prepared, dynamic_axes, dynamo: bool) -> dict:
    """``exporter.verify``'s capture options for the row's capture: the worker's own capture (TorchScript's, or
    with ``dynamo`` torch.export's for these ``dynamic_axes``), reused rather than captured again."""
    return {"dynamo": dynamo, "captured": prepared_capture(prepared.captures, prepared.model, prepared.export_args,
                                                           dynamo=dynamo, dynamic_axes=dynamic_axes,
                                                           input_names=prepared.entry.input_names)}


def judge_rounding_growth(prepared: Prepared, row: dict, opset: int, dynamic_axes, failing: list, first,
                          dynamo: bool = False) -> None:
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
                                         dynamic_axes=dynamic_axes, **_capture_options(prepared, dynamic_axes, dynamo))
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
# Local checks per localization: enough for the graphs of the zoo, bounded so a localization fits the case's time.
LOCAL_CHECKS = 300


def localize(prepared: Prepared, row: dict, artifacts: dict, opset: int, dynamic_axes, label: str, workdir: str,
             dynamo: bool = False):
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
                                 **_capture_options(prepared, dynamic_axes, dynamo))
    except Exception as error:
        row["localization"] = {"error": truncated(f"{type(error).__name__}: {error}"), "check": label}
        return None
    row["localization"] = localization_facts(result, label)
    if result.divergence is not None:
        artifacts["localization_dir"] = repro_dir
    return result


def judge_before_selection(prepared: Prepared, row: dict, artifacts: dict, opset: int, dynamic_axes,
                            labels: list[str], workdir: str, mismatch: bool = False, dynamo: bool = False) -> None:
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
                                     dynamic_axes=dynamic_axes, **_capture_options(prepared, dynamic_axes, dynamo))
        except Exception as error:
            if not mismatch:
                row.update(status="inconclusive", reason="every final detection on a near-tie, and judging before "
                           f"the selection failed ({label}): {type(error).__name__}: {str(error)[:500]}")
            row["localization"] = {"error": truncated(f"{type(error).__name__}: {error}"), "check": label}
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
                         node=_producer_name(result.export.model_proto, failure.value),
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
