"""``python -m benchmarks.inference``: how fast the exported files run, ours against torch.onnx's two exporters.

Each model (``benchmarks.inference_models``) is exported four ways at each opset asked: ours through TorchScript
(``dynamo=False``) and through torch.export (``dynamo=True``), and ``torch.onnx.export`` with ``dynamo=False`` and
with ``dynamo=True`` (the yardstick; its own default optimization on). Every file is loaded in ONNX Runtime with
``ORT_ENABLE_ALL`` on the CPU with one thread and with all cores (and on CUDA where PyTorch sees a GPU and ONNX Runtime
has the provider; else the CUDA column says why it is skipped), its outputs compared with PyTorch's on the same
inputs, and its latency measured in rounds that alternate the files in one process: each round runs every file
``--runs-per-round`` times; a file's latency is the median of its rounds' mean run times, wall and CPU. Ratios are ours over the
faster of torch.onnx's two files at the same opset and setting. Node counts and file sizes (external data included)
come with each file.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch

import exporter
from benchmarks.inference_models import DEFAULT_MODELS, MODELS, Case
from conformance import arguments
from conformance.arguments import StrictParser

OURS = ("ours_ts", "ours_ex")
PEERS = ("torch_ts", "torch_ex")
SIDES = OURS + PEERS
LABELS = {"ours_ts": "ours (TorchScript)", "ours_ex": "ours (torch.export)",
          "torch_ts": "torch.onnx (dynamo=False)", "torch_ex": "torch.onnx (dynamo=True)"}
RTOL, ATOL = 1e-3, 1e-4  # outputs against PyTorch's; atol also grows with the output's magnitude (see _compare)


def export_file(side: str, case: Case, opset: int, path: str) -> None:
    kwargs = case.export_kwargs()
    if side in OURS:
        exporter.export(case.model, case.args, path, opset_version=opset, dynamo=side == "ours_ex", **kwargs)
        return
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # its progress lines
        warnings.simplefilter("ignore")
        if side == "torch_ex" and case.dynamic_axes:  # its own form of them: it cannot read dynamic_axes of *args
            kwargs = {**kwargs, "dynamic_axes": None, "dynamic_shapes": case.dynamic_shapes()}
        torch.onnx.export(case.model, case.args, path, opset_version=opset, dynamo=side == "torch_ex", **kwargs)


def file_stats(path: str) -> dict:
    """Node count, op histogram, and size on disk of the model and its external data files (if any)."""
    model = onnx.load(path, load_external_data=False)
    histogram = collections.Counter(node.op_type for node in model.graph.node)
    folder = Path(path).parent
    external = {entry.value for init in model.graph.initializer for entry in init.external_data if entry.key == "location"}
    size = os.path.getsize(path) + sum(os.path.getsize(folder / name) for name in external)
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None)
    return {"node_count": len(model.graph.node), "file_size": size, "opset_written": opset,
            "op_histogram": dict(sorted(histogram.items()))}


def _flat(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _flat(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _flat(item)]
    return []


def _compare(actual: list[np.ndarray], expected: list[torch.Tensor]) -> dict:
    if len(actual) != len(expected):
        return {"outputs_ok": False, "output_error": f"{len(actual)} outputs, PyTorch has {len(expected)}"}
    worst, ok = 0.0, True
    for a, e in zip(actual, expected, strict=True):
        e = e.detach().numpy()
        if a.shape != e.shape:
            return {"outputs_ok": False, "output_error": f"shape {a.shape}, PyTorch's {e.shape}"}
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        worst = max(worst, float(np.max(np.abs(a - e))) if e.size else 0.0)
        ok = ok and bool(np.allclose(a, e, rtol=RTOL, atol=ATOL * max(1.0, scale)))
    return {"outputs_ok": ok, "max_abs_error": worst}


def _session(path: str, provider: str, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=[provider])


def _feeds(session: ort.InferenceSession, case: Case) -> dict[str, np.ndarray]:
    """The example's tensors by input name (an export drops inputs the model does not read)."""
    by_name = dict(zip(case.input_names, _flat(case.args), strict=False))
    return {i.name: by_name[i.name].numpy() for i in session.get_inputs()}


