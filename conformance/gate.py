"""Release gate: compare a conformance run with a committed baseline and fail on regressions.

A regression is a case that passed in the baseline and now does not, a passing case whose error grew by more
than its tolerance, a case whose tolerance was loosened, or a baseline case that vanished from the run.
Flaky cases are tolerated only through an explicit allow-list entry with a written reason; there is no retry.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

DEFAULT_BASELINE = Path("baselines/conformance_quick.jsonl")
DEFAULT_ALLOWLIST = Path("baselines/flaky_allowlist.json")
BASELINE_FIELDS = ("case_id", "status", "max_abs_error", "max_rel_error", "rtol", "atol", "error", "stage")


@dataclass
class Finding:
    case_id: str
    kind: str  # new_failure | error_drift | tolerance_loosened | vanished | improvement | newly_covered | changed_error
    before: str = ""
    after: str = ""
    allowed_because: str = ""

    @property
    def is_regression(self) -> bool:
        return self.kind in REGRESSION_KINDS


REGRESSION_KINDS = ("new_failure", "error_drift", "tolerance_loosened", "vanished")


@dataclass
class GateResult:
    findings: list[Finding] = field(default_factory=list)

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.is_regression and not f.allowed_because]

    @property
    def passed(self) -> bool:
        return not self.blocking

    def of_kind(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]


def load_results(paths: list[Path]) -> dict[str, dict]:
    """Rows by case_id; a later row for the same case replaces an earlier one (resumed runs)."""
    rows: dict[str, dict] = {}
    for path in paths:
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        for file in files:
            with open(file, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip():
                        row = json.loads(line)
                        rows[row["case_id"]] = row
    return rows


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


def _grew_past_tolerance(before: dict, after: dict) -> bool:
    b_abs, a_abs = before.get("max_abs_error"), after.get("max_abs_error")
    if b_abs is None or a_abs is None:
        return False
    atol = after.get("atol") or 0.0
    rtol = after.get("rtol") or 0.0
    b_rel, a_rel = before.get("max_rel_error") or 0.0, after.get("max_rel_error") or 0.0
    return a_abs - b_abs > atol and a_rel - b_rel > rtol


def _loosened(before: dict, after: dict) -> bool:
    return any(
        after.get(key) is not None and before.get(key) is not None and after[key] > before[key]
        for key in ("rtol", "atol")
    )


def compare(results: dict[str, dict], baseline: dict[str, dict], allowlist: list[dict]) -> GateResult:
    gate = GateResult()
    for case_id, before in sorted(baseline.items()):
        after = results.get(case_id)
        reason = _allowed(case_id, allowlist)
        if after is None:
            gate.findings.append(Finding(case_id, "vanished", _describe(before), "missing from this run", reason))
            continue
        was_pass, is_pass = before.get("status") == "pass", after.get("status") == "pass"
        if was_pass and not is_pass:
            gate.findings.append(Finding(case_id, "new_failure", _describe(before), _describe(after), reason))
        elif not was_pass and is_pass:
            gate.findings.append(Finding(case_id, "improvement", _describe(before), _describe(after)))
        elif was_pass and is_pass:
            if _loosened(before, after):
                gate.findings.append(Finding(case_id, "tolerance_loosened",
                                             f"rtol {before.get('rtol')}, atol {before.get('atol')}",
                                             f"rtol {after.get('rtol')}, atol {after.get('atol')}", reason))
            elif _grew_past_tolerance(before, after):
                gate.findings.append(Finding(case_id, "error_drift", _describe(before), _describe(after), reason))
        elif (before.get("status"), before.get("error", "")[:200]) != (after.get("status"), after.get("error", "")[:200]):
            gate.findings.append(Finding(case_id, "changed_error", _describe(before), _describe(after)))
    for case_id in sorted(set(results) - set(baseline)):
        gate.findings.append(Finding(case_id, "newly_covered", "", _describe(results[case_id])))
    return gate


def render_table(gate: GateResult) -> str:
    sections = [
        ("Regressions (block the release)", [f for f in gate.findings if f.is_regression and not f.allowed_because]),
        ("Allow-listed regressions", [f for f in gate.findings if f.is_regression and f.allowed_because]),
        ("Improvements", gate.of_kind("improvement")),
        ("Changed errors", gate.of_kind("changed_error")),
        ("Newly covered", gate.of_kind("newly_covered")),
    ]
    lines = []
    for title, findings in sections:
        lines.append(f"{title}: {len(findings)}")
        for f in findings[:50]:
            note = f"  [allowed: {f.allowed_because}]" if f.allowed_because else ""
            lines.append(f"  {f.kind:<18} {f.case_id}\n      before: {f.before or '-'}\n      after:  {f.after or '-'}{note}")
        if len(findings) > 50:
            lines.append(f"  ... and {len(findings) - 50} more")
    lines.append("GATE: PASS" if gate.passed else f"GATE: FAIL ({len(gate.blocking)} regressions)")
    return "\n".join(lines)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m conformance gate", description=__doc__)
    parser.add_argument("results", nargs="+", type=Path, help="results JSONL files or directories of them")
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE)
    parser.add_argument("--allowlist", type=Path, default=DEFAULT_ALLOWLIST)
    parser.add_argument("--json", type=Path, help="also write the findings as JSON (the HTML report reads it)")
    parser.add_argument("--update-baseline", action="store_true", help="write the baseline from these results")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.update_baseline:
        count = update_baseline(args.results, args.baseline)
        print(f"baseline updated: {count} cases -> {args.baseline}")
        return 0
    if not args.baseline.exists():
        print(f"no baseline at {args.baseline}; create one with --update-baseline", file=sys.stderr)
        return 2
    gate = compare(load_results(args.results), load_results([args.baseline]), load_allowlist(args.allowlist))
    print(render_table(gate))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"passed": gate.passed, "findings": [asdict(f) for f in gate.findings]}, indent=1))
    return 0 if gate.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
