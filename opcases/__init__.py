"""Op cases, one module per op family; each module defines ``CASES: list[OpCase]``."""

from __future__ import annotations

import importlib
import pkgutil

from op_tests.harness import OpCase


def all_cases() -> list[OpCase]:
    cases: list[OpCase] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        cases.extend(getattr(module, "CASES", []))
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate op case names: {duplicates}")
    return cases
