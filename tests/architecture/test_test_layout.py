"""The tests are filed by kind (see ``tests/conftest.py``): every test module is in ``tests/<kind>/``, each kind has
its marker declared, so ``pytest -m <kind>`` and ``pytest tests/<kind>`` select the same tests."""

from __future__ import annotations

import pathlib
import tomllib

from tests.conftest import KINDS

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_every_test_module_is_in_the_folder_of_its_kind():
    misplaced = sorted(path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")
                       if path.relative_to(TESTS).parts[0] not in KINDS)
    assert misplaced == [], "move each into tests/<kind>/ (engine, harness, architecture or docs)"


def test_each_kind_is_a_folder_with_a_declared_marker():
    markers = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    declared = {marker.split(":")[0] for marker in markers}
    assert [kind for kind in KINDS if kind not in declared or not (TESTS / kind / "__init__.py").exists()] == []
