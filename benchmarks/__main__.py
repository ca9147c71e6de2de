"""``python -m benchmarks``: ours vs the torch.onnx peer, alternating, in one process and one run.

For each model and opset: export wall time and peak RSS growth during export (medians of several alternating
runs after a warm-up), node count, file size, op histogram, and ONNX Runtime CPU latency of both exported models
on the same inputs (alternating too). Writes JSON and a markdown table of ratios ours/peer. ``--conformance``
also times the conformance quick tier with each exporter.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import onnx
import onnxruntime as ort
import torch

import exporter
from benchmarks.models import MODELS
from conformance import arguments
from conformance.arguments import StrictParser


class PeakRss:
    """Samples the process's resident set size while exporting; reports the growth over the start."""

    def __init__(self, interval: float = 0.005):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()

    @staticmethod
    def rss() -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def __enter__(self):
        self.start = self.peak = self.rss()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss())

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.start) / 2**20


# Each exporter writes into the file object ``f`` and returns its wall time per stage (none for the peer). The
# caller times the call alone: making the file object, reading its bytes and freeing them are not the export.
def export_ours(model, args, opset, kwargs, f) -> dict[str, float]:
    return exporter.export_program(model, args, f, opset_version=opset, dynamo=False, **kwargs).stage_seconds


def export_peer(model, args, opset, kwargs, f) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, opset_version=opset, dynamo=False, **kwargs)
    return {}


def export_ours_without_provenance(model, args, opset, kwargs, f) -> dict[str, float]:
    """Ours with provenance recording off (an internal switch, not an export option): its cost is the difference."""
    from exporter.provenance import recording

    with recording(False):
        return export_ours(model, args, opset, kwargs, f)


def timed_export(export, model, args, opset, kwargs) -> tuple[bytes, dict[str, float], float, float]:
    """The model's bytes, the stages, and the wall and process CPU seconds of the export call itself."""
    f = io.BytesIO()
    start, cpu_start = time.perf_counter(), time.process_time()
    stages = export(model, args, opset, kwargs, f)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return f.getvalue(), stages, seconds, cpu


EXPORTERS = {"ours": export_ours, "peer": export_peer}
# Timed alternately with the exporters above, export time only: ours without provenance recording.
BASELINES = {"ours_without_provenance": export_ours_without_provenance}


def graph_stats(data: bytes) -> dict:
    model = onnx.load_from_string(data)
    histogram = collections.Counter(node.op_type for node in model.graph.node)
    return {"node_count": len(model.graph.node), "file_size": len(data), "op_histogram": dict(sorted(histogram.items()))}


def ort_latencies_ms(models: dict[str, bytes], args: tuple, repeats: int) -> dict[str, float | str]:
    """Median ONNX Runtime CPU latency per side (or the error), runs alternating between the sides."""
    runners, results = {}, {}
    for side, data in models.items():
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
            # not strict: the export drops inputs the model does not read
            feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), _flat_tensors(args), strict=False)}
            session.run(None, feeds)  # warm-up
            runners[side] = (session, feeds)
        except Exception as error:
            results[side] = f"{type(error).__name__}: {str(error)[:300]}"
    samples: dict[str, list[float]] = {side: [] for side in runners}
    for _ in range(repeats):
        for side, (session, feeds) in runners.items():
            start = time.perf_counter()
            session.run(None, feeds)
            samples[side].append((time.perf_counter() - start) * 1e3)
    results.update({side: statistics.median(values) for side, values in samples.items()})
    return results


def _flat_tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _flat_tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _flat_tensors(item)


