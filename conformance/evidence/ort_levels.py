"""EfficientNet-B7, opset 14, input 0: the exported model (Conv+BatchNorm fused by the export, the default) and the
export without that fusion, each run by ONNX Runtime at every graph optimization level; max |ORT - PyTorch float64|
and max |ORT - PyTorch float32| of the logits (PyTorch float32 itself deviates 1.9e-5 from float64)."""
import importlib
import io
import sys
import warnings

import numpy as np
import onnxruntime as ort

import exporter
from conformance.prepared import WorkerState, flat_outputs
from conformance.worker import configure_process

warnings.filterwarnings("ignore")
passes = importlib.import_module("exporter.passes")
configure_process()
name, opset = sys.argv[1], int(sys.argv[2])
state = WorkerState('/tmp')
p = state.prepare(name)
exact = flat_outputs(state.float64_reference(p, "cpu", "input 0"))[0].astype(np.float64)
torch32 = flat_outputs(state.reference(p, "cpu", "input 0"))[0]
x = p.checks["input 0"][0].numpy()
print(f"PyTorch float32 vs float64: {np.abs(torch32 - exact).max():.3g}")
def export(fuse):
    buf = io.BytesIO()
    saved = passes.fuse_conv_batchnorm
    if not fuse:
        passes.fuse_conv_batchnorm = lambda graph: None
        passes.fuse_conv_batchnorm.__name__ = "fuse_conv_batchnorm"
    try:
        exporter.export(p.model, p.export_args, buf, opset_version=opset, dynamo=False)
    finally:
        passes.fuse_conv_batchnorm = saved
    return buf.getvalue()
L = ort.GraphOptimizationLevel
for tag, data in (("export fuses Conv+BN (default)", export(True)), ("export without the fusion", export(False))):
    for level in (L.ORT_DISABLE_ALL, L.ORT_ENABLE_BASIC, L.ORT_ENABLE_EXTENDED, L.ORT_ENABLE_ALL):
        o = ort.SessionOptions()
        o.graph_optimization_level = level
        o.intra_op_num_threads = 1
        s = ort.InferenceSession(data, o, providers=["CPUExecutionProvider"])
        out = s.run(None, {s.get_inputs()[0].name: x})[0]
        print(f"{tag:32s} {str(level):40s} vs float64 {np.abs(out - exact).max():.3g}  vs torch float32 {np.abs(out - torch32).max():.3g}")
