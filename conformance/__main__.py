"""Command line: ``python -m conformance {run,merge,summary,list,report,flaky,gate}``.

    python -m conformance run                          quick tier on CPU -> results/conformance_quick.jsonl
    python -m conformance run --tier full --ep cuda     every model x opsets 7-20 on CUDA
    python -m conformance run --tier full --shard 0/4   a quarter of the models (by model, round robin)
    python -m conformance run --case 'model/resnet50/opset9/*'   exact cases (globs), re-run even if recorded
    python -m conformance run --capture export         the quick tier captured with torch.export (dynamo=True)
    python -m conformance run --exporter transformers --tier full   transformers' own exporter, ours in torch.onnx's place
    python -m conformance merge a.jsonl b.jsonl --out all.jsonl
    python -m conformance summary results/conformance_quick.jsonl
    python -m conformance report RESULTS --out DIR [--baseline B]   HTML report via `python -m reports build`
    python -m conformance gate RESULTS --baseline B     release gate: non-zero exit on regressions (conformance.gate)
    python -m conformance gate RESULTS --baseline B --update-baseline   write B from RESULTS (explicit refresh)
    python -m conformance flaky RUN_A RUN_B            cases whose verdict or band differs between two runs

``run`` resumes: cases already in the results file are not run again (``--redo timeout,crash`` re-runs those
statuses; ``--fresh`` starts over). Each failing case gets a one-line ``rerun`` command and, for models and
examples, a repro bundle under ``<out>.repro/``. ``run`` exits 1 when a selected case fails (a failure status,
or unsupported at an opset it claims; see conformance.verdict) unless ``--record-only``; every option is checked
before any work starts (a bad one: one-line error, exit 2, nothing written). One ``run`` at a time writes a results
file (a second on the same ``--out`` exits 2), and every subcommand reads results through
``conformance.results.read_rows`` (a line that is no row: one-line error naming the file and line, exit 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conformance import arguments
from conformance import results as results_io
from conformance.schema import CAPTURE_CHOICES, EXPORT, STATUSES, TORCHSCRIPT
from conformance.summary import print_summary
from conformance.verdict import is_failure
from exporter.ort_session import ORT_LEVEL_VARIABLE, ORT_LEVELS, ort_level


def _default_out(tier: str, shard: tuple[int, int] | None, exporter: str = "engine", capture: str = "torchscript") -> str:
    suffix = f".shard{shard[0]}of{shard[1]}" if shard else ""
    if exporter == "transformers":  # always torch.export captures: the route names the file
        return os.path.join("results", f"conformance_{tier}_transformers{suffix}.jsonl")
    peer = "_peer" if exporter == "peer" else ""
    export = "_export" if capture == EXPORT else ""
    return os.path.join("results", f"conformance_{tier}{peer}{export}{suffix}.jsonl")


def _names(text: str | None) -> list[str] | None:
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _select(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list:
    """The cases the command line asks for; a name or case pattern that selects nothing is a usage error."""
    from conformance import cases as case_sel

    for option, names in (("--models", _names(args.models)), ("--exclude", _names(getattr(args, "exclude", None)))):
        problem = names and case_sel.unknown_names(args.tier if option == "--models" else "full", names)
        if problem:
            parser.error(f"{option}: {problem}")
    modes = ("static", "dynamic") if args.mode == "both" else (args.mode,)
    if getattr(args, "exporter", "engine") == "peer" and args.capture == EXPORT:
        parser.error("--capture export: the peer (torch.onnx, dynamo=False) runs TorchScript captures only")
    selected = case_sel.select(
        tier=args.tier, opsets=args.opsets, providers=case_sel.providers_for(args.ep, args.tier), modes=modes,
        models=_names(args.models), kinds=args.kinds, shard=args.shard or (0, 1), case_ids=getattr(args, "case", None),
        exporter=getattr(args, "exporter", "engine"), exclude=_names(getattr(args, "exclude", None)),
        capture=args.capture)
    if not selected:
        export_ids = args.capture != EXPORT and any(p.endswith("/export") for p in getattr(args, "case", None) or [])
        parser.error("these options select no case (`python -m conformance list` with the tier's options shows what each selects)"
                     + ("; a case id ending in /export is a torch.export case: add --capture export" if export_ids else ""))
    return selected


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``run``: the selected cases, recorded in the results file that this process alone writes while it runs."""
    out = args.out or _default_out(args.tier, args.shard, args.exporter, args.capture)
    results_io.refuse_if_held(out)  # before the selection's seconds: a second run on the same file learns it at once
    selected = _select(args, parser)
    level = _session_level(args, parser)
    with results_io.sole_writer(out):  # before --fresh discards anything: the file may be another run's
        return _record(args, parser, selected, out, level)


