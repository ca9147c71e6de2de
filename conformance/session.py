"""What the harness records about a session on a GPU. Sessions themselves come from
``exporter.ort_session.make_session``."""

from __future__ import annotations

import functools

import torch


@functools.lru_cache(maxsize=1)
def gpu_name() -> str:
    """The name of the GPU that CUDA cases run on, recorded in their rows."""
    return torch.cuda.get_device_name(0)


def fell_back(session, provider: str) -> bool:
    """Whether a session asked for ``provider`` runs without it: ONNX Runtime falls back to CPU without raising
    when its CUDA provider cannot start."""
    return provider == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider"