def bench_one(name: str, opset: int, runs: int, latency_repeats: int) -> dict:
    model, args, kwargs = MODELS[name]()
    row: dict = {"model": name, "opset": opset}
    times: dict[str, list[float]] = {"ours": [], "peer": [], **{side: [] for side in BASELINES}}
    cpu: dict[str, list[float]] = {side: [] for side in times}  # process CPU seconds: steadier on a shared machine
    peaks: dict[str, list[float]] = {"ours": [], "peer": []}
    outputs: dict[str, bytes] = {}
    stages: dict[str, list[dict[str, float]]] = {"ours": [], "peer": []}
    for side, export in EXPORTERS.items():  # warm-up (first-call costs, lazy imports), and failures per side
        try:
            outputs[side] = timed_export(export, model, args, opset, kwargs)[0]
        except Exception as error:
            row[f"{side}_error"] = f"{type(error).__name__}: {str(error)[:300]}"
    if "ours" in outputs:
        for export in BASELINES.values():  # their warm-up
            timed_export(export, model, args, opset, kwargs)
    for _ in range(runs):  # alternate ours, the peer and ours without provenance so drift affects all alike
        for side, export in {**EXPORTERS, **BASELINES}.items():
            if ("ours" if side in BASELINES else side) not in outputs:  # a side whose warm-up failed is not timed
                continue
            with PeakRss() as rss:
                _, stage_seconds, seconds, cpu_seconds = timed_export(export, model, args, opset, kwargs)
            times[side].append(seconds)
            cpu[side].append(cpu_seconds)
            if side in EXPORTERS:
                stages[side].append(stage_seconds)
                peaks[side].append(rss.growth_mb)
    for side in EXPORTERS:
        if side not in outputs:
            continue
        row[side] = {
            "export_s": statistics.median(times[side]),
            "peak_rss_growth_mb": statistics.median(peaks[side]),
            **graph_stats(outputs[side]),
        }
    if "ours" in row:
        row["ours"].update(stage_report(stages["ours"], times["ours"]))
        off = statistics.median(times["ours_without_provenance"])
        on_cpu, off_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["ours_without_provenance"])
        row["provenance"] = {"on_s": row["ours"]["export_s"], "off_s": off, "ratio": row["ours"]["export_s"] / off,
                             "on_cpu_s": on_cpu, "off_cpu_s": off_cpu, "cpu_ratio": on_cpu / off_cpu if off_cpu else None}
    for side, latency in ort_latencies_ms(outputs, args, latency_repeats).items():
        row[side]["ort_ms" if isinstance(latency, float) else "ort_error"] = latency
    if "ours" in row and "peer" in row:
        row["ratios"] = {
            key: row["ours"][key] / row["peer"][key]
            for key in ("export_s", "node_count", "file_size", "ort_ms", "peak_rss_growth_mb")
            if row["ours"].get(key) and row["peer"].get(key)
        }
    return row


def stage_report(runs: list[dict[str, float]], totals: list[float]) -> dict:
    """Median seconds per stage over the timed runs (``totals``: each run's export time), the median time no stage
    accounts for, and the overhead above the floor: the median over runs of export time divided by capture plus one
    serialization (the ``serialize`` stage writes the model's bytes into the destination once: what any exporter
    must spend). A run's ratio is taken within the run, so a slow moment of a shared machine weighs on both sides."""
    names = list(dict.fromkeys(name for run in runs for name in run))
    medians = {name: statistics.median(run.get(name, 0.0) for run in runs) for name in names}
    floors = [run.get("capture", 0.0) + run.get("serialize", 0.0) for run in runs]
    ratios = [total / floor for total, floor in zip(totals, floors, strict=True) if floor]
    return {"stage_s": medians, "floor_s": statistics.median(floors),
            "unaccounted_s": statistics.median(total - sum(run.values())
                                               for total, run in zip(totals, runs, strict=True)),
            "overhead_above_floor": statistics.median(ratios) if ratios else None}


