"""The minimal repro of a diverging value: the names an ONNX node reads (its subgraph's boundary), the subgraph made
runnable by ONNX's reference evaluator, whose result is right, and the repro written as an ONNX backend test."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper

from exporter.localization.findings import Agreement, Repro

# onnx.reference implements QuantizeLinear/DequantizeLinear from opset 19 only; their 8-bit forms compute the same
# from opset 10 on.
_REFERENCE_QDQ_OPSET = 19


def for_reference(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as onnx.reference can run it: a subgraph with QuantizeLinear/DequantizeLinear is re-declared at
    opset 19 when every other op it holds has the same definition there (else unchanged, and the evaluator says
    what it lacks)."""
    default = next((o for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    ops = {node.op_type for node in model.graph.node if node.domain in ("", "ai.onnx")}
    if default is None or default.version >= _REFERENCE_QDQ_OPSET or not ops & {"QuantizeLinear", "DequantizeLinear"}:
        return model
    unchanged = all(onnx.defs.get_schema(op, default.version).since_version
                    == onnx.defs.get_schema(op, _REFERENCE_QDQ_OPSET).since_version
                    for op in ops - {"QuantizeLinear", "DequantizeLinear"})
    if not unchanged:
        return model
    redeclared = onnx.ModelProto()
    redeclared.CopyFrom(model)
    next(o for o in redeclared.opset_import if o.domain in ("", "ai.onnx")).version = _REFERENCE_QDQ_OPSET
    return redeclared


def numpy_helper_value_info(name: str, array: np.ndarray) -> onnx.ValueInfoProto:
    """A tensor ValueInfo with ``array``'s element type and shape."""
    return onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)


def judge(ort: Agreement, ref: Agreement, ref_vs_ort: Agreement | None) -> Repro:
    """Whose result is right, from ONNX Runtime's and the reference evaluator's agreement with PyTorch (and with
    each other: ``ref_vs_ort``, None when ONNX Runtime could not run the subgraph)."""
    if ref.ok and not ort.ok:
        return Repro(ort, ref, "onnxruntime", "the ONNX reference evaluator computes PyTorch's result from the same "
                     "subgraph and inputs, ONNX Runtime does not: the export is right, ONNX Runtime diverges")
    if not ref.ok and ref_vs_ort is not None and ref_vs_ort.ok:
        return Repro(ort, ref, "export", "ONNX Runtime and the ONNX reference evaluator agree with each other and "
                     "not with PyTorch: the exported nodes do not compute what PyTorch computes")
    if ref.ok and ort.ok:
        return Repro(ort, ref, "undecided", "the subgraph alone agrees with PyTorch in both runtimes")
    return Repro(ort, ref, "undecided", "PyTorch, ONNX Runtime and the ONNX reference evaluator all disagree")


def write_backend_test(root: str, model: onnx.ModelProto, inputs: list[tuple[str, np.ndarray]],
                        expected: np.ndarray) -> str:
    """Write ``model`` with its inputs and PyTorch's expected output in the ONNX backend-test layout."""
    data = os.path.join(root, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(root, "model.onnx"))
    for k, (name, array) in enumerate(inputs):
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as handle:
            handle.write(numpy_helper.from_array(array, name).SerializeToString())
    with open(os.path.join(data, "output_0.pb"), "wb") as handle:
        handle.write(numpy_helper.from_array(expected, model.graph.output[0].name).SerializeToString())
    return root
