"""Which cases a run covers: tiers, filters and shards."""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass

import model_zoo
from conformance.schema import case_id

ALL_OPSETS = tuple(range(7, 17))
TIERS = ("quick", "full")
PROVIDERS = ("cpu", "cuda")


@dataclass(frozen=True)
class Case:
    kind: str
    name: str
    family: str
    opset: int
    mode: str
    provider: str
    cost: float
    exporter: str = "engine"  # "engine" (ours) or "peer" (torch.onnx, dynamo=False: validates the zoo itself)

    @property
    def case_id(self) -> str:
        return case_id(self.kind, self.name, self.opset, self.mode, self.provider)

    def as_dict(self) -> dict:
        return {**asdict(self), "case_id": self.case_id}


def parse_opsets(text: str | None) -> tuple[int, ...] | None:
    """'7-16', '9,11,14' or '11' -> opsets; None stays None (the tier decides)."""
    if not text:
        return None
    opsets: list[int] = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-")
            opsets.extend(range(int(low), int(high) + 1))
        else:
            opsets.append(int(part))
    return tuple(sorted(set(opsets)))


def parse_providers(text: str | None, tier: str) -> tuple[str, ...]:
    """'cpu', 'cuda', 'cpu,cuda' or 'all'; default: cpu for quick, both for full (CUDA skips where absent)."""
    if not text:
        return ("cpu",) if tier == "quick" else PROVIDERS
    if text == "all":
        return PROVIDERS
    providers = tuple(p.strip() for p in text.split(","))
    unknown = [p for p in providers if p not in PROVIDERS]
    if unknown:
        raise ValueError(f"unknown execution provider(s) {unknown}; choose from {PROVIDERS} or 'all'")
    return providers


def parse_shard(text: str | None) -> tuple[int, int]:
    """'i/n' with 0 <= i < n (0-based) -> (i, n); None -> (0, 1)."""
    if not text:
        return 0, 1
    index, count = (int(x) for x in text.split("/"))
    if not 0 <= index < count:
        raise ValueError(f"--shard {text}: expected i/n with 0 <= i < n")
    return index, count


def select(tier: str = "quick", opsets: tuple[int, ...] | None = None, providers: tuple[str, ...] = ("cpu",),
           modes: tuple[str, ...] = ("static", "dynamic"), models: list[str] | None = None,
           shard: tuple[int, int] = (0, 1), case_ids: list[str] | None = None, exporter: str = "engine",
           exclude: list[str] | None = None) -> list[Case]:
    """The cases of ``tier`` (optionally narrowed; the quick tier takes each entry's ``quick_opsets``), grouped by model so one worker serves all of a model's cases.

    Sharding splits by model (round robin over the models in name order), so a model's trace is never
    repeated across shards. ``case_ids`` selects exact cases (or globs) from every entry, whatever the tier.
    """
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; choose from {TIERS}")
    entries = model_zoo.entries()
    quick = tier == "quick" and not case_ids
    if quick:
        entries = [e for e in entries if e.quick_opsets]
    if models:
        entries = [e for e in entries if any(fnmatch.fnmatchcase(e.name, pattern) for pattern in models)]
    if exclude:
        entries = [e for e in entries if not any(fnmatch.fnmatchcase(e.name, pattern) for pattern in exclude)]
    ordered = sorted(entries, key=lambda e: e.name)
    index, count = shard
    chosen = {e.name for k, e in enumerate(ordered) if k % count == index}
    cases = []
    for entry in entries:
        if entry.name not in chosen:
            continue
        entry_modes = [m for m in modes if m == "static" or entry.dynamic_axes]
        for provider in (providers if not case_ids else PROVIDERS):
            for mode in entry_modes:
                for opset in opsets or (entry.quick_opsets if quick else ALL_OPSETS):
                    cases.append(Case(entry.kind, entry.name, entry.family, opset, mode, provider, entry.cost, exporter))
    if case_ids:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.case_id, pattern) for pattern in case_ids)]
    return cases
