"""The one way this project opens an ONNX Runtime session: :func:`exporter.verify`'s runs and the conformance
harness's model cases and op tests alike.

The graph optimization level is the harness's knob (``python -m conformance run --ort-level``), read here from the
environment so that verify, which the harness calls to localize a mismatch, runs its sessions at the same level.
"""

from __future__ import annotations

import os

# ONNX Runtime's graph optimization levels by the names the harness takes. "basic" (constant folding, redundant-node
# removal) is the harness's default; "all" is ONNX Runtime's own default, what a plain InferenceSession(path) gets:
# on top, the op fusions (GELU, LayerNorm, attention, QDQ into QLinear ops) and the CPU's NCHWc layout.
ORT_LEVELS = ("basic", "extended", "all")
ORT_LEVEL_VARIABLE = "CONFORMANCE_ORT_LEVEL"


def ort_level() -> str:
    """The graph optimization level of the harness's sessions: ``$CONFORMANCE_ORT_LEVEL`` ('basic', 'extended' or
    'all'; ``python -m conformance run --ort-level`` sets it), 'basic' when unset."""
    level = os.environ.get(ORT_LEVEL_VARIABLE) or "basic"
    if level not in ORT_LEVELS:
        raise ValueError(f"{ORT_LEVEL_VARIABLE}={level!r}: expected one of {', '.join(ORT_LEVELS)}")
    return level


def make_session(model: str | bytes, provider: str):
    """A session on ``provider`` ('cpu' or 'cuda') for a model path or serialized model.

    One thread (the harness parallelises across processes), the graph optimizations of :func:`ort_level` (basic by
    default: semantics-preserving and cheap), and TF32 off on CUDA so float32 compares like CPU.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, f"ORT_ENABLE_{ort_level().upper()}")
    if provider == "cuda":
        providers = [("CUDAExecutionProvider", {"use_tf32": 0}), "CPUExecutionProvider"]
    else:
        providers = ["CPUExecutionProvider"]
    return ort.InferenceSession(model, options, providers=providers)

