"""Shared fixtures of the tests, and their kinds: each test module lives in the folder of its kind, and its tests
carry the kind's marker (``pytest -m harness`` or ``pytest tests/harness`` runs one kind):

- ``tests/engine``: the export engine's behaviour (the API and its two contracts, the op library, verify, the CLI);
- ``tests/harness``: the harness that proves it (conformance runner, gate, pool, feeds, reports, model zoo, op tier tools);
- ``tests/architecture``: the rules of the code (import layers and circles, module size, the hard line, packaging);
- ``tests/docs``: the documents (links, the README's examples and contracts, the documented op lists).
"""

from __future__ import annotations

import io
import pathlib

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


KINDS = ("engine", "harness", "architecture", "docs")


def pytest_collection_modifyitems(config, items):
    """Mark each test under ``tests/<kind>/`` with its kind (the markers are declared in pyproject.toml)."""
    here = pathlib.Path(__file__).parent
    for item in items:
        path = pathlib.Path(str(item.path))
        kind = path.relative_to(here).parts[0] if path.is_relative_to(here) else None
        if kind in KINDS:
            item.add_marker(getattr(pytest.mark, kind))