def _record(args: argparse.Namespace, parser: argparse.ArgumentParser, selected: list, out: str, level: str) -> int:
    """Run the selected cases not yet recorded in ``out`` (resuming), then judge the selection (see _run_verdict)."""
    from conformance.runner import RunOptions, run

    repro_dir = args.repro_dir or os.path.splitext(out)[0] + ".repro"
    if args.fresh:
        _discard(out, repro_dir)
    done = results_io.latest_by_case(results_io.read_rows(out))
    other_levels = {row.get("ort_level") for row in done.values()} - {None, level}
    if other_levels:
        parser.error(f"{out} holds rows run at ONNX Runtime level {', '.join(sorted(other_levels))}, not {level}: "
                     "pass --fresh, or another --out")
    redo = set(args.redo or ())
    todo = [c for c in selected if args.case or c.case_id not in done or done[c.case_id]["status"] in redo or "all" in redo]
    print(f"{len(selected)} cases selected, {len(selected) - len(todo)} already in {out}, {len(todo)} to run "
          f"({args.workers} workers, {args.timeout:.0f} s per case before cost scaling, ONNX Runtime level {level})",
          file=sys.stderr)
    if todo:
        options = RunOptions(out=out, workers=args.workers, timeout_s=args.timeout, progress=not args.no_progress,
                             light_first=args.light_first, repro_dir=repro_dir,
                             static_fields={"versions": results_io.versions(), "git_rev": results_io.git_revision()})
        try:
            run(todo, options)
        except KeyboardInterrupt:
            recorded = len(results_io.latest_by_case(results_io.read_rows(out)))
            print(f"\ninterrupted: {recorded} cases are recorded in {out}; the same command resumes the run",
                  file=sys.stderr)
            return 130
    latest = results_io.latest_by_case(results_io.read_rows(out))
    rows = [latest[c.case_id] for c in selected if c.case_id in latest]
    print_summary(rows)
    print(f"results: {out}")
    return _run_verdict(rows, len(selected), args.record_only)