def stage_table(rows: list[dict]) -> str:
    """Where our export's time goes, per model: capture (PyTorch's trace or scripted graph), our TorchScript passes
    over it, convert, the ONNX passes together, assemble, check, serialize (into the destination), the other stages
    together (argument checks, naming, the result), what no stage accounts for, and the overhead above the floor
    (export / (capture + serialize), median of the runs' ratios)."""
    columns = ("capture", "capture passes", "convert", "passes", "assemble", "check", "serialize", "other stages",
               "unaccounted")
    lines = ["| model | opset | " + " | ".join(f"{c} s" for c in columns) + " | overhead above floor |",
             "|---|---|" + "---|" * (len(columns) + 1)]
    for row in rows:
        ours = row.get("ours", {})
        if "stage_s" not in ours:
            continue
        stage = dict(ours["stage_s"])
        stage["passes"] = sum(v for k, v in stage.items() if k.startswith("pass:"))
        stage["other stages"] = sum(v for k, v in ours["stage_s"].items()
                                    if not k.startswith("pass:") and k not in columns)
        stage["unaccounted"] = ours.get("unaccounted_s", 0.0)
        overhead = ours.get("overhead_above_floor")
        cells = " | ".join(f"{stage.get(c, 0.0):.3f}" for c in columns)
        lines.append(f"| {row['model']} | {row['opset']} | {cells} | {f'{overhead:.2f}' if overhead else '-'} |")
    return "\n".join(lines)


