"""Strict expectations: the one reviewed list of known non-passes of the OpInfo suite, each with its reason.

``expectations.toml`` holds ``[[expect]]`` entries keyed by OpInfo (``name`` or ``name.variant``; a glob is
allowed), samples (``"*"`` or ranges like ``"0-3,7"``), an inclusive opset range, modes and dtypes, plus the
expected status and the reason. Judging a results row:

- ``mismatch`` always fails: the export is wrong, and no expectation may say otherwise (one that tries is
  rejected when the file is loaded);
- a row whose status needs no excuse passes: ``pass``, ``runtime_divergence`` (the reference evaluator proved
  ONNX Runtime wrong), ``inconclusive`` (random ops), ``not_capturable`` (not an ONNX model at all),
  ``unsupported`` with the lowest opset that works (an ONNX limit the exporter states) and ``no_symbolic`` for an op
  the registry indeed has no symbolic for at any opset (the registry is the list of what is not supported: a
  ``no_symbolic`` for an op it does know is a dispatch bug, and fails);
- any other status must match an expectation naming that status, or it fails;
- a ``pass`` that matches an expectation fails too (the fix landed: delete the entry), so the file only shrinks;
- an expectation that matches no row although the results ran its cases is stale and reported (results of part of
  the matrix say nothing about the entries of the rest: see ``Expectation.covers``).
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import os
import re
import tomllib
from dataclasses import dataclass, field

import exporter  # noqa: F401  (registers the built-in symbolics the registry answers for)
from conformance.arguments import ALL_OPSETS
from exporter import Capture
from exporter.registry import REGISTRY

PATH = os.path.join(os.path.dirname(__file__), "expectations.toml")
# The torch.export capture's own (python -m op_tests.opinfo run --capture export ...; draft-expectations writes them).
EXPORT_PATH = os.path.join(os.path.dirname(__file__), "expectations_export.toml")
NEEDS_NO_EXCUSE = ("pass", "runtime_divergence", "inconclusive", "not_capturable")
OPSETS = (ALL_OPSETS[0], ALL_OPSETS[-1])
MODES = ("static", "dynamic")


@dataclass(frozen=True)
class Expectation:
    op: str
    status: tuple[str, ...]
    reason: str
    samples: str = "*"
    opsets: tuple[int, int] = OPSETS
    modes: tuple[str, ...] = MODES
    dtypes: tuple[str, ...] = ("*",)
    # The captures the entry speaks for: a TorchScript capture's entries (this file) or the torch.export capture's
    # (EXPORT_PATH), whose programs reach the converter with other ops (decomposed where no symbolic exists).
    captures: tuple[str, ...] = (Capture.TRACE, Capture.SCRIPT)

    def covers(self, row: dict) -> bool:
        """Whether ``row`` is a case of this entry in either mode: its capture, OpInfo, sample, opset and dtype.

        A run chooses all of these, but not the mode (every sample runs static, and dynamic when another sample
        can feed it), so an entry that covers a row of the results yet matches none is stale, and one that covers
        none was not exercised by them."""
        return (row.get("capture", Capture.TRACE) in self.captures and fnmatch.fnmatchcase(_key(row), self.op)
                and (self.samples == "*" or row.get("sample") in _indices(self.samples))
                and self.opsets[0] <= row["opset"] <= self.opsets[1]
                and ("*" in self.dtypes or row.get("dtype") in self.dtypes))


@dataclass
class Judgement:
    """Every row's verdict against the expectations: what fails the run and what is merely reported."""

    expected: list[dict] = field(default_factory=list)
    mismatches: list[dict] = field(default_factory=list)
    unexpected_failures: list[dict] = field(default_factory=list)
    unexpected_passes: list[tuple[dict, Expectation]] = field(default_factory=list)
    stale: list[Expectation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.unexpected_failures or self.unexpected_passes)


def _key(row: dict) -> str:
    return f"{row['op']}.{row['variant']}" if row.get("variant") else row["op"]


