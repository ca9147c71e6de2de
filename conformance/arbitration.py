"""Arbitration: the one policy for a disagreement between ONNX Runtime and PyTorch, and the two independent
references that may clear the export.

A disagreement beyond tolerance stands, and the export is judged wrong (``mismatch``), unless an independent reference
clears the export:

- PyTorch in float64 (:class:`Float64Run`): ONNX Runtime is as close to the float64 result as PyTorch's own float32
  run is (``exporter.numerics.judge_by_float64``). Both are float32 roundings of one computation, which deep networks
  amplify past any fixed tolerance: the export passes (``pass``).
- ONNX's executable specification, ``onnx.reference.ReferenceEvaluator`` (:class:`ReferenceEvaluatorRun`): the
  exported model, run by the reference, agrees with PyTorch, so the export is right and ONNX Runtime departs from the
  specification (``runtime_divergence``). The first node whose ONNX Runtime output, given the reference's inputs,
  differs from the reference's is written as a one-node model with its data (a repro for an ONNX Runtime issue).

A reference that agrees with neither side, or cannot run, clears nothing. Model cases ask the float64 run, check
input by check input (the reference evaluator is too slow for their graphs); OpInfo samples ask the reference
evaluator once their own judgments (ties, float16 rounding) have not settled the disagreement.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import onnx
from onnx import helper, numpy_helper

from exporter.numerics import Tolerance, compare_arrays, judge_by_float64


@dataclass
class Disagreement:
    """PyTorch's outputs (``expected``) and ONNX Runtime's (``actual``) on each check input, which differ beyond
    ``tolerance``; ``atol`` is the largest absolute tolerance the comparison applied."""

    expected: list[list[np.ndarray]]
    actual: list[list[np.ndarray]]
    tolerance: Tolerance
    atol: float


@dataclass
class Ruling:
    status: str  # mismatch (the disagreement stands), or the status the reference clears the export as
    text: str  # what the reference said: the row's "arbiter" field, or its comparison's last words
    repro: str | None = None  # directory of the one-node repro (runtime divergences)


@dataclass
class Testimony:
    """What a reference said: whether it clears the export, in words, with the repro it wrote (if any)."""

    clears_export: bool
    text: str
    repro: str | None = None


def arbitrate(disagreement: Disagreement, reference: Float64Run | ReferenceEvaluatorRun) -> Ruling:
    """Rule on ``disagreement``: it stands as a mismatch unless ``reference`` clears the export, which then gets the
    reference's status (see the module docstring)."""
    testimony = reference.testify(disagreement)
    return Ruling(reference.clears_as if testimony.clears_export else "mismatch", testimony.text, testimony.repro)


@dataclass
class Float64Run:
    """PyTorch's outputs on the same check inputs with the model and its float inputs in float64, computed when
    ``outputs()`` is called (it may raise: then there is no arbitration)."""

    outputs: Callable[[], list[list[np.ndarray]]]
    clears_as: ClassVar[str] = "pass"

    def testify(self, disagreement: Disagreement) -> Testimony:
        try:
            exact = self.outputs()
        except Exception as error:
            return Testimony(False, f"float64 arbitration impossible: {type(error).__name__}: {str(error)[:200]}")
        decisions = [judge_by_float64(expected, actual, outputs, disagreement.atol) for expected, actual, outputs
                     in zip(disagreement.expected, disagreement.actual, exact, strict=True)]
        failed = [decision for decision in decisions if not decision.ok]
        decision = failed[0] if failed else decisions[0]
        return Testimony(not failed, decision.comparison or decision.message)


