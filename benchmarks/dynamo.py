"""``python -m benchmarks.dynamo``: our ``dynamo=True`` export against ``torch.onnx.export(dynamo=True)`` at the
opsets asked, on the benchmark's models: which reaches the opset asked, which runs right, and how long each takes.

torch.onnx's torch.export path translates at opset 18 and reaches other opsets only through ONNX's version converter;
where that fails it hands back the opset-18 model with a warning. "opset written" reads the model's own opset import.
"Runs right": ONNX Runtime (CPU) against PyTorch on the example within rtol = atol = 1e-3. Exports alternate between
the sides; the time is the median of ``--runs`` exports after one warm-up each, in one process.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

import exporter
from benchmarks.__main__ import bench_all
from benchmarks.models import MODELS
from conformance import arguments
from conformance.arguments import StrictParser

# The benchmark's models torch.export can take (the scripted loop is a ScriptModule; the detector's data-dependent
# guards stop torch.export), at the sizes of the benchmark.
DEFAULT_MODELS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16", "swin_t"]


def export_ours(model, args, opset: int, f) -> None:
    exporter.export(model, args, f, opset_version=opset, dynamo=True)


def export_peer(model, args, opset: int, f) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, opset_version=opset, dynamo=True, verbose=False)


SIDES = {"ours": export_ours, "torch.onnx": export_peer}


def _once(export, model, args, opset: int) -> tuple[bytes | None, float, str]:
    f = io.BytesIO()
    start = time.perf_counter()
    try:
        export(model, args, opset, f)
    except Exception as error:  # a failed export is a result of the benchmark
        return None, time.perf_counter() - start, f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
    return f.getvalue(), time.perf_counter() - start, ""


def _opset_written(data: bytes) -> int:
    model = onnx.load_from_string(data)
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


def _runs_right(data: bytes, model, args) -> tuple[bool, float | str]:
    try:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        # not strict: an export drops inputs the model does not read
        feeds = {i.name: a.numpy() for i, a in zip(session.get_inputs(), args, strict=False)}
        actual = session.run(None, feeds)
    except Exception as error:
        return False, f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
    with torch.no_grad():
        expected = model(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    if len(actual) != len(expected):
        return False, f"output count differs: torch {len(expected)}, onnx {len(actual)}"
    errors = [float(np.max(np.abs(a - e.numpy()))) for a, e in zip(actual, expected, strict=True)]
    ok = all(np.allclose(a, e.numpy(), rtol=1e-3, atol=1e-3) for a, e in zip(actual, expected, strict=True))
    return ok, max(errors)


def bench_one(name: str, opset: int, runs: int) -> dict:
    model, args, _ = MODELS[name]()
    row: dict = {"model": name, "opset": opset}
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    outputs: dict[str, bytes | None] = {}
    for attempt in range(runs + 1):  # the first round warms up
        for side, export in SIDES.items():
            data, seconds, error = _once(export, model, args, opset)
            if error:
                row[side] = {"error": error}
                continue
            outputs[side] = data
            if attempt:
                times[side].append(seconds)
        if all("error" in row.get(side, {}) for side in SIDES):
            break
    for side in SIDES:
        if "error" in row.get(side, {}) or side not in outputs:
            continue
        ok, error = _runs_right(outputs[side], model, args)
        row[side] = {"opset_written": _opset_written(outputs[side]), "runs_right": ok, "max_abs_error": error,
                     "export_s": statistics.median(times[side]) if times[side] else None}
    return row


def markdown_table(rows: list[dict]) -> str:
    lines = ["| model | opset asked | ours: opset written | ours: runs right | ours: export s | torch.onnx: opset "
             "written | torch.onnx: runs right | torch.onnx: export s | time ratio (ours / torch.onnx) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = [row["model"], str(row["opset"])]
        for side in SIDES:
            result = row.get(side, {})
            if "error" in result:
                cells += [f"error: {result['error']}", "-", "-"]
            else:
                cells += [str(result["opset_written"]), "yes" if result["runs_right"] else f"no ({result['max_abs_error']})",
                          f"{result['export_s']:.2f}"]
        ours, peer = row.get("ours", {}), row.get("torch.onnx", {})
        ratio = ours.get("export_s") / peer["export_s"] if ours.get("export_s") and peer.get("export_s") else None
        cells.append(f"{ratio:.2f}" if ratio else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog="python -m benchmarks.dynamo", description=__doc__)
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(MODELS), metavar="MODEL",
                        help=f"models (default: {', '.join(DEFAULT_MODELS)})")
    parser.add_argument("--opsets", nargs="+", type=arguments.opsets, default=[(11, 14, 16, 18)],
                        help="opsets, e.g. 11 14 16 18 (default)")
    parser.add_argument("--runs", type=arguments.positive_int, default=3, help="timed exports per side (default 3)")
    parser.add_argument("--out", default="results/bench", help="folder for dynamo.json and dynamo.md")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    rows = bench_all(args.models, args.opsets, lambda model, opset: bench_one(model, opset, args.runs), out, "dynamo")
    table = markdown_table(rows)
    (out / "dynamo.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