def settings() -> dict[str, tuple[str, int] | str]:
    """Each latency setting: (provider, intra-op threads), or the reason it is skipped here."""
    found: dict[str, tuple[str, int] | str] = {"cpu_1_thread": ("CPUExecutionProvider", 1),
                                               f"cpu_{os.cpu_count()}_threads": ("CPUExecutionProvider", 0)}
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        found["cuda"] = "skipped: this ONNX Runtime has no CUDA execution provider"
    elif not torch.cuda.is_available():
        found["cuda"] = "skipped: no CUDA device"
    else:
        found["cuda"] = ("CUDAExecutionProvider", 0)
    return found


def latencies_ms(paths: dict[str, str], case: Case, expected: list[torch.Tensor], provider: str, threads: int,
                 rounds: int, runs_per_round: int) -> tuple[dict[str, float], dict[str, float], dict[str, dict]]:
    """Median over rounds of each file's mean run time (wall, and CPU), the files alternating; and each file's
    output check (or why it did not run). CPU time is the calling thread's with one intra-op thread (ONNX Runtime
    then runs every kernel on it), the process's otherwise: on a shared machine it counts the work, not the waits
    for a core, so it is the steadier measure there."""
    clock = time.thread_time if threads == 1 and provider == "CPUExecutionProvider" else time.process_time
    runners, checks = {}, {}
    for side, path in paths.items():
        try:
            session = _session(path, provider, threads)
            feeds = _feeds(session, case)
            checks[side] = _compare(session.run(None, feeds), expected)  # also the warm-up
            runners[side] = (session, feeds)
        except Exception as error:  # a file ONNX Runtime refuses is a result of the benchmark
            checks[side] = {"outputs_ok": False, "output_error": f"{type(error).__name__}: {str(error)[:200]}"}
    samples: dict[str, list[float]] = {side: [] for side in runners}
    cpu: dict[str, list[float]] = {side: [] for side in runners}
    for _ in range(rounds):
        for side, (session, feeds) in runners.items():
            start, cpu_start = time.perf_counter(), clock()
            for _ in range(runs_per_round):
                session.run(None, feeds)
            samples[side].append((time.perf_counter() - start) * 1e3 / runs_per_round)
            cpu[side].append((clock() - cpu_start) * 1e3 / runs_per_round)
    return ({side: statistics.median(values) for side, values in samples.items()},
            {side: statistics.median(values) for side, values in cpu.items()}, checks)


