"""The command lines answer before torch is imported: ``--help``, a bad option and a run refused because another
holds its ``--out`` cost a fraction of a second, not the seconds torch takes to import. The package root imports its
public names on first use (``exporter/__init__.py``), and the registry reads full however the engine is entered.

Each check runs a fresh interpreter with ``-X importtime``, which lists every module the command imported."""

from __future__ import annotations

import importlib
import os
import pathlib
import re
import subprocess
import sys

import pytest

import exporter
from conformance.results import sole_writer

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _imported(*arguments: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules a fresh ``python -X importtime *arguments`` imports, and its completed process."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", *arguments], capture_output=True, text=True,
                          cwd=ROOT, env=environment, timeout=120)
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert modules, done.stderr[-2000:]  # the timing lines are there: an empty set would prove nothing
    return modules, done


def _torch_modules(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m == "torch" or m.startswith("torch."))


@pytest.mark.parametrize("command", [["-m", "exporter", "--help"], ["-m", "conformance", "--help"],
                                     ["-m", "conformance", "list", "--tier", "nonsense"],
                                     ["-m", "exporter", "m:f", "--input-shape", "1", "--opset", "99"]],
                         ids=["exporter-help", "conformance-help", "conformance-bad-option", "exporter-bad-opset"])
def test_the_command_lines_parse_before_importing_torch(command):
    modules, done = _imported(*command)
    assert done.returncode in (0, 2), done.stderr[-2000:]
    assert _torch_modules(modules) == []


def test_a_run_on_a_held_out_file_is_refused_before_torch_is_imported(tmp_path):
    out = tmp_path / "results.jsonl"
    with sole_writer(str(out)):
        modules, done = _imported("-m", "conformance", "run", "--out", str(out))
    assert done.returncode == 2
    assert "is being written by another run" in done.stderr
    assert _torch_modules(modules) == []


def test_importing_the_package_imports_no_torch():
    modules, done = _imported("-c", "import exporter")
    assert done.returncode == 0 and _torch_modules(modules) == []


@pytest.mark.parametrize("name", exporter.__all__)
def test_every_public_name_is_its_home_module_s(name):
    """``exporter.<name>`` (and ``from exporter import <name>``) is the object its module defines."""
    value = getattr(exporter, name)
    home = exporter._HOMES.get(name)
    if home is not None:
        module = importlib.import_module(home)
        assert value is (module if name == "errors" else getattr(module, name))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        exporter.no_such_name  # noqa: B018


def test_the_registry_reads_full_when_entered_directly():
    """Entered at the registry (nothing imported the op library), its queries see every built-in symbolic."""
    code = ("from exporter.registry import REGISTRY\n"
            "print(REGISTRY.is_supported('aten::relu', 17), REGISTRY.family('aten::gather'), len(REGISTRY.names()))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    supported, family, count = done.stdout.split()
    assert (supported, family) == ("True", "indexing")
    from exporter.registry import REGISTRY

    assert int(count) == len(REGISTRY.names())


def test_verify_stays_the_function_once_its_module_is_imported():
    """``exporter.verify`` the function is defined by the module of the same name, whose import would make the
    package attribute the module (a localization that calls ``exporter.verify`` then fails: 'module' object is
    not callable)."""
    code = "import exporter.verify, exporter\nprint(callable(exporter.verify), exporter.verify.__module__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["True", "exporter.verify"], done.stderr[-2000:]
