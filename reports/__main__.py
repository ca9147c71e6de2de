"""Command line: ``python -m reports build RESULTS... --out DIR``, ``python -m reports registry --out FILE`` and
``python -m reports supported-ops --doc docs/operators.md`` (the generated tables of supported operators, opset forms
and runtime workarounds), ``python -m reports torch-suite JUNIT... --measurements FILE`` (the measured runs of PyTorch's
exporter suite, in a campaign file) and ``python -m reports current-numbers`` (``docs/measurements/current.md``).

``build`` prints the path of the HTML it wrote as its last line, so wrappers (nox, the conformance runner)
can show or pick it up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

DEFAULT_OUT = os.path.join("results", "report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reports", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="render results JSONL files into report.html and report.json")
    build.add_argument("results", nargs="+", help="results JSONL files, or folders whose *.jsonl are read")
    build.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default: {DEFAULT_OUT})")
    build.add_argument("--baseline", help="a previous results JSONL file to compare with")
    build.add_argument("--partial", action="store_true",
                       help="the results cover part of the baseline's tier: compare only the cases they contain")
    build.add_argument("--registry", help="registry snapshot JSON from `python -m reports registry`, or 'live' "
                       "to snapshot the installed exporter now (default: infer from the results)")
    build.add_argument("--bench", metavar="FILE", help="a bench.json from `python -m benchmarks` to show as a table")
    build.add_argument("--mark-baseline", metavar="PATH", help="also copy the results read to PATH as the new baseline")

    registry = commands.add_parser("registry", help="snapshot which ops have symbolics at which opsets, as JSON")
    registry.add_argument("--out", required=True, help="file to write")

    ops = commands.add_parser("supported-ops", help="docs/operators.md's generated tables, from the registry")
    ops.add_argument("--doc", help="rewrite the tables between the markers of this file, docs/operators.md "
                     "(default: print the supported-operator table)")
    ops.add_argument("--check", action="store_true", help="exit 1 when the document's tables are out of date")

    suite = commands.add_parser("torch-suite", help="a campaign file's section on PyTorch's exporter suite, from its junit")
    suite.add_argument("junit", nargs="+", help="junit XML files of ../shared/torch_suite/run.sh")
    suite.add_argument("--measurements", metavar="FILE",
                       help="rewrite the section between the markers of this campaign file (default: print it)")
    suite.add_argument("--peer", action="append", default=[], metavar="OPSET=PASSED/FAILED",
                       help="torch.onnx's own counts for an opset (or 'all'), e.g. 14=2930/4; repeatable")
    current = commands.add_parser("current-numbers", help="docs/measurements/current.md, from current.toml and the campaigns")
    current.add_argument("--check", action="store_true", help="exit 1 when current.md is out of date")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "registry":
        return _registry(args.out)
    if args.command == "supported-ops":
        return _supported_ops(args.doc, args.check)
    if args.command == "torch-suite":
        return _torch_suite(args.junit, args.measurements, args.peer)
    if args.command == "current-numbers":
        return _current_numbers(args.check)
    return _build(args)


def _build(args: argparse.Namespace) -> int:
    from conformance.results import ResultsFileError
    from reports.build import build_report

    try:
        path = build_report(args.results, args.out, baseline_path=args.baseline, registry=args.registry,
                            mark_baseline=args.mark_baseline, bench_path=args.bench, partial=args.partial)
    except (FileNotFoundError, ValueError, ResultsFileError) as error:
        print(f"reports: {error}", file=sys.stderr)
        return 2
    if args.mark_baseline:
        print(f"baseline marked: {args.mark_baseline}")
    print(os.path.abspath(path))
    return 0


def _registry(out: str) -> int:
    from reports.registry_snapshot import take_snapshot

    snapshot = take_snapshot()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(snapshot, handle, sort_keys=True)
    print(f"{len(snapshot['ops'])} registered ops -> {out}")
    return 0


def _supported_ops(document: str | None, check: bool) -> int:
    from reports.registry_snapshot import take_snapshot
    from reports.supported_ops import rewrite, table

    snapshot = take_snapshot()
    if document is None:
        print(table(snapshot))
        return 0
    with open(document, encoding="utf-8") as handle:
        current = handle.read()
    updated = rewrite(current, snapshot)
    if check:
        if updated != current:
            print(f"{document}: the generated tables are out of date; run python -m reports supported-ops --doc {document}",
                  file=sys.stderr)
            return 1
        return 0
    with open(document, "w", encoding="utf-8") as handle:
        handle.write(updated)
    print(f"{document}: supported-ops tables rewritten")
    return 0


def _torch_suite(junit: list[str], measurements: str | None, peer_counts: list[str]) -> int:
    from reports.torch_suite import load_causes, read_junit, rewrite, section

    peer = {}
    for item in peer_counts:
        key, _, counts = item.partition("=")
        passed, _, failed = counts.partition("/")
        peer[key] = (int(passed), int(failed))
    text = section(read_junit(junit), load_causes(), peer)
    if measurements is None:
        print(text)
        return 0
    with open(measurements, encoding="utf-8") as handle:
        content = handle.read()
    with open(measurements, "w", encoding="utf-8") as handle:
        handle.write(rewrite(content, text))
    print(f"{measurements}: torch-suite section rewritten")
    return 0


def _current_numbers(check: bool) -> int:
    from reports.current_numbers import FOLDER, render

    path = FOLDER / "current.md"
    text = render()
    if check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path}: out of date; run python -m reports current-numbers", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"{path}: rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
