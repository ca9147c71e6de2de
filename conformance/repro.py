"""Repro bundles: everything needed to reproduce a failing case without PyTorch or this project.

Layout (ONNX backend-test style)::

    <root>/<case id with '/' -> '__'>/
        model.onnx                  the exported model (absent when export itself failed) + external data
        test_data_set_0/input_0.pb  the graph's inputs, in its order, as TensorProto named after them, each holding the
                                    caller's value of that name (conformance.feeds); then input_1.pb, ...
        test_data_set_0/output_0.pb PyTorch's outputs (absent when the reference was not computed)
        test_data_set_1/...         the second input size of a dynamic case, then any extra checks
        localization/               exporter.verify's minimal repro of the first diverging node (same layout)
        case.json                   the results row
"""

from __future__ import annotations

import json
import os
import re
import shutil

from onnx import numpy_helper

from conformance.feeds import as_array, model_inputs


def bundle_dir(root: str, case_id: str) -> str:
    return os.path.join(root, re.sub(r"[^A-Za-z0-9_.-]", "_", case_id.replace("/", "__")))


def write_bundle(root: str, row: dict, artifacts: dict) -> str:
    """Write the bundle for ``row`` and return its directory."""
    target = bundle_dir(root, row["case_id"])
    shutil.rmtree(target, ignore_errors=True)
    os.makedirs(target)
    model_dir = artifacts.get("model_dir")
    graph_inputs: list | None = None
    if model_dir and os.path.exists(os.path.join(model_dir, "model.onnx")):
        for name in os.listdir(model_dir):
            if os.path.isfile(os.path.join(model_dir, name)):  # the model and its external data, not the localization
                shutil.copy2(os.path.join(model_dir, name), os.path.join(target, name))
        graph_inputs = _graph_inputs(os.path.join(target, "model.onnx"))
    for index, (values, outputs) in enumerate(artifacts.get("checks", {}).values()):
        data_dir = os.path.join(target, f"test_data_set_{index}")
        os.makedirs(data_dir)
        for k, (name, array) in enumerate(_named_inputs(graph_inputs, values)):
            _save(os.path.join(data_dir, f"input_{k}.pb"), numpy_helper.from_array(array, name))
        for k, array in enumerate(outputs or []):
            _save(os.path.join(data_dir, f"output_{k}.pb"), numpy_helper.from_array(array, f"output_{k}"))
    if artifacts.get("localization_dir"):
        shutil.copytree(artifacts["localization_dir"], os.path.join(target, "localization"))
    with open(os.path.join(target, "case.json"), "w", encoding="utf-8") as handle:
        json.dump(row, handle, indent=2, default=str)
    return target


def _graph_inputs(path: str) -> list:
    import onnx

    return model_inputs(onnx.load(path, load_external_data=False))


def _named_inputs(graph_inputs: list | None, values: dict) -> list:
    """The check's inputs as the model takes them: each graph input, in the graph's order, with the caller's value of
    its name (a graph input without one is left out: the row says so); without a model, every value the caller
    named."""
    if graph_inputs is None:
        return [(name, as_array(value, None)) for name, value in values.items()]
    return [(name, as_array(values[name], dtype)) for name, dtype in graph_inputs if name in values]


def _save(path: str, tensor) -> None:
    with open(path, "wb") as handle:
        handle.write(tensor.SerializeToString())