@dataclass
class ReferenceEvaluatorRun:
    """The exported ``model`` run by ``onnx.reference.ReferenceEvaluator`` on the check inputs' ``feeds``; a
    one-node repro of a runtime divergence goes under ``repro_dir`` (none where it is None)."""

    model: onnx.ModelProto
    feeds: list[dict[str, np.ndarray]]
    repro_dir: str | None
    clears_as: ClassVar[str] = "runtime_divergence"

    def testify(self, disagreement: Disagreement) -> Testimony:
        from onnx.reference import ReferenceEvaluator

        try:
            evaluator = ReferenceEvaluator(self.model)
            references = [[np.asarray(x) for x in evaluator.run(None, feeds)] for feeds in self.feeds]
        except Exception as error:  # the reference lacks a kernel or rejects the model: it clears nothing
            return Testimony(False, f"reference evaluator could not run the model ({type(error).__name__}: "
                                    f"{str(error).splitlines()[0][:200]}); the disagreement stands")
        for expected, reference in zip(disagreement.expected, references, strict=True):
            verdict = compare_arrays(expected, reference, disagreement.tolerance)
            if not verdict.ok:
                return Testimony(False, f"reference evaluator disagrees with PyTorch too ({verdict.message}): "
                                        "the export is wrong")
        repro = _one_node_repro(self.model, self.feeds[0], disagreement.tolerance, self.repro_dir)
        where = f"; first diverging node: {repro[1]}" if repro else ""
        return Testimony(True, f"reference evaluator agrees with PyTorch: ONNX Runtime diverges{where}",
                         repro[0] if repro else None)


def _one_node_repro(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tolerance: Tolerance,
                    repro_dir: str | None) -> tuple[str | None, str] | None:
    """The first top-level node whose ONNX Runtime output, fed the reference's inputs, differs from the
    reference's output: (repro directory or None, 'OpType(name)')."""
    from onnx.reference import ReferenceEvaluator

    from exporter.ort_session import make_session

    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    values.update(feeds)
    values.update(ReferenceEvaluator(model).run(None, feeds, intermediate=True))
    for node in model.graph.node:
        inputs = [name for name in node.input if name]
        if any(name not in values for name in inputs) or any(name not in values for name in node.output):
            continue
        single = _single_node_model(model, node, [values[n] for n in inputs], [values[n] for n in node.output])
        try:
            session = make_session(single.SerializeToString(), "cpu")
            actual = session.run(None, {name: values[name] for name in inputs})
        except Exception:
            continue
        if not compare_arrays([np.asarray(values[n]) for n in node.output], actual, tolerance).ok:
            label = f"{node.op_type}({node.name or node.output[0]})"
            path = _write_repro(repro_dir, single, {n: values[n] for n in inputs}, {n: values[n] for n in node.output},
                                label) if repro_dir else None
            return path, label
    return None


def _single_node_model(model: onnx.ModelProto, node: onnx.NodeProto, inputs: list, outputs: list) -> onnx.ModelProto:
    def info(name: str, value) -> onnx.ValueInfoProto:
        array = np.asarray(value)
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)

    names = [n for n in node.input if n]
    graph = helper.make_graph([node], "one_node_repro", [info(n, v) for n, v in zip(names, inputs, strict=True)],
                              [info(n, v) for n, v in zip(node.output, outputs, strict=True)])
    single = helper.make_model(graph, opset_imports=model.opset_import, producer_name="conformance.arbitration")
    single.ir_version = model.ir_version
    return single


def _write_repro(root: str, single: onnx.ModelProto, inputs: dict, outputs: dict, label: str) -> str:
    """model.onnx plus test_data_set_0/{input,output}_k.pb (the reference's values), the ONNX backend-test layout."""
    target = os.path.join(root, re.sub(r"[^A-Za-z0-9_.-]", "_", label))
    data = os.path.join(target, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(single, os.path.join(target, "model.onnx"))
    for prefix, values in (("input", inputs), ("output", outputs)):
        for index, (name, value) in enumerate(values.items()):
            with open(os.path.join(data, f"{prefix}_{index}.pb"), "wb") as handle:
                handle.write(numpy_helper.from_array(np.asarray(value), name).SerializeToString())
    with open(os.path.join(target, "README.json"), "w", encoding="utf-8") as handle:
        json.dump({"node": label, "expected": "outputs of onnx.reference.ReferenceEvaluator (agreeing with PyTorch)",
                   "actual": "ONNX Runtime CPU differs on these inputs"}, handle, indent=1)
    return target
