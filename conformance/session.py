"""What the harness checks of a session on a GPU. Sessions themselves come from
``exporter.ort_session.make_session``."""

from __future__ import annotations


def fell_back(session, provider: str) -> bool:
    """Whether a session asked for ``provider`` runs without it: ONNX Runtime falls back to CPU without raising
    when its CUDA provider cannot start."""
    return provider == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider"
