"""Validate: the assembled model must pass the full ONNX checker before anything is written."""

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
