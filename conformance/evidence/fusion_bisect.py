"""EfficientNet-B7, opset 14, input 0, ORT basic optimizations (the harness's session): the export's Conv+BatchNorm
fusion applied to a subset of the layers only; max |ORT - PyTorch float64| of the logits for each subset."""
import importlib
import io
import sys
import warnings

import numpy as np

import exporter
from conformance.prepared import WorkerState, flat_outputs
from conformance.worker import configure_process
from exporter.ort_session import make_session

warnings.filterwarnings("ignore")
passes = importlib.import_module("exporter.passes")
configure_process()
state = WorkerState('/tmp')
p = state.prepare(sys.argv[1])
exact = flat_outputs(state.float64_reference(p, "cpu", "input 0"))[0].astype(np.float64)
x = p.checks["input 0"][0].numpy()
orig = passes._fusable_conv
def measure(tag, keep):
    count = [0]
    def only(node, users, outputs):
        conv = orig(node, users, outputs)
        if conv is not None and keep(conv):
            count[0] += 1
            return conv
        return None
    passes._fusable_conv = only
    try:
        buf = io.BytesIO()
        exporter.export(p.model, p.export_args, buf, opset_version=14, dynamo=False)
    finally:
        passes._fusable_conv = orig
    s = make_session(buf.getvalue(), "cpu")
    out = s.run(None, {s.get_inputs()[0].name: x})[0]
    print(f"{tag:40s} {count[0]:4d} fused: ORT vs float64 {np.abs(out - exact).max():.3g}", flush=True)
measure("depthwise convs only", lambda c: c.attrs.get("group", 1) > 1)
measure("ordinary convs only", lambda c: c.attrs.get("group", 1) == 1)
measure("1x1 convs only", lambda c: list(c.attrs.get("kernel_shape", [])) == [1, 1])
measure("convs with a bias input only", lambda c: len(c.inputs) > 2 and c.inputs[2] is not None)