def provenance_table(rows: list[dict]) -> str:
    """What recording provenance costs: our export time with it (the default) and without, and their ratio."""
    lines = ["| model | opset | export s, provenance on | off | on/off | CPU s on | off | on/off |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if "provenance" in row:
            p = row["provenance"]
            cpu = (f"{p['on_cpu_s']:.3f} | {p['off_cpu_s']:.3f} | {p['cpu_ratio']:.3f}" if p.get("cpu_ratio")
                   else "- | - | -")
            lines.append(f"| {row['model']} | {row['opset']} | {p['on_s']:.3f} | {p['off_s']:.3f} | {p['ratio']:.3f} | {cpu} |")
    return "\n".join(lines)


def histogram_diff(row: dict) -> str:
    ours, peer = row["ours"]["op_histogram"], row["peer"]["op_histogram"]
    diffs = [f"{op} {ours.get(op, 0)}/{peer.get(op, 0)}" for op in sorted(set(ours) | set(peer))
             if ours.get(op, 0) != peer.get(op, 0)]
    return ", ".join(diffs) or "identical"


def _last_opset_row(rows: list[dict], model: str) -> dict:
    return max((r for r in rows if r["model"] == model), key=lambda r: r["opset"])


def _ours_and_peer(row: dict, key: str, fmt: str) -> str:
    """'ours / peer' for one measurement of a benchmark row, 'fail' where that exporter failed."""
    a, b = row.get("ours", {}).get(key), row.get("peer", {}).get(key)
    return f"{fmt.format(a) if a is not None else 'fail'} / {fmt.format(b) if b is not None else 'fail'}"


def _ratio(row: dict, key: str) -> str:
    ratios = row.get("ratios", {})
    return f"{ratios[key]:.2f}" if key in ratios else "-"


def markdown_table(rows: list[dict]) -> str:
    lines = [
        "| model | opset | export s (ours/peer) | ratio | nodes (ours/peer) | ratio | ORT ms (ours/peer) | ratio | peak MB (ours/peer) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['model']} | {row['opset']} | {_ours_and_peer(row, 'export_s', '{:.2f}')} | "
            f"{_ratio(row, 'export_s')} | {_ours_and_peer(row, 'node_count', '{}')} | {_ratio(row, 'node_count')} | "
            f"{_ours_and_peer(row, 'ort_ms', '{:.2f}')} | {_ratio(row, 'ort_ms')} | "
            f"{_ours_and_peer(row, 'peak_rss_growth_mb', '{:.0f}')} |"
        )
    lines += ["", stage_table(rows), "", provenance_table(rows)]
    lines.append("\nOp counts that differ (ours/peer), per model at its highest benchmarked opset:")
    for row in rows:
        if row is _last_opset_row(rows, row["model"]) and "ours" in row and "peer" in row:
            lines.append(f"- {row['model']} (opset {row['opset']}): {histogram_diff(row)}")
    for row in rows:
        for side in ("ours", "peer"):
            if f"{side}_error" in row:
                lines.append(f"\n- {row['model']} opset {row['opset']}: {side} failed: {row[side + '_error']}")
    return "\n".join(lines)


def conformance_quick_seconds(out: Path, timeout: float) -> dict:
    """Wall time of ``python -m conformance run --tier quick`` with each exporter (fresh results file each)."""
    times: dict = {}
    for side, name in (("ours", "engine"), ("peer", "peer")):
        results = out / f"conformance_quick_{name}.jsonl"
        results.unlink(missing_ok=True)
        # Models and examples only: op cases have no peer path, and failures are results here, not errors.
        command = [sys.executable, "-m", "conformance", "run", "--tier", "quick", "--kinds", "model,example",
                   "--exporter", name, "--out", str(results), "--no-progress", "--record-only"]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            times[f"{side}_error"] = f"timed out after {timeout:.0f} s"
            continue
        times[f"{side}_s"] = time.perf_counter() - start
        if done.returncode != 0:
            times[f"{side}_error"] = f"exit {done.returncode}: {done.stderr[-300:]}"
    if "ours_s" in times and "peer_s" in times:
        times["ratio"] = times["ours_s"] / times["peer_s"]
    return times


def conformance_line(quick: dict) -> str:
    ours, peer = quick.get("ours_s"), quick.get("peer_s")
    text = f"Conformance quick tier: ours {ours:.0f} s" if ours else "Conformance quick tier: ours failed"
    text += f", peer {peer:.0f} s" if peer else ", peer failed"
    if "ratio" in quick:
        text += f", ratio {quick['ratio']:.2f}"
    errors = [f"{side}: {quick[side + '_error']}" for side in ("ours", "peer") if side + "_error" in quick]
    return text + (f" ({'; '.join(errors)})" if errors else "")


def build_parser() -> argparse.ArgumentParser:
    """Every option checked before any work: a bad value is a one-line error, exit status 2, nothing written."""
    parser = StrictParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS), metavar="MODEL",
                        help=f"models to benchmark (default: all of {', '.join(MODELS)})")
    parser.add_argument("--opsets", nargs="+", type=arguments.opsets, default=[(11, 14, 16)],
                        help=f"opsets within {arguments.ALL_OPSETS[0]}-{arguments.ALL_OPSETS[-1]}, e.g. 11 14 16 or 11,14,16 (default 11 14 16)")
    parser.add_argument("--runs", type=arguments.positive_int, default=5,
                        help="timed exports per side after the warm-up (default 5)")
    parser.add_argument("--latency-repeats", type=arguments.positive_int, default=20,
                        help="ONNX Runtime runs per model for the latency median (default 20)")
    parser.add_argument("--out", default="results/bench", help="folder for bench.json and bench.md (default results/bench)")
    parser.add_argument("--conformance", action="store_true",
                        help="also time the conformance quick tier with each exporter (slow)")
    parser.add_argument("--conformance-timeout", type=arguments.positive_float, default=3600,
                        help="seconds allowed for each timed conformance run (default 3600)")
    return parser


def bench_all(models: list[str], opset_groups: list[tuple[int, ...]], bench: Callable[[str, int], dict], out: Path,
              name: str) -> list[dict]:
    """``bench(model, opset)`` for every model and opset, the rows so far kept in ``out/name.json`` as they come."""
    opsets = sorted({opset for group in opset_groups for opset in group})
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in models:
        for opset in opsets:
            print(f"benchmarking {model} at opset {opset} ...", file=sys.stderr, flush=True)
            rows.append(bench(model, opset))
            (out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    return rows


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(max(1, (os.cpu_count() or 2)))
    out = Path(args.out)
    rows = bench_all(args.models, args.opsets, lambda model, opset: bench_one(model, opset, args.runs,
                                                                              args.latency_repeats), out, "bench")
    table = markdown_table(rows)
    if args.conformance:
        print("timing the conformance quick tier ...", file=sys.stderr, flush=True)
        quick = conformance_quick_seconds(out, args.conformance_timeout)
        (out / "bench.json").write_text(json.dumps(rows + [{"conformance_quick": quick}], indent=1))
        table += "\n\n" + conformance_line(quick)
    (out / "bench.md").write_text(table + "\n")
    print(table)
    print(f"\nwritten: {out / 'bench.json'} and {out / 'bench.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
