"""Which ops have symbolics at which opsets: a snapshot taken from the exporter, or inferred from results.

The report is meant to be a function of its inputs, so the registry is recorded as a JSON snapshot
(``python -m reports registry --out FILE``) and passed to ``build --registry FILE``; without one, what
results prove about the registry (a pass means a symbolic exists, the exporter's error text says when none
does) is used and the report says so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from reports.results import (
    NOT_REGISTERED_MARKER,
    OPSETS,
    kind_of,
    op_of,
    opset_of,
    qualified_op,
    text,
)

_NOT_EXPORTABLE = re.compile(r"(?<![\w:.])([\w:.]+) is not exportable at opset (\d+)")


def take_snapshot() -> dict[str, Any]:
    """The live exporter registry: for every registered op, the opsets MIN_OPSET-MAX_OPSET at which a symbolic applies."""
    from exporter.lowering.runtime import WORKAROUNDS
    from exporter.registry import REGISTRY

    ops = {name: REGISTRY.supported_opsets(name) for name in REGISTRY.names()}
    families = {name: REGISTRY.family(name) for name in REGISTRY.names() if REGISTRY.family(name)}
    workarounds = [dataclasses.asdict(w) for w in WORKAROUNDS.values()]
    return {"source": "exporter.registry.REGISTRY", "ops": ops, "families": families, "workarounds": workarounds}


def load_snapshot(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        snapshot = json.load(handle)
    if not isinstance(snapshot.get("ops"), dict):
        raise ValueError(f"{path} is not a registry snapshot (no 'ops' mapping)")
    snapshot.setdefault("source", path)
    return snapshot


def infer_snapshot(rows: list[dict]) -> dict[str, Any]:
    """What the results themselves prove: ops that exported at an opset, and ops the exporter said it lacks."""
    supported: dict[str, set[int]] = {}
    unsupported: dict[str, set[int]] = {}
    for row in rows:
        opset = opset_of(row)
        if opset is None:
            continue
        if kind_of(row) == "op" and text(row, "status") not in ("unsupported", "export_error", "skipped", ""):
            supported.setdefault(qualified_op(op_of(row)), set()).add(opset)
        error = text(row, "error")
        # The substring test first: the regex alone backtracks quadratically over long error texts.
        match = _NOT_EXPORTABLE.search(error) if " is not exportable at opset " in error else None
        if match:
            unsupported.setdefault(qualified_op(match.group(1)), set()).add(int(match.group(2)))
        if NOT_REGISTERED_MARKER in text(row, "error") and match:
            unsupported[qualified_op(match.group(1))].update(OPSETS)
        if text(row, "status") == "pass" and kind_of(row) != "op":
            for op in row.get("aten_ops") or []:
                supported.setdefault(str(op), set()).add(opset)
    return {
        "source": "inferred from results",
        "ops": {op: sorted(opsets) for op, opsets in sorted(supported.items())},
        "known_missing": {op: sorted(opsets) for op, opsets in sorted(unsupported.items())},
    }


class SymbolicIndex:
    """Answers 'is there a symbolic for op X at opset N?' with True, False, or None (unknown)."""

    def __init__(self, snapshot: dict[str, Any]):
        self.source = snapshot.get("source", "")
        self.inferred = "known_missing" in snapshot
        self._supported = {op: set(opsets) for op, opsets in snapshot.get("ops", {}).items()}
        self._missing = {op: set(opsets) for op, opsets in snapshot.get("known_missing", {}).items()}

    def registered(self) -> set[str] | None:
        """All registered op names, or None when only inferred (absence then proves nothing)."""
        return None if self.inferred else set(self._supported)

    def supported(self, op: str, opset: int) -> bool | None:
        op = qualified_op(op)
        if opset in self._supported.get(op, ()):
            return True
        if not self.inferred or opset in self._missing.get(op, ()):
            return False
        return None

    def names(self) -> list[str]:
        return sorted(self._supported)

    def lowest(self, op: str) -> int | None:
        """The lowest opset the registry declares for ``op`` (None when it has none, or when only inferred)."""
        opsets = self._supported.get(qualified_op(op))
        return None if self.inferred or not opsets else min(opsets)
