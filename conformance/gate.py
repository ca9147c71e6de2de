"""Release gate: compare a conformance run with a committed baseline and fail on regressions.

Rows are compared like with like: a baseline row only with this run's row of the same case and capture (trace,
script or export; torch.export cases have ids of their own, and a case whose capture changed counts as the baseline's
case vanished and a new case). A regression is a case that passed in the baseline and now does not, a case that now fails where the baseline
did not fail, a new case (absent from the baseline) that fails, a passing case whose error drifted or whose
tolerance was loosened beyond the bands of ``conformance.verdict``, or a baseline case that vanished from the run.
Without a baseline (``--no-baseline``) every case is new, so any failure fails the gate. A run that executed no case
of the baseline (none in it, or all skipped; without a baseline: no case at all, or all skipped) fails too, whatever
else it holds: it is no evidence. Flaky cases are tolerated only through an explicit allow-list entry with a written
reason; there is no retry.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance import results as results_io
from conformance import verdict
from conformance.arguments import StrictParser, existing_path
from conformance.schema import EXPORT_SUFFIX, default_capture

DEFAULT_BASELINE = Path("baselines/conformance_quick.jsonl")
DEFAULT_ALLOWLIST = Path("baselines/flaky_allowlist.json")
# opset, expected_min_opset and reason tell an expected unsupported case or a known failure from a real failure.
BASELINE_FIELDS = ("case_id", "status", "opset", "expected_min_opset", "reason", "max_abs_error", "max_rel_error",
                   "rtol", "atol", "error", "stage", "capture")


@dataclass
class Finding:
    case_id: str
    kind: str  # one of REGRESSION_KINDS, or improvement | newly_covered | new_case_skipped | changed_error
    before: str = ""
    after: str = ""
    allowed_because: str = ""

    @property
    def is_regression(self) -> bool:
        return self.kind in REGRESSION_KINDS


REGRESSION_KINDS = ("new_failure", "new_case_failing", "error_drift", "tolerance_loosened", "vanished")


@dataclass
class GateResult:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # facts about the whole run (say, CUDA coverage lost)
    no_evidence: str = ""  # why the run proves nothing (see missing_evidence); a FAIL whatever the findings

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.is_regression and not f.allowed_because]

    @property
    def passed(self) -> bool:
        return not self.blocking and not self.no_evidence

    def of_kind(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]


def load_results(paths: list[Path]) -> dict[str, dict]:
    """Rows by case_id (files, or folders of ``*.jsonl``, read by conformance.results.read_rows); a later row for
    the same case replaces an earlier one (resumed runs)."""
    return results_io.latest_by_case(results_io.read_files(paths))


def load_allowlist(path: Path | None) -> list[dict]:
    if path is None or not path.exists():
        return []
    entries = json.loads(path.read_text())
    for entry in entries:
        if not entry.get("case_id") or not str(entry.get("reason", "")).strip():
            raise ValueError(f"allow-list entry {entry!r} needs a case_id pattern and a written reason")
    return entries


def _allowed(case_id: str, allowlist: list[dict]) -> str:
    for entry in allowlist:
        if fnmatch.fnmatchcase(case_id, entry["case_id"]):
            return entry["reason"]
    return ""


def _describe(row: dict) -> str:
    text = row.get("status", "?")
    if row.get("max_abs_error") is not None:
        text += f" (abs {row['max_abs_error']:.3g}, rel {row.get('max_rel_error') or 0:.3g})"
    if row.get("status") != "pass" and row.get("error"):
        text += f": {str(row['error']).splitlines()[0][:120]}"
    return text


def _judge(case_id: str, before: dict, after: dict | None) -> Finding | None:
    """The finding for one baseline case, or None when nothing changed beyond the bands."""
    if after is None:
        return Finding(case_id, "vanished", _describe(before), "missing from this run")
    was_pass, is_pass = before.get("status") == "pass", after.get("status") == "pass"
    if (was_pass and not is_pass) or (verdict.is_failure(after) and not verdict.is_failure(before)):
        return Finding(case_id, "new_failure", _describe(before), _describe(after))
    if is_pass and not was_pass:
        return Finding(case_id, "improvement", _describe(before), _describe(after))
    if was_pass:
        tolerance = verdict.loosened(before, after)
        if tolerance:
            return Finding(case_id, "tolerance_loosened", f"{tolerance} {before.get(tolerance)!r}",
                           f"{tolerance} {after.get(tolerance)!r} (more than {verdict.TOLERANCE_BAND:.0%} looser)")
        if verdict.error_drifted(before, after):
            return Finding(case_id, "error_drift", _describe(before), _describe(after))
        return None
    if (before.get("status"), str(before.get("error") or "")[:200]) != (after.get("status"), str(after.get("error") or "")[:200]):
        return Finding(case_id, "changed_error", _describe(before), _describe(after))
    return None


def judge(rows: list[dict], baseline_rows: list[dict] | None, allowlist: list[dict], partial: bool = False) -> GateResult:
    """The release gate's verdict on result rows as read (``baseline_rows`` None: no baseline, any failing case
    fails): this exporter's latest row of each case, judged by ``compare``. ``python -m conformance gate`` and the
    report's badge both call this, so they agree on every input."""
    return compare(results_io.engine_cases(rows), results_io.engine_cases(baseline_rows or []), allowlist, partial)


