"""Command line: ``python -m conformance {run,merge,summary,list,report}``.

    python -m conformance run                          quick tier on CPU -> results/conformance_quick.jsonl
    python -m conformance run --tier full --ep cuda     every model x opsets 7-16 on CUDA
    python -m conformance run --tier full --shard 0/4   a quarter of the models (by model, round robin)
    python -m conformance run --case 'model/resnet50/opset9/*'   exact cases (globs), re-run even if recorded
    python -m conformance merge a.jsonl b.jsonl --out all.jsonl
    python -m conformance summary results/conformance_quick.jsonl
    python -m conformance report RESULTS --out DIR [--baseline B]   HTML report via `python -m reports build`
    python -m conformance gate RESULTS --baseline B     release gate: non-zero exit on regressions (conformance.gate)
    python -m conformance gate RESULTS --baseline B --update-baseline   write B from RESULTS (explicit refresh)

``run`` resumes: cases already in the results file are not run again (``--redo timeout,crash`` re-runs those
statuses). Each failing case gets a one-line ``rerun`` command and a repro bundle under ``<out>.repro/``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from conformance import results as results_io
from conformance.summary import print_summary


def _default_out(tier: str, shard: str | None, exporter: str = "engine") -> str:
    suffix = f".shard{shard.replace('/', 'of')}" if shard else ""
    peer = "_peer" if exporter == "peer" else ""
    return os.path.join("results", f"conformance_{tier}{peer}{suffix}.jsonl")


def _run(args: argparse.Namespace) -> int:
    from conformance import cases as case_sel
    from conformance.runner import RunOptions, run

    out = args.out or _default_out(args.tier, args.shard, args.exporter)
    modes = ("static", "dynamic") if args.mode == "both" else (args.mode,)
    selected = case_sel.select(
        tier=args.tier, opsets=case_sel.parse_opsets(args.opsets), providers=case_sel.parse_providers(args.ep, args.tier),
        modes=modes, models=args.models.split(",") if args.models else None, shard=case_sel.parse_shard(args.shard),
        case_ids=args.case or None, exporter=args.exporter, exclude=args.exclude.split(",") if args.exclude else None,
    )
    if args.case and not selected:
        print(f"no case matches {args.case}", file=sys.stderr)
        return 2
    done = results_io.latest_by_case(results_io.read_rows(out))
    redo = set(args.redo.split(",")) if args.redo else set()
    todo = [c for c in selected if args.case or c.case_id not in done or done[c.case_id]["status"] in redo or "all" in redo]
    print(f"{len(selected)} cases selected, {len(selected) - len(todo)} already in {out}, {len(todo)} to run "
          f"({args.workers} workers, {args.timeout:.0f} s per case before cost scaling)", file=sys.stderr)
    if todo:
        options = RunOptions(out=out, workers=args.workers, timeout_s=args.timeout, progress=not args.no_progress,
                             light_first=args.light_first,
                             repro_dir=args.repro_dir or os.path.splitext(out)[0] + ".repro",
                             static_fields={"versions": results_io.versions(), "git_rev": results_io.git_revision()})
        run(todo, options)
    wanted = {c.case_id for c in selected}
    rows = [r for r in results_io.latest_by_case(results_io.read_rows(out)).values() if r["case_id"] in wanted]
    print_summary(rows)
    print(f"results: {out}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    count = results_io.merge(args.files, args.out)
    print(f"merged {len(args.files)} file(s) into {args.out}: {count} cases")
    return 0


def _summary(args: argparse.Namespace) -> int:
    rows = []
    for path in args.files:
        rows.extend(results_io.read_rows(path))
    print_summary(list(results_io.latest_by_case(rows).values()), failures=args.failures)
    return 0


def _list(args: argparse.Namespace) -> int:
    from conformance import cases as case_sel

    selected = case_sel.select(tier=args.tier, opsets=case_sel.parse_opsets(args.opsets),
                               providers=case_sel.parse_providers(args.ep, args.tier),
                               models=args.models.split(",") if args.models else None)
    for case in selected:
        print(case.case_id)
    print(f"{len(selected)} cases", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace) -> int:
    """Build the HTML report with the reports package (compared with a baseline, and gated, when one is given)."""
    baseline = ["--baseline", args.baseline] if args.baseline else []
    code = subprocess.call([sys.executable, "-m", "reports", "build", *args.results, "--out", args.out, *baseline])
    if code == 0:
        print(f"report: {args.out}")
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    run_p = commands.add_parser("run", help="run cases (resumes an interrupted run)")
    run_p.add_argument("--tier", choices=("quick", "full"), default="quick")
    run_p.add_argument("--ep", help="cpu, cuda, cpu,cuda or all (default: cpu for quick, all for full)")
    run_p.add_argument("--opsets", help="e.g. 7-16 or 9,11,14 (default: the tier's)")
    run_p.add_argument("--mode", choices=("static", "dynamic", "both"), default="both")
    run_p.add_argument("--models", help="comma-separated zoo names or globs")
    run_p.add_argument("--exclude", help="comma-separated zoo names or globs to leave out")
    run_p.add_argument("--case", action="append", help="exact case id or glob; repeatable; re-runs even if recorded")
    run_p.add_argument("--shard", help="i/n (0-based): run the i-th of n model shards")
    run_p.add_argument("--out", help="results JSONL (default results/conformance_<tier>[.shard<i>of<n>].jsonl)")
    run_p.add_argument("--repro-dir", help="where repro bundles go (default <out without .jsonl>.repro)")
    run_p.add_argument("--workers", type=int, default=int(os.environ.get("CONFORMANCE_WORKERS", 2)))
    run_p.add_argument("--timeout", type=float, default=300.0, help="seconds per case, scaled by the model's cost")
    run_p.add_argument("--redo", help="statuses to run again, e.g. timeout,crash (or all)")
    run_p.add_argument("--no-progress", action="store_true")
    run_p.add_argument("--light-first", action="store_true",
                       help="run the cheapest models first (widest coverage if the run is cut short)")
    run_p.add_argument("--exporter", choices=("engine", "peer"), default="engine",
                       help="peer: torch.onnx.export(dynamo=False), to validate the zoo and tolerances themselves")
    run_p.set_defaults(func=_run)

    merge_p = commands.add_parser("merge", help="join results files (the latest row of each case wins)")
    merge_p.add_argument("files", nargs="+")
    merge_p.add_argument("--out", required=True)
    merge_p.set_defaults(func=_merge)

    summary_p = commands.add_parser("summary", help="print the summary table of results files")
    summary_p.add_argument("files", nargs="+")
    summary_p.add_argument("--failures", type=int, default=20, help="how many failures to list")
    summary_p.set_defaults(func=_summary)

    list_p = commands.add_parser("list", help="list the case ids a run would cover")
    list_p.add_argument("--tier", choices=("quick", "full"), default="quick")
    list_p.add_argument("--ep")
    list_p.add_argument("--opsets")
    list_p.add_argument("--models")
    list_p.set_defaults(func=_list)

    report_p = commands.add_parser("report", help="build the HTML report (needs reports/__main__.py)")
    report_p.add_argument("results", nargs="+")
    report_p.add_argument("--out", required=True)
    report_p.add_argument("--baseline", help="baseline results to compare with (the report then shows the gate)")
    report_p.set_defaults(func=_report)

    # `gate` has its own parser (conformance.gate.main); listed here for --help.
    commands.add_parser("gate", help="release gate against a baseline (see python -m conformance gate --help)",
                        add_help=False)

    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gate"]:
        from conformance import gate

        return gate.main(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
