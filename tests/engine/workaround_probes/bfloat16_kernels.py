"""Which ops ONNX Runtime's CPU provider runs on bfloat16, per opset (opset 22 widened most ops' ONNX types to
bfloat16; a kernel is ONNX Runtime's own choice). Each op runs alone between Casts (float32 inputs cast to bfloat16,
its bfloat16 result cast back), as an export writes it:

    python -m tests.engine.workaround_probes.bfloat16_kernels [OPSET ...]      (default 13 20 21 22 23 24 25 26)

prints a row per op: ``runs``, ``no kernel`` (ONNX Runtime NOT_IMPLEMENTED) or ``not in ONNX`` (the op takes no
bfloat16 at that opset). The result decides ``bfloat16_arithmetic_in_float`` (exporter/lowering/runtime.py); its
probes at 13, 22 and 26 (elementwise.py) keep the answer for Add/Sub/Mul/Div checked in the test suite."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

BFLOAT16 = TensorProto.BFLOAT16
# op -> (inputs, attributes, whether its output is bfloat16 (else bool))
OPS: dict[str, tuple[int, dict, bool]] = {
    **{op: (2, {}, True) for op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "MatMul")},
    **{op: (1, {}, True) for op in ("Neg", "Abs", "Sqrt", "Exp", "Log", "Reciprocal", "Relu", "Sigmoid", "Tanh", "Erf",
                                   "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Softmax", "Gelu", "HardSigmoid",
                                   "Softplus", "Elu", "LeakyRelu", "Clip", "Identity", "Transpose")},
    **{op: (1, {"keepdims": 0}, True) for op in ("ReduceSum", "ReduceMean", "ReduceMax")},
    **{op: (2, {}, False) for op in ("Equal", "Less", "Greater")},
    "IsNaN": (1, {}, False),
    "Where": (3, {}, True),
}
_IR_VERSION = {21: 10, 22: 10, 23: 11, 24: 12, 25: 13, 26: 13}


def _model(op: str, opset: int) -> onnx.ModelProto:
    count, attributes, bfloat16_out = OPS[op]
    inputs, nodes, operands = [], [], []
    for i in range(count):
        if op == "Where" and i == 0:
            inputs.append(helper.make_tensor_value_info("x0", TensorProto.BOOL, [3, 4]))
            operands.append("x0")
            continue
        shape = [4, 3] if op == "MatMul" and i == 1 else [3, 4]
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, shape))
        nodes.append(helper.make_node("Cast", [f"x{i}"], [f"b{i}"], to=BFLOAT16))
        operands.append(f"b{i}")
    nodes.append(helper.make_node(op, operands, ["y"], **attributes))
    if bfloat16_out:
        nodes.append(helper.make_node("Cast", ["y"], ["out"], to=TensorProto.FLOAT))
    out = helper.make_tensor_value_info("out" if bfloat16_out else "y",
                                        TensorProto.FLOAT if bfloat16_out else TensorProto.BOOL, _output_shape(op))
    model = helper.make_model(helper.make_graph(nodes, op, inputs, [out]),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = _IR_VERSION.get(opset, 9)
    return model


def _output_shape(op: str) -> list[int]:
    if op.startswith("Reduce"):
        return []
    return {"MatMul": [3, 3], "Transpose": [4, 3]}.get(op, [3, 4])


def _feeds(op: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for i in range(OPS[op][0]):
        shape = (4, 3) if op == "MatMul" and i == 1 else (3, 4)
        feeds[f"x{i}"] = (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)
    if op == "Where":
        feeds["x0"] = rng.standard_normal((3, 4)) > 0
    return feeds


def kernel_status(op: str, opset: int) -> str:
    model = _model(op, opset)
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return "not in ONNX"
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        session.run(None, _feeds(op))
    except Exception as error:  # ONNX Runtime raises its own exception classes
        if "NOT_IMPLEMENTED" in str(error):
            return "no kernel"
        return f"error: {str(error).splitlines()[0][:60]}"
    return "runs"


def main(argv: list[str]) -> None:
    opsets = [int(a) for a in argv] or [13, 20, 21, 22, 23, 24, 25, 26]
    print(f"ONNX Runtime {ort.__version__} CPU, bfloat16 kernels per opset")
    print(f"{'op':12} " + " ".join(f"{o:>11}" for o in opsets))
    for op in OPS:
        print(f"{op:12} " + " ".join(f"{kernel_status(op, o):>11}" for o in opsets))


if __name__ == "__main__":
    main(sys.argv[1:])