def compare(results: dict[str, dict], baseline: dict[str, dict], allowlist: list[dict], partial: bool = False) -> GateResult:
    """Judge ``results`` against ``baseline`` (an empty baseline: any failing case fails the gate).

    ``partial``: the results cover part of the baseline's tier (a --models, --opsets or --shard run), so only the
    baseline cases present in the results are compared and none counts as vanished.
    """
    gate = GateResult(no_evidence=missing_evidence(results, baseline))
    if partial:
        baseline = {case_id: row for case_id, row in baseline.items() if case_id in results}
    # Like with like: a baseline row is judged only against a row of the same capture. A case whose capture changed
    # (a model now scripted where it was traced) is the baseline's case gone and a new case, never a verdict of one
    # capture read as the other's. (TorchScript and torch.export cases never meet: their ids differ.)
    unlike = {case_id for case_id, before in baseline.items()
              if case_id in results and capture_of(before) != capture_of(results[case_id])}
    for case_id, before in sorted(baseline.items()):
        if case_id in unlike:
            finding = Finding(case_id, "vanished", f"{_describe(before)} [{capture_of(before)}]",
                              f"not run with the baseline's capture ({capture_of(before)}): this run's row is "
                              f"{capture_of(results[case_id])}")
        else:
            finding = _judge(case_id, before, results.get(case_id))
        if finding is not None:
            finding.allowed_because = _allowed(case_id, allowlist) if finding.is_regression else ""
            gate.findings.append(finding)
    for case_id in sorted(set(results) - set(baseline) | unlike):
        after = results[case_id]
        if verdict.is_failure(after):
            gate.findings.append(Finding(case_id, "new_case_failing", "not in the baseline", _describe(after),
                                         _allowed(case_id, allowlist)))
        elif after.get("status") == "skipped":  # not run: covers nothing
            gate.findings.append(Finding(case_id, "new_case_skipped", "not in the baseline", _describe(after)))
        else:
            gate.findings.append(Finding(case_id, "newly_covered", "", _describe(after)))
    gate.notes = cuda_notes(results, baseline) + vanished_notes(gate, partial)
    return gate


def vanished_notes(gate: GateResult, partial: bool) -> list[str]:
    """A hint when baseline cases are missing from the run and --partial was not given: a narrowed run (--models,
    --opsets, --shard) is the usual cause, and each missing case is otherwise a regression."""
    vanished = [f for f in gate.of_kind("vanished") if f.after == "missing from this run"]
    if partial or not vanished:
        return []
    return [f"{_counted(len(vanished), 'baseline case')} missing from this run: if the run covered part of the "
            "baseline's tier on purpose (--models, --opsets, --shard), gate it with --partial"]


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def capture_of(row: dict) -> str:
    """The row's capture ('trace', 'script' or 'export'); a row that records none, as ``read_rows`` would read it."""
    return row.get("capture") or default_capture(row)


def missing_evidence(results: dict[str, dict], baseline: dict[str, dict]) -> str:
    """Why ``results`` prove nothing against ``baseline``, in one line, or '' when they executed one of its cases
    (without a baseline: any case). A run with no row, none of the baseline's cases, or only skipped ones (``--ep
    cuda`` without a GPU) has no regression to find, and must not PASS for it, --partial or not."""
    if not results:
        return "the results hold no case"
    relevant = [row for case_id, row in results.items()
                if not baseline or (case_id in baseline and capture_of(row) == capture_of(baseline[case_id]))]
    if not relevant:
        return f"the run holds none of the baseline's {len(baseline)} cases"
    if all(row.get("status") == "skipped" for row in relevant):
        which = "baseline case(s) in this run" if baseline else "case(s) of this run"
        return f"all {len(relevant)} {which} were skipped; none was executed"
    return ""


