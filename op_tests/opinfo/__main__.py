"""``python -m op_tests.opinfo``: the full OpInfo matrix (resumable), its summary, and the expectations check.

    python -m op_tests.opinfo run --out results/opinfo.jsonl [--ops 'gather,nn.functional.*pool*'] \\
        [--dtypes float32] [--opsets 7-20] [--samples 0-3] [--workers 1] [--record-only]
                                                                   exit 1 as check does, unless --record-only
    python -m op_tests.opinfo summary results/opinfo.jsonl         per-opset counts and the expectations verdict
    python -m op_tests.opinfo check results/opinfo.jsonl           exit 1 on a mismatch, unexpected failure or pass
    python -m op_tests.opinfo draft-expectations results/opinfo.jsonl > op_tests/opinfo/expectations.toml
    python -m op_tests.opinfo report results/opinfo.jsonl results/op_tests.jsonl [--out results/reports/ops]
                                                                   op x opset matrix of both sources (HTML)
    python -m op_tests.opinfo list                                 every OpInfo key of op_db
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import sys

from conformance import arguments
from conformance.results import ResultsFileError, git_revision, latest_by_case, read_rows, versions
from conformance.schema import EXPORT, TRACE
from op_tests.opinfo import expectations
from op_tests.opinfo.runner import PRIMARY, Plan, run
from op_tests.opinfo.samples import DTYPES, dtype_name

STATUS_ORDER = ("pass", "runtime_divergence", "mismatch", "unsupported", "no_symbolic", "not_capturable",
                "inconclusive", "export_error", "checker_error", "ort_error", "timeout", "crash")


def _keys(patterns: str | None) -> list[str]:
    from op_tests.opinfo.samples import opinfos_by_key

    keys = list(opinfos_by_key())
    if not patterns:
        return keys
    chosen = [k for k in keys if any(fnmatch.fnmatchcase(k, p) for p in patterns.split(","))]
    if not chosen:
        raise SystemExit(f"no OpInfo matches {patterns!r} (python -m op_tests.opinfo list)")
    return chosen


def _rows(path: str) -> list[dict]:
    return list(latest_by_case(read_rows(path)).values())


def summary(rows: list[dict], judgement: expectations.Judgement) -> str:
    """Per-opset status counts, OpInfos and samples attempted, and the expectations verdict (``judgement`` of
    ``rows``)."""
    lines = [f"OpInfos attempted: {len({expectations._key(r) for r in rows})}, samples (x dtype): "
             f"{len({r['name'] for r in rows})}, rows: {len(rows)}"]
    statuses = [s for s in STATUS_ORDER if any(r["status"] == s for r in rows)]
    lines.append("opset " + " ".join(f"{s:>18}" for s in statuses) + "   pass rate")
    for opset in sorted({r["opset"] for r in rows}):
        counts = collections.Counter(r["status"] for r in rows if r["opset"] == opset)
        total = sum(counts.values())
        lines.append(f"{opset:>5} " + " ".join(f"{counts[s]:>18}" for s in statuses)
                     + f"   {counts['pass'] / total:.1%}")
    lines.append(f"expected non-passes: {len(judgement.expected)}; mismatches: {len(judgement.mismatches)}; "
                 f"unexpected failures: {len(judgement.unexpected_failures)}; "
                 f"unexpected passes: {len(judgement.unexpected_passes)}")
    return "\n".join(lines)


def _judge(rows: list[dict]) -> expectations.Judgement:
    """The expectations verdict without stale entries (what ``summary`` and ``run`` show)."""
    return expectations.judge(rows, expectations.load(), report_stale=False)


def check(rows: list[dict]) -> int:
    judgement = expectations.judge(rows, expectations.load())
    for row in judgement.mismatches:
        print(f"MISMATCH {row['case_id']}: {row['error']} [{row.get('arbiter')}]")
    for row in judgement.unexpected_failures:
        print(f"UNEXPECTED {row['status']} {row['case_id']}: {(row['error'] or row['reason'] or '').splitlines()[0][:200]}")
    for row, entry in judgement.unexpected_passes:
        print(f"UNEXPECTED PASS {row['case_id']}: remove the expectation ({entry.reason})")
    for entry in judgement.stale:
        print(f"STALE expectation {entry.op} samples={entry.samples} opsets={entry.opsets}: {entry.reason}")
    print(f"{len(rows)} rows: {len(judgement.mismatches)} mismatches, {len(judgement.unexpected_failures)} unexpected "
          f"failures, {len(judgement.unexpected_passes)} unexpected passes, {len(judgement.stale)} stale expectations")
    return 0 if judgement.ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = arguments.StrictParser(prog="python -m op_tests.opinfo", description=__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("run", help="check OpInfo samples at opsets, appending rows (resumable)")
    runner.add_argument("--out", default="results/opinfo.jsonl")
    runner.add_argument("--ops", help="comma-separated globs over OpInfo keys (name or name.variant)")
    runner.add_argument("--dtypes", type=arguments.choice_list((PRIMARY, *(dtype_name(d) for d in DTYPES))),
                        default=PRIMARY, help=f"comma-separated, of {[dtype_name(d) for d in DTYPES]}, or "
                        f"'{PRIMARY}': float32 where listed, else the OpInfo's first listed dtype (the default)")
    runner.add_argument("--opsets", type=arguments.opsets, default=f"{expectations.OPSETS[0]}-{expectations.OPSETS[1]}",
                        help="e.g. 11, 9,11,14 or 7-10, within the exporter's "
                             f"{expectations.OPSETS[0]}-{expectations.OPSETS[1]} (the default: all of them)")
    runner.add_argument("--samples", type=arguments.indices, help="sample indices, e.g. 0-3,7 (default: all)")
    runner.add_argument("--workers", type=arguments.positive_int, default=1)
    runner.add_argument("--capture", choices=[TRACE, EXPORT], default=TRACE,
                        help="trace (TorchScript, the default) or export (torch.export: dynamo=True)")
    runner.add_argument("--timeout", type=arguments.positive_float, default=120.0, help="seconds one case may run")
    runner.add_argument("--redo", type=arguments.choice_list(STATUS_ORDER + ("all",)), default=(),
                        help="re-run recorded cases of these statuses (or 'all'), e.g. after a fix")
    runner.add_argument("--repro-dir", help="where one-node repros of runtime divergences go (default: OUT.repro)")
    runner.add_argument("--record-only", action="store_true",
                        help="exit 0 even when the results fail the expectations: only record (check judges later)")
    for name in ("summary", "check", "draft-expectations"):
        sub = commands.add_parser(name)
        sub.add_argument("results", type=arguments.existing_path)
    report = commands.add_parser("report")
    report.add_argument("results", nargs="+", type=arguments.existing_path)
    report.add_argument("--out", default="results/reports/ops")
    commands.add_parser("list")
    args = parser.parse_args(argv)
    try:
        return _command(args)
    except ResultsFileError as error:  # a results line that is no row (conformance.results.read_rows)
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def _command(args: argparse.Namespace) -> int:
    if args.command == "list":
        print("\n".join(_keys(None)))
        return 0
    if args.command == "run":
        return _run(args)
    if args.command == "report":
        from reports import op_matrix

        rows = [row for path in args.results for row in _rows(path)]
        expectations.judge([r for r in rows if r.get("source") == "opinfo"], expectations.load(), report_stale=False)
        print(op_matrix.write(rows, args.out))
        return 0
    rows = _rows(args.results)
    if args.command == "summary":
        print(summary(rows, _judge(rows)))
        return 0
    if args.command == "check":
        return check(rows)
    print(expectations.draft(rows))
    return 0


def _run(args: argparse.Namespace) -> int:
    plan = Plan(keys=_keys(args.ops), dtypes=list(args.dtypes), opsets=list(args.opsets), out=args.out,
                samples=list(args.samples) if args.samples else None, workers=args.workers, capture=args.capture,
                timeout_s=args.timeout, redo=args.redo, repro_dir=args.repro_dir or args.out + ".repro",
                static_fields={"versions": versions(), "git_rev": git_revision()})
    _rows(args.out)  # an unreadable line stops the run here, before its workers read the file to resume
    written = run(plan)
    print(f"{written} rows appended to {args.out}")
    rows = _rows(args.out)
    judgement = _judge(rows)
    print(summary(rows, judgement))
    return _run_status(judgement, args.out, args.record_only)


def _run_status(judgement: expectations.Judgement, out: str, record_only: bool) -> int:
    """``run``'s exit status: the verdict of ``check`` on the results file its summary shows (1 on a mismatch, an
    unexpected failure or an unexpected pass), so that a CI job running it fails; 0 when only recording (a later
    ``check`` judges them: nox -s opinfo writes its report first)."""
    if judgement.ok:
        return 0
    listing = f"`python -m op_tests.opinfo check {out}` lists them"
    if record_only:
        print(f"the results fail the expectations; recorded only (--record-only): {listing}", file=sys.stderr)
        return 0
    print(f"FAIL: the results fail the expectations: {listing}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
