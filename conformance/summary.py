"""The summary printed at the end of a run: statuses per kind, passes per opset, and the failures."""

from __future__ import annotations

import collections

from conformance.schema import STATUSES
from conformance.verdict import is_failure


def print_summary(rows: list[dict], failures: int = 20) -> None:
    if not rows:
        print("no results")
        return
    print(format_table(rows))
    failing = [r for r in rows if is_failure(r)]
    if failing and failures:
        print(f"\n{len(failing)} failing case(s){'; first ' + str(failures) if len(failing) > failures else ''}:")
        for row in failing[:failures]:
            first_line = (row.get("error") or "").strip().splitlines()[0:1]
            print(f"  {row['case_id']}: {row['status']} at {row.get('stage') or '?'}: {first_line[0][:160] if first_line else ''}")
            if row.get("rerun"):
                print(f"      rerun: {row['rerun']}")


def format_table(rows: list[dict]) -> str:
    """Rows: opsets; columns: statuses (only those present), then the pass rate."""
    present = [s for s in STATUSES if any(r["status"] == s for r in rows)]
    by_opset: dict = collections.defaultdict(collections.Counter)
    for row in rows:
        by_opset[row["opset"]][row["status"]] += 1
    width = max(8, *(len(s) for s in present))
    header = f"{'opset':>6} " + " ".join(f"{s:>{width}}" for s in present) + f" {'total':>6} {'pass%':>6}"
    lines = [header, "-" * len(header)]
    total = collections.Counter()
    for opset in sorted(by_opset):
        counts = by_opset[opset]
        total.update(counts)
        lines.append(_line(str(opset), counts, present, width))
    lines.append("-" * len(header))
    lines.append(_line("all", total, present, width))
    return "\n".join(lines)


def _line(label: str, counts: collections.Counter, present: list[str], width: int) -> str:
    n = sum(counts.values())
    rate = 100.0 * counts["pass"] / n if n else 0.0
    return f"{label:>6} " + " ".join(f"{counts[s]:>{width}}" for s in present) + f" {n:>6} {rate:>5.1f}%"
