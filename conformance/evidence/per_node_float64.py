"""Per node of EfficientNet-B7: ONNX Runtime's and PyTorch's float32 results of that node alone (fed PyTorch's own
inputs) against PyTorch's float64 result of the same node on the same inputs: whose kernels round more, per op."""
import collections
import io
import sys
import warnings

import numpy as np
import torch

import exporter
from conformance.prepared import WorkerState
from conformance.worker import configure_process
from exporter.frontends.base import flatten, split_args
from exporter.localization.verifier import Verifier
from exporter.ort_session import make_session

warnings.filterwarnings("ignore")
configure_process()
name, opset = sys.argv[1], int(sys.argv[2])
state = WorkerState('/tmp')
p = state.prepare(name)
e = p.entry
result = exporter.export_program(p.model, p.export_args, io.BytesIO(), opset_version=opset, input_names=e.input_names, output_names=e.output_names, dynamo=False)
flat_inputs, _ = flatten(split_args(p.checks["input 0"]), numbers_as_tensors=True)
ts_inputs = list(flat_inputs) + [t for _, t in result.capture.params]
with torch.no_grad():
    eager = p.model(*p.checks["input 0"])
ver = Verifier(result, ts_inputs, e.tolerance, None, 3000)
r = ver.run(eager)
names = [n for n in ver.pairs if ver.expected[n].dtype == np.float32 and not ver.pairs[n].node().kind().startswith("prim::")]
exact = ver.graph.float64_values([ver.pairs[n] for n in names])
per_op = collections.defaultdict(lambda: [0.0, 0.0, 0])
rows = []
for n in names:
    sub, boundary = ver._subgraph(n)
    local = ver._local_model(n, sub, boundary)
    feeds = {b: ver._boundary_value(b) for b in boundary}
    got = make_session(local.SerializeToString(), "cpu").run([n], feeds)[0].astype(np.float64)
    x = exact[ver.graph.key(ver.pairs[n])].astype(np.float64)
    scale = max(np.abs(x).max(), 1e-30)
    ort_off = np.abs(got - x).max() / scale
    torch_off = np.abs(ver.expected[n].astype(np.float64) - x).max() / scale
    kind = ver.pairs[n].node().kind()
    per_op[kind][0] += ort_off
    per_op[kind][1] += torch_off
    per_op[kind][2] += 1
    rows.append([n, kind, ort_off, torch_off])
print("per op: mean |ORT - float64| / scale, mean |PyTorch float32 - float64| / scale, count, ratio")
for kind, (o, t, c) in sorted(per_op.items(), key=lambda kv: -kv[1][2]):
    print(f"{kind:32s} {o/c:.3e} {t/c:.3e} {c:4d} {o/t if t else float('inf'):.2f}")