def render_table(gate: GateResult) -> str:
    """The findings as a text table, ending with the verdict line (which names the first regressed cases)."""
    sections = [
        ("Regressions (block the release)", gate.blocking),
        ("Allow-listed regressions", [f for f in gate.findings if f.is_regression and f.allowed_because]),
        ("Improvements", gate.of_kind("improvement")),
        ("Changed errors", gate.of_kind("changed_error")),
        ("Newly covered", gate.of_kind("newly_covered")),
        ("New cases skipped (not run, so not covered)", gate.of_kind("new_case_skipped")),
    ]
    lines = []
    for title, findings in sections:
        lines.append(f"{title}: {len(findings)}")
        for f in findings[:50]:
            note = f"  [allowed: {f.allowed_because}]" if f.allowed_because else ""
            lines.append(f"  {f.kind:<18} {f.case_id}\n      before: {f.before or '-'}\n      after:  {f.after or '-'}{note}")
        if len(findings) > 50:
            lines.append(f"  ... and {len(findings) - 50} more")
    lines.extend(gate.notes)
    lines.append(verdict_line(gate))
    return "\n".join(lines)


def verdict_line(gate: GateResult) -> str:
    """``Release gate: PASS``, or ``Release gate: FAIL (...)`` with the reason: no evidence, the first regressions."""
    if gate.passed:
        return "Release gate: PASS"
    reasons = [f"no evidence: {gate.no_evidence}"] if gate.no_evidence else []
    if gate.blocking:
        named = ", ".join(f.case_id for f in gate.blocking[:5]) + (", ..." if len(gate.blocking) > 5 else "")
        reasons.append(f"{_counted(len(gate.blocking), 'regression')}: {named}")
    return f"Release gate: FAIL ({'; '.join(reasons)})"


def cuda_notes(results: dict[str, dict], baseline: dict[str, dict]) -> list[str]:
    """A line when the baseline has CUDA cases and this run ran fewer (their regressions are listed above)."""
    expected = [case_id for case_id in baseline if case_id.removesuffix(EXPORT_SUFFIX).endswith("/cuda")]
    ran = [row for row in results.values() if row.get("provider") == "cuda" and row.get("status") != "skipped"]
    if expected and len(ran) < len(expected):
        return [f"CUDA: the baseline has {len(expected)} CUDA cases; this run ran {len(ran)}"]
    return []


def update_baseline(results: list[Path], baseline: Path) -> int:
    """Write the baseline from a run: per case, its status and achieved error (explicit, never automatic)."""
    rows = load_results(results)
    baseline.parent.mkdir(parents=True, exist_ok=True)
    tmp = baseline.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for case_id in sorted(rows):
            handle.write(json.dumps({k: rows[case_id].get(k) for k in BASELINE_FIELDS}) + "\n")
    shutil.move(tmp, baseline)
    return len(rows)


def flaky(first: dict[str, dict], second: dict[str, dict]) -> list[tuple[str, str]]:
    """(case id, why) for each case whose verdict or band differs between two runs of the same tree."""
    differences = []
    for case_id in sorted(set(first) | set(second)):
        if case_id not in first or case_id not in second:
            differences.append((case_id, f"only in the {'first' if case_id in first else 'second'} run"))
            continue
        why = verdict.band_difference(first[case_id], second[case_id])
        if why:
            differences.append((case_id, why))
    return differences


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(prog="python -m conformance gate", description=__doc__)
    parser.add_argument("results", nargs="+", type=existing_path, help="results JSONL files or directories of them")
    parser.add_argument("--baseline", default=str(DEFAULT_BASELINE), help=f"baseline JSONL (default {DEFAULT_BASELINE})")
    parser.add_argument("--no-baseline", action="store_true",
                        help="judge the results alone: any failing case fails the gate")
    parser.add_argument("--partial", action="store_true",
                        help="the results cover part of the baseline's tier: compare only the cases they contain")
    parser.add_argument("--allowlist", type=Path, default=DEFAULT_ALLOWLIST,
                        help=f"flaky-case allow-list (default {DEFAULT_ALLOWLIST})")
    parser.add_argument("--json", type=Path, help="also write the findings as JSON (the HTML report reads it)")
    parser.add_argument("--update-baseline", action="store_true", help="write the baseline from these results")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance gate``: 0 on PASS, 1 on FAIL, 2 on a usage error or an unreadable results line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _gate(args, parser)
    except results_io.ResultsFileError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")


def _gate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    results = [Path(p) for p in args.results]
    if args.update_baseline:
        count = update_baseline(results, Path(args.baseline))
        print(f"baseline updated: {count} cases -> {args.baseline}")
        return 0
    if not args.no_baseline and not Path(args.baseline).exists():
        parser.error(f"no baseline at {args.baseline}; create one with --update-baseline or pass --no-baseline")
    baseline = None if args.no_baseline else results_io.read_files([args.baseline])
    gate = judge(results_io.read_files(args.results), baseline, load_allowlist(args.allowlist), partial=args.partial)
    print(render_table(gate))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"passed": gate.passed, "no_evidence": gate.no_evidence,
                                         "findings": [asdict(f) for f in gate.findings], "notes": gate.notes}, indent=1))
    return 0 if gate.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