@functools.lru_cache(maxsize=256)
def _indices(text: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        values.update(range(int(low), int(high or low) + 1))
    return frozenset(values)


def load(path: str = PATH) -> list[Expectation]:
    """The expectations in ``path`` (by default both captures' files); an entry without a reason, or one expecting
    ``mismatch``, is an error."""
    if path == PATH:
        return _load(PATH) + _load(EXPORT_PATH)
    return _load(path)


def _load(path: str) -> list[Expectation]:
    if not os.path.exists(path):
        return []
    with open(path, "rb") as handle:
        entries = tomllib.load(handle).get("expect", [])
    expectations = []
    for entry in entries:
        status = entry["status"] if isinstance(entry["status"], list) else [entry["status"]]
        if "mismatch" in status:
            raise ValueError(f"{path}: an expectation may not hide a mismatch ({entry['op']}): fix the export")
        if not str(entry.get("reason", "")).strip():
            raise ValueError(f"{path}: the expectation for {entry['op']} has no reason")
        expectations.append(Expectation(
            op=entry["op"], status=tuple(status), reason=entry["reason"], samples=str(entry.get("samples", "*")),
            opsets=tuple(entry.get("opsets", OPSETS)), modes=tuple(entry.get("modes", MODES)),
            dtypes=tuple(entry.get("dtypes", ["*"])), captures=tuple(entry.get("captures", [Capture.TRACE, Capture.SCRIPT]))))
    return expectations


def needs_no_excuse(row: dict) -> bool:
    return (row["status"] in NEEDS_NO_EXCUSE or (row["status"] == "unsupported" and row.get("lowest_opset"))
            or (row["status"] == "no_symbolic" and _registry_has_none(row)))


_NO_SYMBOLIC = re.compile(r"no symbolic for (\S+)$")


def _registry_has_none(row: dict) -> bool:
    """Whether the op a ``no_symbolic`` row names (its reason: "no symbolic for aten::X") has no symbolic in the
    registry at any opset, a refusal included."""
    named = _NO_SYMBOLIC.match(row.get("reason") or "")
    return bool(named) and not any(REGISTRY.has_symbolic(named.group(1), opset) for opset in ALL_OPSETS)


def judge(rows: list[dict], expectations: list[Expectation], report_stale: bool = True) -> Judgement:
    """Judge every row; with ``report_stale``, list the entries that cover some row but match none."""
    judgement = Judgement()
    covered: set[Expectation] = set()
    used: set[Expectation] = set()
    index = _by_op(expectations)
    for row in rows:
        covering = [e for e in index.get(_key(row), []) + index.get(None, []) if e.covers(row)]
        candidates = [e for e in covering if row["mode"] in e.modes]  # the entries matching the row
        covered.update(covering)
        used.update(candidates)
        row["expectation"] = candidates[0].reason if candidates else None
        if row["status"] == "mismatch":
            judgement.mismatches.append(row)
        elif row["status"] == "pass" and candidates:
            judgement.unexpected_passes.append((row, candidates[0]))
        elif any(row["status"] in e.status for e in candidates):
            judgement.expected.append(row)
        elif not needs_no_excuse(row):
            judgement.unexpected_failures.append(row)
    if report_stale:
        judgement.stale = [e for e in expectations if e in covered and e not in used]
    return judgement


def _by_op(expectations: list[Expectation]) -> dict:
    """Expectations by exact OpInfo key; glob entries under None (checked against every row)."""
    table: dict = collections.defaultdict(list)
    for expectation in expectations:
        table[None if any(c in expectation.op for c in "*?[") else expectation.op].append(expectation)
    return table


def draft(rows: list[dict]) -> str:
    """TOML entries covering exactly the rows that need an excuse (never a mismatch), for review.

    Rows group by (OpInfo, dtype, mode, status, error signature); within a group, samples failing at the same
    opsets share an entry; a sample set that is every sample of the OpInfo at that dtype is written ``"*"``.
    """
    all_samples: dict = collections.defaultdict(set)
    groups: dict = collections.defaultdict(lambda: collections.defaultdict(set))
    captures = {_key(row): row.get("capture", Capture.TRACE) for row in rows}
    for row in rows:
        all_samples[(_key(row), row.get("dtype"), row["mode"])].add(row.get("sample"))
        if row["status"] == "mismatch" or needs_no_excuse(row):
            continue
        groups[(_key(row), row.get("dtype"), row["mode"], row["status"], _signature(row))][row.get("sample")].add(row["opset"])
    entries = []
    for (key, dtype, mode, status, reason), per_sample in sorted(groups.items(), key=lambda kv: [str(k) for k in kv[0]]):
        by_opsets: dict = collections.defaultdict(set)
        for sample, opsets in per_sample.items():
            by_opsets[frozenset(opsets)].add(sample)
        for opsets, chosen in sorted(by_opsets.items(), key=lambda kv: min(kv[1])):
            samples = "*" if chosen == all_samples[(key, dtype, mode)] else _ranges(chosen)
            for low, high in _runs(sorted(opsets)):
                entries.append(_entry(key, samples, (low, high), mode, dtype, status, reason, captures[key]))
    return "\n".join(entries)


def _signature(row: dict) -> str:
    """The reason of an excused row: its error's first line with the opset and node names taken out."""
    text = (row.get("error") or row.get("reason") or "").strip().splitlines()
    line = text[0] if text else row["status"]
    line = re.sub(r"at opset \d+", "at this opset", line)
    return re.sub(r"node name: [^)]*\)", "node)", line)[:240]


def _runs(values: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return [(low, high) for low, high in runs]


def _ranges(samples: set) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in _runs(sorted(samples)))


def _entry(key, samples, opsets, mode, dtype, status, reason, capture) -> str:
    import json

    captures = f"captures = [{json.dumps(capture)}]\n" if capture == Capture.EXPORT else ""
    return (f"[[expect]]\nop = {json.dumps(key)}\nsamples = {json.dumps(samples)}\nopsets = [{opsets[0]}, {opsets[1]}]\n"
            f"modes = [{json.dumps(mode)}]\ndtypes = [{json.dumps(dtype)}]\n{captures}status = {json.dumps(status)}\n"
            f"reason = {json.dumps(reason)}\n")
