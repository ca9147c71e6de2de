"""The one way this project opens an ONNX Runtime session, for model cases and op tests alike."""

from __future__ import annotations


def make_session(model: str | bytes, provider: str):
    """A session on ``provider`` ('cpu' or 'cuda') for a model path or serialized model.

    One thread (the harness parallelises across processes), basic graph optimizations only (constant folding,
    redundant-node removal: semantics-preserving and cheap), and TF32 off on CUDA so float32 compares like CPU.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    if provider == "cuda":
        providers = [("CUDAExecutionProvider", {"use_tf32": 0}), "CPUExecutionProvider"]
    else:
        providers = ["CPUExecutionProvider"]
    return ort.InferenceSession(model, options, providers=providers)


def fell_back(session, provider: str) -> bool:
    """Whether a session asked for ``provider`` runs without it: ONNX Runtime falls back to CPU without raising
    when its CUDA provider cannot start."""
    return provider == "cuda" and session.get_providers()[0] != "CUDAExecutionProvider"
