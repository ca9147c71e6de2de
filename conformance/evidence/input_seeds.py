"""EfficientNet-B7, opset 14: over several input seeds, max |logits - PyTorch float64| for PyTorch float32, ORT (the
harness's session) on the default export (Conv+BatchNorm fused) and on the export without the fusion."""
import copy
import importlib
import io
import sys
import warnings

import numpy as np
import torch

import exporter
from conformance.prepared import WorkerState
from conformance.worker import configure_process
from exporter.ort_session import make_session

warnings.filterwarnings("ignore")
passes = importlib.import_module("exporter.passes")
configure_process()
state = WorkerState('/tmp')
p = state.prepare(sys.argv[1])
e = p.entry
model64 = copy.deepcopy(p.model).double().eval()
def export(fuse):
    buf = io.BytesIO()
    saved = passes.fuse_conv_batchnorm
    if not fuse:
        passes.fuse_conv_batchnorm = lambda graph: None
        passes.fuse_conv_batchnorm.__name__ = "fuse_conv_batchnorm"
    try:
        exporter.export(p.model, p.export_args, buf, opset_version=14, dynamo=False)
    finally:
        passes.fuse_conv_batchnorm = saved
    return make_session(buf.getvalue(), "cpu")
fused, unfused = export(True), export(False)
print("seed  torch32  ORT-fused  ORT-unfused  (max |x - float64|)  ratio fused/torch  unfused/torch")
for seed in range(int(sys.argv[2])):
    x = e.inputs(0, 100 + seed)[0]
    with torch.no_grad():
        exact = model64(x.double()).numpy()
        t32 = p.model(x).numpy()
    f = fused.run(None, {fused.get_inputs()[0].name: x.numpy()})[0]
    u = unfused.run(None, {unfused.get_inputs()[0].name: x.numpy()})[0]
    a, b, c = (np.abs(v.astype(np.float64) - exact).max() for v in (t32, f, u))
    print(f"{100+seed}  {a:.3g}  {b:.3g}  {c:.3g}  {b/a:.2f}  {c/a:.2f}", flush=True)
