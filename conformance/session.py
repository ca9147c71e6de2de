"""What the harness knows about sessions on a GPU: whether CUDA cases can run on this machine, the GPU's name, and
whether a session fell back from CUDA. Sessions themselves come from ``exporter.ort_session.make_session``."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import tempfile

import torch

from exporter.ort_session import make_session


@functools.lru_cache(maxsize=1)
def gpu_name() -> str:
    """The name of the GPU that CUDA cases run on, recorded in their rows."""
    return torch.cuda.get_device_name(0)


def fell_back(session, provider: str) -> bool:
    """Whether a session asked for ``provider`` runs without it: ONNX Runtime falls back to CPU without raising
    when its CUDA provider cannot start."""
    return provider == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider"


NO_GPU = "no CUDA device on this machine (torch.cuda.is_available() is False)"


@functools.lru_cache(maxsize=1)
def cuda_environment() -> tuple[str, str]:
    """(status, reason) for CUDA cases on this machine: ("", "") when they can run; ("skipped", why) without a
    GPU; ("env_error", why) when PyTorch sees a GPU but ONNX Runtime cannot use it (no CUDAExecutionProvider in
    this build, or a provider that fails to start and falls back to CPU: missing or mismatched CUDA/cuDNN
    libraries). Checked once per worker with a one-node probe model, so the cause shows before any export."""
    import onnxruntime as ort

    if not torch.cuda.is_available():
        return "skipped", NO_GPU
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return "env_error", (f"PyTorch sees a GPU but this ONNX Runtime ({ort.__version__}) has no CUDAExecutionProvider "
                             f"(providers: {ort.get_available_providers()}); is the CPU-only onnxruntime package "
                             "installed over onnxruntime-gpu?")
    try:
        with _captured_stderr() as logged:
            providers = make_session(_probe_model(), "cuda").get_providers()
    except Exception as error:
        return "env_error", f"PyTorch sees a GPU but ONNX Runtime cannot create a CUDA session: {type(error).__name__}: {error}"
    if providers[0] != "CUDAExecutionProvider":
        return "env_error", ("PyTorch sees a GPU but ONNX Runtime could not start CUDAExecutionProvider and fell back to "
                             f"{providers}: {_last_lines(''.join(logged))}")
    return "", ""


def _probe_model() -> bytes:
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "cuda_probe",
                              [value("x", TensorProto.FLOAT, [1])], [value("y", TensorProto.FLOAT, [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()


@contextlib.contextmanager
def _captured_stderr():
    """Collect what the process writes to stderr (file descriptor 2) into the yielded list, as one text on exit:
    ONNX Runtime reports why a provider failed there, not as an exception."""
    captured: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as log:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            captured.append(log.read())


def _last_lines(text: str, count: int = 3) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in text.splitlines()]
    return " | ".join([line for line in lines if line][-count:]) or "ONNX Runtime logged no reason"