def _session_level(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str:
    """The sessions' graph optimization level (``--ort-level``, else $CONFORMANCE_ORT_LEVEL), set for the workers."""
    if args.ort_level:
        os.environ[ORT_LEVEL_VARIABLE] = args.ort_level
    try:
        return ort_level()
    except ValueError as error:
        parser.error(str(error))


def _discard(out: str, repro_dir: str) -> None:
    if os.path.exists(out):
        os.remove(out)
    shutil.rmtree(repro_dir, ignore_errors=True)


def _run_verdict(rows: list[dict], selected: int, record_only: bool) -> int:
    """Exit status of ``run``: 1 when a selected case fails (conformance.verdict) or has no result, unless only
    recording (the release gate then judges the results against a baseline)."""
    failing = sum(1 for row in rows if is_failure(row))
    missing = selected - len(rows)
    if not failing and not missing:
        return 0
    text = f"{failing} failing case(s)" + (f", {missing} selected case(s) without a result" if missing else "")
    if record_only:
        print(f"{text}; recorded only (--record-only): judge them with `python -m conformance gate`", file=sys.stderr)
        return 0
    print(f"FAIL: {text}", file=sys.stderr)
    return 1


def _merge(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    count = results_io.merge(args.files, args.out)
    print(f"merged {len(args.files)} file(s) into {args.out}: {count} cases")
    return 0


def _summary(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    rows = results_io.read_files(args.files)
    print_summary(list(results_io.latest_by_case(rows).values()), failures=args.failures)
    return 0


def _list(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    selected = _select(args, parser)
    for case in selected:
        print(case.case_id)
    print(f"{len(selected)} cases", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Build the HTML report with the reports package (compared with a baseline, and gated, when one is given)."""
    baseline = ["--baseline", args.baseline] if args.baseline else []
    partial = ["--partial"] if args.partial else []
    code = subprocess.call([sys.executable, "-m", "reports", "build", *args.results, "--out", args.out, *baseline, *partial])
    if code == 0:
        print(f"report: {args.out}")
    return code


def _flaky(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """List the cases whose verdict or band differs between two runs of the same tree; exit 1 when there are any."""
    from conformance import gate

    differences = gate.flaky(gate.load_results([Path(args.first)]), gate.load_results([Path(args.second)]))
    for case_id, why in differences:
        print(f"{case_id}: {why}")
    print(f"{len(differences)} case(s) differ between {args.first} and {args.second}", file=sys.stderr)
    return 1 if differences else 0


def _add_selection(command: argparse.ArgumentParser) -> None:
    """The options that choose cases, shared by run and list."""
    command.add_argument("--tier", choices=("quick", "full"), default="quick",
                         help="quick (default): examples, a model per family and op cases at a few opsets; "
                              f"full: everything at opsets {arguments.ALL_OPSETS[0]}-{arguments.ALL_OPSETS[-1]}")
    command.add_argument("--ep", type=arguments.choice_list(("cpu", "cuda", "all")),
                         help="execution providers: cpu, cuda, cpu,cuda or all (default: cpu for quick, all for full)")
    command.add_argument("--opsets", type=arguments.opsets, help="e.g. 7-20 or 9,11,14 (default: the tier's)")
    command.add_argument("--mode", choices=("static", "dynamic", "both"), default="both",
                         help="static, dynamic or both (default) exports")
    command.add_argument("--models", help="comma-separated model, example or op case names or globs, in the tier")
    command.add_argument("--kinds", type=arguments.choice_list(arguments.KINDS),
                         help="comma-separated kinds of case: model, example, op (default: all)")
    command.add_argument("--shard", type=arguments.shard, help="i/n (0-based): the i-th of n shards, split by name")
    command.add_argument("--capture", choices=CAPTURE_CHOICES, default=TORCHSCRIPT,
                         help="torchscript (default): each model traced, or scripted where it is a script; export: "
                              "captured with torch.export (exporter.export(..., dynamo=True)); export cases have ids "
                              "of their own, ending in /export")


def build_parser() -> argparse.ArgumentParser:
    parser = arguments.StrictParser(prog="python -m conformance", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=arguments.StrictParser)

    run_p = commands.add_parser("run", help="run cases (resumes an interrupted run); exit 1 when a case fails")
    _add_selection(run_p)
    run_p.add_argument("--exclude", help="comma-separated names or globs to leave out")
    run_p.add_argument("--case", action="append", help="exact case id or glob; repeatable; re-runs even if recorded")
    run_p.add_argument("--out", help="results JSONL (default results/conformance_<tier>[_peer|_transformers][_export]"
                                      "[.shard<i>of<n>].jsonl)")
    run_p.add_argument("--repro-dir", help="where repro bundles go (default <out without .jsonl>.repro)")
    run_p.add_argument("--workers", type=arguments.positive_int, default=os.environ.get("CONFORMANCE_WORKERS", "2"),
                       help="parallel worker processes (default $CONFORMANCE_WORKERS or 2)")
    run_p.add_argument("--timeout", type=arguments.positive_float, default=300.0,
                       help="seconds per case, scaled by the model's cost (default 300)")
    run_p.add_argument("--redo", type=arguments.choice_list(STATUSES + ("all",)),
                       help="statuses to run again, e.g. timeout,crash (or all)")
    run_p.add_argument("--fresh", action="store_true",
                       help="discard the results file and its repro bundles first, instead of resuming")
    run_p.add_argument("--record-only", action="store_true",
                       help="exit 0 even when cases fail: only record (a gate judges the results later)")
    run_p.add_argument("--no-progress", action="store_true", help="no progress bar")
    run_p.add_argument("--light-first", action="store_true",
                       help="run the cheapest models first (widest coverage if the run is cut short)")
    run_p.add_argument("--exporter", choices=("engine", "peer", "transformers"), default="engine",
                       help="peer: torch.onnx.export(dynamo=False), to validate the zoo and tolerances themselves; "
                            "transformers: transformers' own ONNX exporter with this engine in torch.onnx.export's "
                            "place, on the zoo's transformers architectures (dynamic, torch.export; opsets 18 and 20 "
                            "unless --opsets)")
    run_p.add_argument("--ort-level", choices=ORT_LEVELS,
                       help="ONNX Runtime graph optimization level of the sessions (default $CONFORMANCE_ORT_LEVEL or "
                            "basic); all: ONNX Runtime's own default, with its op fusions")
    run_p.set_defaults(func=_run, parser=run_p)

    merge_p = commands.add_parser("merge", help="join results files (the latest row of each case wins)")
    merge_p.add_argument("files", nargs="+", type=arguments.existing_path, help="results JSONL files to join")
    merge_p.add_argument("--out", required=True, help="the merged results file to write")
    merge_p.set_defaults(func=_merge, parser=merge_p)

    summary_p = commands.add_parser("summary", help="print the summary table of results files")
    summary_p.add_argument("files", nargs="+", type=arguments.existing_path, help="results JSONL files")
    summary_p.add_argument("--failures", type=arguments.positive_int, default=20, help="how many failures to list")
    summary_p.set_defaults(func=_summary, parser=summary_p)

    list_p = commands.add_parser("list", help="list the case ids a run would cover")
    _add_selection(list_p)
    list_p.set_defaults(func=_list, parser=list_p)

    report_p = commands.add_parser("report", help="build the HTML report (python -m reports build)")
    report_p.add_argument("results", nargs="+", type=arguments.existing_path, help="results JSONL files or folders")
    report_p.add_argument("--out", required=True, help="folder to write report.html and report.json into")
    report_p.add_argument("--baseline", type=arguments.existing_path,
                          help="baseline results to compare with (the report then shows the gate)")
    report_p.add_argument("--partial", action="store_true",
                          help="the results cover part of the baseline's tier: compare only the cases they contain")
    report_p.set_defaults(func=_report, parser=report_p)

    flaky_p = commands.add_parser("flaky", help="list cases whose verdict or band differs between two runs")
    flaky_p.add_argument("first", type=arguments.existing_path, help="results of the first run (RUN_A)")
    flaky_p.add_argument("second", type=arguments.existing_path, help="results of the second run (RUN_B)")
    flaky_p.set_defaults(func=_flaky, parser=flaky_p)

    # `gate` has its own parser (conformance.gate.main); listed here for --help.
    commands.add_parser("gate", help="release gate against a baseline (see python -m conformance gate --help)",
                        add_help=False)

    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["gate"]:
        from conformance import gate

        return gate.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args, args.parser)  # the sub-parser, so that a usage error names the subcommand
    except results_io.ResultsFileError as error:  # an unreadable results line, or another run writing the file
        args.parser.exit(2, f"{args.parser.prog}: error: {error}\n")


if __name__ == "__main__":
    sys.exit(main())
