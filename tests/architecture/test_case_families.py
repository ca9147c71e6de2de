"""The op cases are filed by the symbolic family they test: ``opcases/<family>.py`` holds the cases of
``exporter/symbolics/<family>.py`` (or of a front end's own family, ``exporter/frontends/torchscript/symbolics/``),
so the cases of a family are found by its name, and a new family comes with its case file. ``special_values`` is the one case module that is no family: IEEE edge values (infinities, NaN, empty
rows) fed to ops of several families, kept together as one suite."""

from __future__ import annotations

import pathlib

import opcases
from exporter import symbolics
from exporter.frontends.torchscript import symbolics as torchscript_symbolics

NOT_A_FAMILY = {"special_values"}


def _modules(package) -> set[str]:
    return {path.stem for path in pathlib.Path(package.__file__).parent.glob("*.py") if path.stem != "__init__"}


def _families() -> set[str]:
    return _modules(symbolics) | _modules(torchscript_symbolics)


def test_every_symbolic_family_has_a_case_module_of_its_name():
    assert sorted(_families() - _modules(opcases)) == []


def test_every_case_module_is_named_after_a_symbolic_family():
    assert sorted(_modules(opcases) - _families() - NOT_A_FAMILY) == []
