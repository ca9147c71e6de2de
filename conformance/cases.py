"""Which cases a run covers: tiers (models, examples and op cases), filters and shards."""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass

import model_zoo
from conformance import op_cases
from conformance.arguments import ALL_OPSETS
from conformance.schema import EXPORT, TORCHSCRIPT, case_id
from conformance.transformers_route import TRANSFORMERS, architecture_names

# The transformers route's default opsets: 18, the lowest transformers' exporter emits (its torchlib functions are
# written for 18), and 20, our default.
TRANSFORMERS_OPSETS = (18, 20)

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
    # "engine" (ours), "peer" (torch.onnx, dynamo=False: validates the zoo itself) or "transformers" (transformers'
    # own exporter with ours in torch.onnx.export's place: conformance.transformers_route)
    exporter: str = "engine"
    # The run's capture: "torchscript" (each model traced, or scripted where it is a script) or "export" (torch.export,
    # dynamo=True). Export cases have ids of their own ('.../export'); the row's ``capture`` says trace, script or export.
    capture: str = TORCHSCRIPT

    @property
    def case_id(self) -> str:
        return case_id(self.kind, self.name, self.opset, self.mode, self.provider, self.capture)

    def as_dict(self) -> dict:
        return {**asdict(self), "case_id": self.case_id}


def providers_for(ep: tuple[str, ...] | None, tier: str) -> tuple[str, ...]:
    """The providers of ``--ep`` ('cpu', 'cuda', 'all'); default: cpu for quick, both for full (CUDA skips where absent)."""
    if not ep:
        return ("cpu",) if tier == "quick" else PROVIDERS
    return PROVIDERS if "all" in ep else tuple(p for p in PROVIDERS if p in ep)


@dataclass(frozen=True)
class _Subject:
    """What cases are made of: a zoo entry (model or example) or an op case, with the opsets and modes it runs."""

    kind: str
    name: str
    family: str
    cost: float
    quick_opsets: tuple[int, ...]
    modes_at: Callable[[int], tuple[str, ...]]


def _zoo_subjects() -> list[_Subject]:
    def modes(entry):
        both = ("static", "dynamic") if entry.dynamic_axes else ("static",)
        return lambda opset: both

    return [_Subject(e.kind, e.name, e.family, e.cost, e.quick_opsets, modes(e)) for e in model_zoo.entries()]


@functools.lru_cache(maxsize=1)
def _op_subjects() -> tuple[_Subject, ...]:
    from opcases import all_cases

    return tuple(_Subject("op", case.name, "op", op_cases.COST, op_cases.quick_opsets(case),
                          functools.partial(op_cases.modes_at, case)) for case in all_cases())


def _dynamic_only(subject: _Subject) -> _Subject:
    return dataclasses.replace(subject, modes_at=lambda opset: ("dynamic",))


def _subjects(tier: str) -> list[_Subject]:
    every = [*_zoo_subjects(), *_op_subjects()]
    return [s for s in every if s.quick_opsets] if tier == "quick" else every


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def unknown_names(tier: str, patterns: list[str]) -> str:
    """Why some of ``patterns`` (``--models``) select nothing in ``tier``, naming the tier that has them; '' if all do."""
    in_tier = [s.name for s in _subjects(tier)]
    anywhere = [s.name for s in _subjects("full")]
    problems = []
    for pattern in patterns:
        if any(_matches(name, [pattern]) for name in in_tier):
            continue
        if any(_matches(name, [pattern]) for name in anywhere):
            problems.append(f"{pattern!r} is not in the {tier} tier, only in the full tier (add --tier full)")
        else:
            problems.append(f"no model, example or op case matches {pattern!r} ('python -m conformance list --tier full' lists them)")
    return "; ".join(problems)


def select(tier: str = "quick", opsets: tuple[int, ...] | None = None, providers: tuple[str, ...] = ("cpu",),
           modes: tuple[str, ...] = ("static", "dynamic"), models: list[str] | None = None,
           kinds: tuple[str, ...] | None = None, shard: tuple[int, int] = (0, 1), case_ids: list[str] | None = None, exporter: str = "engine",
           exclude: list[str] | None = None, capture: str = TORCHSCRIPT) -> list[Case]:
    """The cases of ``tier`` (optionally narrowed), grouped by model or op case so one worker serves all of its cases.

    The quick tier takes each zoo entry's ``quick_opsets`` and each op case's (``conformance.op_cases``); the full
    tier every opset. ``kinds`` keeps models, examples or op cases; ``models`` and ``exclude`` match their names (globs). Sharding splits by
    name (round robin over the names in order), so a model's trace is never repeated across shards. ``case_ids``
    selects exact cases (or globs) from everything, whatever the tier. ``capture`` ("torchscript" or "export")
    is the capture every case is exported with; export cases have ids of their own (ending in '/export').
    """
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; choose from {TIERS}")
    quick = tier == "quick" and not case_ids
    subjects = _subjects("quick" if quick else "full")
    if exporter == "peer" and capture == EXPORT:
        raise ValueError("the peer (torch.onnx, dynamo=False) runs TorchScript captures only; --capture export is for "
                         "this exporter")
    if exporter == "peer":  # the peer validates the model zoo; op cases have no peer path
        subjects = [s for s in subjects if s.kind != "op"]
    if exporter == TRANSFORMERS:  # its architectures, captured by torch.export and dynamic, as that exporter does
        architectures = architecture_names()
        subjects = [_dynamic_only(s) for s in subjects if s.name in architectures]
        capture, quick = EXPORT, False
        opsets = opsets or TRANSFORMERS_OPSETS
    if kinds:
        subjects = [s for s in subjects if s.kind in kinds]
    if models:
        subjects = [s for s in subjects if _matches(s.name, models)]
    if exclude:
        subjects = [s for s in subjects if not _matches(s.name, exclude)]
    index, count = shard
    ordered = sorted(s.name for s in subjects)
    chosen = {name for k, name in enumerate(ordered) if k % count == index}
    cases = []
    for subject in subjects:
        if subject.name not in chosen:
            continue
        for provider in (providers if not case_ids else PROVIDERS):
            for mode in modes:
                for opset in opsets or (subject.quick_opsets if quick else ALL_OPSETS):
                    if mode in subject.modes_at(opset):
                        cases.append(Case(subject.kind, subject.name, subject.family, opset, mode, provider,
                                          subject.cost, exporter, capture))
    if case_ids:
        cases = [c for c in cases if _matches(c.case_id, case_ids)]
    return cases
