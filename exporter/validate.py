"""Validate: the assembled model must pass the full ONNX checker before anything is written.

A model written inline is checked as its skeleton (``tensor_bytes.StreamedWeights.declared``): the ModelProto with
each large weight declared as a graph input of its element type and shape instead of held as an initializer. The
checker's full check (graph structure, schemas, types, full shape inference) reads nothing else of a weight; the
one rule it has for a weight's payload, one data field of the size its type and shape need, holds by construction
for a weight written from its array. The weights are thereby serialized once, into the file.
"""

from __future__ import annotations

import onnx

from exporter.errors import CheckerError


def check(model_or_path: onnx.ModelProto | bytes | str) -> None:
    """Run ``onnx.checker.check_model(full_check=True)`` on a model, its serialized bytes or its file (a model
    with external data is checked on its file); a failure is a :class:`CheckerError`."""
    try:
        onnx.checker.check_model(model_or_path, full_check=True)
    except Exception as error:
        raise CheckerError(f"the exported model fails the ONNX checker: {error}") from error