def bench_one(name: str, opset: int, rounds: int, runs_per_round: int, sides=SIDES) -> dict:
    case = MODELS[name]()
    row: dict = {"model": name, "opset": opset, "files": {}, "latency_ms": {}, "cpu_ms": {}, "ratios": {},
                 "cpu_ratios": {}}
    with torch.no_grad():
        expected = _flat(case.model(*case.args))
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for side in sides:
            path = os.path.join(folder, side, "model.onnx")
            os.makedirs(os.path.dirname(path))
            start = time.perf_counter()
            try:
                export_file(side, case, opset, path)
            except Exception as error:  # a failed export is a result of the benchmark
                row["files"][side] = {"export_error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
                continue
            row["files"][side] = {"export_s": time.perf_counter() - start, **file_stats(path)}
            paths[side] = path
        for setting, how in settings().items():
            if isinstance(how, str):
                row["latency_ms"][setting] = how
                continue
            times, cpu, checks = latencies_ms(paths, case, expected, *how, rounds, runs_per_round)
            row["latency_ms"][setting], row["cpu_ms"][setting] = times, cpu
            row["cpu_ratios"][setting] = ratios(cpu)
            for side, check in checks.items():
                row["files"][side].setdefault("checks", {})[setting] = check
            row["ratios"][setting] = ratios(times)
    return row


def ratios(times: dict[str, float]) -> dict[str, float]:
    """Each of our files' latency over the faster of torch.onnx's (none where neither of torch.onnx's ran)."""
    peers = [times[side] for side in PEERS if side in times]
    if not peers:
        return {}
    return {side: times[side] / min(peers) for side in OURS if side in times}


def _cell(row: dict, setting: str, side: str) -> str:
    times = row["latency_ms"].get(setting)
    if isinstance(times, str):
        return "-"
    if side in times:
        check = row["files"][side].get("checks", {}).get(setting, {})
        return (f"{times[side]:.3g} ({row['cpu_ms'][setting][side]:.3g})"
                + ("" if check.get("outputs_ok") else " (wrong)"))
    return "fail"


def markdown(rows: list[dict]) -> str:
    """Per setting: a latency table (ms) with ratios; then node counts and file sizes; then failures."""
    lines = []
    setting_names = list(dict.fromkeys(s for row in rows for s in row["latency_ms"]))
    for setting in setting_names:
        skipped = {row["latency_ms"][setting] for row in rows if isinstance(row["latency_ms"].get(setting), str)}
        lines.append(f"\n### ONNX Runtime latency, {setting.replace('_', ' ')} (ms, median of rounds)\n")
        if skipped and len(skipped) == 1 and all(isinstance(r["latency_ms"].get(setting), str) for r in rows):
            lines.append(next(iter(skipped)))
            continue
        lines += ["Each cell: wall ms (CPU ms). Ratios: ours / the faster of torch.onnx's two files, wall (CPU).\n",
                  "| model | opset | " + " | ".join(LABELS[s] for s in SIDES) + " | ours TS / best torch.onnx | "
                  "ours export / best torch.onnx |", "|---|---|" + "---|" * (len(SIDES) + 2)]
        for row in rows:
            ratio, cpu = row["ratios"].get(setting, {}), row["cpu_ratios"].get(setting, {})
            cells = [_cell(row, setting, side) for side in SIDES]
            cells += [f"{ratio[side]:.2f} ({cpu[side]:.2f})" if side in ratio else "-" for side in OURS]
            lines.append(f"| {row['model']} | {row['opset']} | " + " | ".join(cells) + " |")
        lines.append(summary(rows, setting, "ratios", "wall"))
        lines.append(summary(rows, setting, "cpu_ratios", "CPU"))
    lines += ["\n### Nodes and file size (MB)\n",
              "| model | opset | " + " | ".join(LABELS[s] for s in SIDES) + " |", "|---|---|" + "---|" * len(SIDES)]
    for row in rows:
        cells = []
        for side in SIDES:
            stats = row["files"].get(side, {})
            cells.append(f"{stats['node_count']} / {stats['file_size'] / 2**20:.1f}" if "node_count" in stats else "fail")
        lines.append(f"| {row['model']} | {row['opset']} | " + " | ".join(cells) + " |")
    for row in rows:
        for side, stats in row["files"].items():
            if "export_error" in stats:
                lines.append(f"\n- {row['model']} opset {row['opset']}, {LABELS[side]}: export failed: "
                             f"{stats['export_error']}")
            for setting, check in stats.get("checks", {}).items():
                if not check.get("outputs_ok"):
                    lines.append(f"\n- {row['model']} opset {row['opset']}, {LABELS[side]}, {setting}: outputs "
                                 f"differ from PyTorch's: {check.get('output_error') or check.get('max_abs_error')}")
    return "\n".join(lines).strip() + "\n"


def summary(rows: list[dict], setting: str, key: str, what: str) -> str:
    parts = []
    for side in OURS:
        values = [row[key][setting][side] for row in rows if side in row[key].get(setting, {})]
        if values:
            parts.append(f"{LABELS[side]}: median {what} ratio {statistics.median(values):.2f}, max "
                         f"{max(values):.2f} ({len(values)} rows)")
    return "\n" + "; ".join(parts) if parts else ""


def op_type_profile(path: str, case: Case, threads: int = 1, runs: int = 10) -> dict[str, float]:
    """Microseconds per run spent in each op type (ONNX Runtime's own profiler), the optimized graph's kernels."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as folder:
        options.profile_file_prefix = os.path.join(folder, "profile")
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feeds = _feeds(session, case)
        for _ in range(runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as handle:
            events = json.load(handle)
    totals: collections.Counter = collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            totals[event["args"]["op_name"]] += event["dur"] / runs
    return dict(totals.most_common())


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog="python -m benchmarks.inference", description=__doc__)
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(MODELS), metavar="MODEL",
                        help=f"models (default: {', '.join(DEFAULT_MODELS)})")
    parser.add_argument("--opsets", nargs="+", type=arguments.opsets, default=[(20,)],
                        help="opsets, e.g. 20 23 (default 20)")
    parser.add_argument("--rounds", type=arguments.positive_int, default=7, help="rounds (default 7)")
    parser.add_argument("--runs-per-round", type=arguments.positive_int, default=5,
                        help="runs of each file per round (default 5)")
    parser.add_argument("--out", default="results/bench", help="folder for inference.json and inference.md")
    return parser


def main(argv: list[str] | None = None) -> int:
    from benchmarks.__main__ import bench_all

    args = build_parser().parse_args(argv)
    out = Path(args.out)
    rows = bench_all(args.models, args.opsets,
                     lambda model, opset: bench_one(model, opset, args.rounds, args.runs_per_round), out, "inference")
    table = markdown(rows)
    (out / "inference.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
