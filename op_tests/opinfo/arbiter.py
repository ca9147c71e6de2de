"""The arbiter of numeric disagreements: ONNX's own executable specification decides who is wrong.

When ONNX Runtime's outputs differ from PyTorch's, the same model runs in ``onnx.reference.ReferenceEvaluator``.
If the reference agrees with PyTorch, the export is right and ONNX Runtime diverges from the spec
(``runtime_divergence``); the first node whose ONNX Runtime output differs from the reference's, given the
reference's inputs, is written as a one-node model with its data (a repro for an ONNX Runtime issue). Otherwise
the export is wrong (``mismatch``): the reference agrees with ONNX Runtime, or with neither, or cannot run it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from exporter.numerics import Tolerance, compare_arrays


@dataclass
class Ruling:
    status: str  # runtime_divergence | mismatch
    text: str  # what the reference said, for the row's "arbiter" field
    repro: str | None = None  # directory of the one-node repro (runtime divergences)


def arbitrate(model: onnx.ModelProto, feeds_list: list[dict[str, np.ndarray]], expected_list: list[list[np.ndarray]],
              tolerance: Tolerance, repro_dir: str | None) -> Ruling:
    """Rule on a disagreement between ONNX Runtime and PyTorch over the inputs in ``feeds_list``."""
    from onnx.reference import ReferenceEvaluator

    try:
        evaluator = ReferenceEvaluator(model)
        references = [[np.asarray(x) for x in evaluator.run(None, feeds)] for feeds in feeds_list]
    except Exception as error:  # the reference lacks a kernel or rejects the model: no ruling for the export
        return Ruling("mismatch", f"reference evaluator could not run the model ({type(error).__name__}: "
                                  f"{str(error).splitlines()[0][:200]}); the disagreement stands")
    for expected, reference in zip(expected_list, references, strict=True):
        verdict = compare_arrays(expected, reference, tolerance)
        if not verdict.ok:
            return Ruling("mismatch", f"reference evaluator disagrees with PyTorch too ({verdict.message}): "
                                      "the export is wrong")
    repro = _one_node_repro(model, feeds_list[0], tolerance, repro_dir)
    where = f"; first diverging node: {repro[1]}" if repro else ""
    return Ruling("runtime_divergence", f"reference evaluator agrees with PyTorch: ONNX Runtime diverges{where}",
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
    single = helper.make_model(graph, opset_imports=model.opset_import, producer_name="op_tests.opinfo.arbiter")
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
