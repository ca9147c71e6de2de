"""exporter.verify on a zoo model (name, opset, check label, [max local checks]): the summary, then every compared value
as JSON: [onnx name, TorchScript op, module scope, within the per-operator tolerance in the full run, max abs error,
scale, max abs error / scale], in graph order (the error growth along the graph)."""
import io
import json
import sys
import time
import warnings

import torch

import exporter
from conformance.prepared import WorkerState
from conformance.worker import configure_process
from exporter.frontends.base import flatten, split_args
from exporter.localization.verifier import Verifier

warnings.filterwarnings("ignore")
configure_process()
name, opset, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
state = WorkerState('/tmp')
p = state.prepare(name)
e = p.entry
dyn = e.dynamic_axes if label.startswith('dynamic') else None
t = time.time()
result = exporter.export_program(p.model, p.export_args, io.BytesIO(), opset_version=opset, input_names=e.input_names, output_names=e.output_names, dynamic_axes=dyn, dynamo=False)
check_args = p.checks[label]
flat_inputs, _ = flatten(split_args(check_args), numbers_as_tensors=True)
ts_inputs = list(flat_inputs) + [tensor for _, tensor in result.capture.params]
with torch.no_grad():
    eager = p.model(*split_args(check_args)[0])
ver = Verifier(result, ts_inputs, e.tolerance, None, int(sys.argv[4]) if len(sys.argv) > 4 else 3000)
r = ver.run(eager)
print('verify s', time.time() - t)
print(r.summary())
rows = []
for n in ver.pairs:
    a = ver._in_model(n)
    rows.append([n, a.origin.kind if a.origin else '', a.origin.scope if a.origin else '', a.ok, a.max_abs, a.scale, a.max_abs / a.scale if a.scale else a.max_abs])
json.dump({'summary': r.summary(), 'local_checks': r.local_checks, 'arbitrated': r.float64_arbitrated, 'values': rows}, sys.stdout)
print('out of tol in model:', sum(1 for x in rows if not x[3]), 'of', len(rows))
