"""exporter.verify(..., judge_selection=True) on a zoo detector (name, opset, check label, static|dynamic): the summary,
the localization facts and the judgment before the selection."""
import json
import sys
import time
import warnings

import exporter
from conformance.localization import localization_facts
from conformance.prepared import WorkerState
from conformance.worker import configure_process

warnings.filterwarnings("ignore")
configure_process()
name, opset, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
state = WorkerState('/tmp')
p = state.prepare(name)
e = p.entry
dyn = e.dynamic_axes if sys.argv[4] == "dynamic" else None
t = time.time()
r = exporter.verify(p.model, p.export_args, opset, check_args=p.checks[label], output_tolerance=e.tolerance,
                    max_local_checks=3000, judge_selection=True,
                    input_names=e.input_names, output_names=e.output_names, dynamic_axes=dyn)
print("verify s", time.time() - t)
print(r.summary())
facts = localization_facts(r, label)
print(json.dumps({k: v for k, v in facts.items() if k != "growth"}, indent=1, default=str)[:3000])
if r.selection and r.selection.divergence:
    d = r.selection.divergence
    print("selection divergence", d.node, d.origin, d.repro.culprit, d.repro.explanation, d.local)
