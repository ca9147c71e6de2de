"""Shared fixtures for the engine's unit tests."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
import torch


def run_onnx(model_bytes: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run a serialized model on ONNX Runtime's CPU provider."""
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def export_bytes(model, args, **kwargs) -> tuple[bytes, object]:
    import exporter

    buffer = io.BytesIO()
    kwargs.setdefault("dynamo", False)  # the TorchScript capture unless a test asks for torch.export
    result = exporter.export_program(model, args, buffer, **kwargs)
    return buffer.getvalue(), result


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    np.random.seed(0)
