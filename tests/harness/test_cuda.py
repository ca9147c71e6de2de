"""The CUDA path on a real GPU: ONNX Runtime's CUDA provider really runs, and TF32 is off on both sides.

TF32 rounds float32 operands to 10 mantissa bits. For a 1024-long float32 product that is an error of about 3e-4 of
the result's magnitude, against about 5e-7 in true float32 (measured on the CPU with the operands rounded as TF32
does): a bound of 2e-5 between them tells the two apart, and each test shows with TF32 allowed that it can fail.

Without a GPU these tests skip; with a GPU whose ONNX Runtime cannot run CUDA they fail, never skip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from conformance.session import NO_GPU, cuda_environment
from conformance.worker import configure_process
from exporter.ort_session import make_session

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)]

SIZE = 1024
TF32_FREE_BOUND = 2e-5


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((SIZE, SIZE)).astype(np.float32),
            rng.standard_normal((SIZE, SIZE)).astype(np.float32))


def _relative_error(result, a: np.ndarray, b: np.ndarray) -> float:
    reference = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.abs(np.asarray(result, dtype=np.float64) - reference).max() / np.abs(reference).max())


def _matmul_model() -> bytes:
    square = [SIZE, SIZE]
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "tf32_probe",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, square),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, square)],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, square)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()


def _tf32_capable() -> bool:
    return torch.cuda.get_device_capability() >= (8, 0)


def test_onnxruntime_cuda_provider_is_active():
    status, reason = cuda_environment()
    assert status == "", reason


def test_onnxruntime_cuda_matmul_is_float32_not_tf32():
    import onnxruntime as ort

    a, b = _operands()
    session = make_session(_matmul_model(), "cuda")
    assert session.get_providers()[0] == "CUDAExecutionProvider", session.get_providers()
    error = _relative_error(session.run(None, {"a": a, "b": b})[0], a, b)
    assert error < TF32_FREE_BOUND, f"ONNX Runtime's CUDA MatMul errs {error:.2e}: TF32 is on"
    if _tf32_capable():
        allowed = ort.InferenceSession(_matmul_model(), providers=[("CUDAExecutionProvider", {"use_tf32": 1})])
        tf32_error = _relative_error(allowed.run(None, {"a": a, "b": b})[0], a, b)
        assert tf32_error > TF32_FREE_BOUND, f"with TF32 allowed the error is {tf32_error:.2e}: this test cannot tell"


def test_pytorch_reference_matmul_is_float32_not_tf32():
    a, b = _operands()
    configure_process()
    on_gpu = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    error = _relative_error(torch.matmul(*on_gpu).cpu().numpy(), a, b)
    assert error < TF32_FREE_BOUND, f"PyTorch's CUDA matmul errs {error:.2e}: TF32 is on"
    if _tf32_capable():
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            tf32_error = _relative_error(torch.matmul(*on_gpu).cpu().numpy(), a, b)
        finally:
            configure_process()
        assert tf32_error > TF32_FREE_BOUND, f"with TF32 allowed the error is {tf32_error:.2e}: this test cannot tell"


def test_pytorch_reference_convolution_is_float32_not_tf32():
    """cuDNN's flag is separate from the matmul one; a 1x1 convolution over 1024 channels is the same product."""
    a, b = _operands()
    configure_process()
    image = torch.from_numpy(b).reshape(1, SIZE, SIZE, 1).cuda()
    weight = torch.from_numpy(a).reshape(SIZE, SIZE, 1, 1).cuda()
    result = torch.nn.functional.conv2d(image, weight).reshape(SIZE, SIZE).cpu().numpy()
    error = _relative_error(result, a, b)
    assert error < TF32_FREE_BOUND, f"PyTorch's cuDNN convolution errs {error:.2e}: TF32 is on"


@pytest.mark.parametrize("name, opset", [("mobilenet_v3_small", 16), ("quantized_shufflenet_v2_x0_5", 13)])
def test_zoo_models_pass_on_cuda(name, opset, tmp_path):
    """A float model with PyTorch's reference on the GPU, and a quantized one with its reference on the CPU."""
    from conformance.cases import select
    from conformance.prepared import WorkerState
    from conformance.worker import run_conformance_case

    configure_process()
    (case,) = select(tier="full", opsets=(opset,), modes=("static",), providers=("cuda",), models=[name])
    row = run_conformance_case(case.as_dict(), WorkerState(str(tmp_path)), str(tmp_path / "repro"))
    assert row["status"] == "pass", (row["status"], row["error"], row["reason"])
    assert row["session_providers"][0] == "CUDAExecutionProvider" and row["gpu"] == torch.cuda.get_device_name(0)
    assert ("computed on the CPU" in row["comparison"]) == name.startswith("quantized_"), row["comparison"]


def test_op_cases_run_on_the_cuda_provider():
    from conformance.op_runner import run_case
    from opcases import all_cases

    (case,) = [c for c in all_cases() if c.name == "matmul_2d_2d"]
    row = run_case(case, 13, True, "cuda")
    assert row["status"] == "pass", row["error"]
    assert row["session_providers"][0] == "CUDAExecutionProvider" and row["gpu"] == torch.cuda.get_device_name(0)
