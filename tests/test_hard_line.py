"""The one hard line: the engine never calls torch.onnx nor a torch._C function with "onnx" in its name."""

from __future__ import annotations

import ast
import io
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch
import torchvision

import exporter

ENGINE = pathlib.Path(exporter.__file__).parent
FORBIDDEN_STRINGS = re.compile(r"_jit_pass_onnx|_export_onnx|_jit_onnx|torch\.onnx")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _violations(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("torch.onnx"):
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [a.name for a in node.names]
            if module.startswith("torch.onnx") or (module == "torch" and "onnx" in names):
                yield node.lineno, f"from {module} import {names}"
            if module.startswith("torch._C") and any("onnx" in n.lower() for n in names):
                yield node.lineno, f"from {module} import {names}"
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted.startswith("torch.onnx") or (
                dotted.startswith(("torch._C.", "_C.")) and "onnx" in node.attr.lower()
            ):
                yield node.lineno, dotted
        elif isinstance(node, ast.Call) and _dotted(node.func) == "getattr" and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and "onnx" in name.value.lower() \
                    and _dotted(target) in ("torch", "torch._C", "_C"):
                yield node.lineno, f"getattr({_dotted(target)}, {name.value!r})"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and FORBIDDEN_STRINGS.search(node.value):
            if not _is_docstring_like(node.value):
                yield node.lineno, f"string {node.value!r}"


def _is_docstring_like(text: str) -> bool:
    return " " in text.strip()


def test_engine_source_never_uses_torch_onnx():
    offenders = []
    for path in ENGINE.rglob("*.py"):
        for line, what in _violations(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ENGINE.parent)}:{line}: {what}")
    assert not offenders, "\n".join(offenders)


def test_the_source_scan_catches_violations():
    sample = (
        "import torch.onnx\nfrom torch import onnx\ntorch._C._jit_pass_onnx(g)\ngetattr(torch._C, '_jit_pass_onnx_lint')\n"
        "importlib.import_module('torch.onnx.utils')\nimportlib.import_module('torch.onnx._internal.exporter._flags')\n"
    )
    assert {line for line, _ in _violations(ast.parse(sample))} == {1, 2, 3, 4, 5, 6}


class _Forbidden(AssertionError):
    pass


def _raiser(name):
    def call(*args, **kwargs):
        raise _Forbidden(f"the engine called {name}")

    return call


@pytest.fixture()
def onnx_functions_raise(monkeypatch):
    """Replace every torch.onnx function and every torch._C function with 'onnx' in its name by one that raises."""
    import torch.onnx

    for name in dir(torch.onnx):
        if callable(getattr(torch.onnx, name, None)) and not name.startswith("__"):
            monkeypatch.setattr(torch.onnx, name, _raiser(f"torch.onnx.{name}"), raising=False)
    replaced = 0
    for name in dir(torch._C):
        if "onnx" in name.lower() and callable(getattr(torch._C, name, None)):
            monkeypatch.setattr(torch._C, name, _raiser(f"torch._C.{name}"), raising=False)
            replaced += 1
    assert replaced > 0, "expected torch._C to have onnx functions to guard"
    return replaced


def test_export_works_with_every_onnx_function_replaced_by_one_that_raises(onnx_functions_raise):
    model = torchvision.models.resnet18(weights=None).eval()
    buffer = io.BytesIO()
    exporter.export(model, torch.randn(1, 3, 64, 64), buffer, opset_version=14,
                    dynamic_axes={"x": {0: "batch"}}, input_names=["x"])
    assert buffer.getvalue()


def test_scripted_export_works_with_onnx_functions_replaced(onnx_functions_raise):
    @torch.jit.script
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1.0

    buffer = io.BytesIO()
    exporter.export(fn, (torch.randn(2, 3),), buffer, opset_version=11)
    assert buffer.getvalue()


def test_torch_is_in_onnx_export_stays_false_during_our_export():
    """The engine touches no torch.onnx state, not even the flag torch.onnx.is_in_onnx_export() reads: during our
    export it is exporter.is_in_onnx_export() that is True."""
    seen = []

    class ReadsBoth(torch.nn.Module):
        def forward(self, x):
            seen.append((torch.onnx.is_in_onnx_export(), exporter.is_in_onnx_export()))
            return x + 1

    exporter.export(ReadsBoth(), (torch.randn(2),), io.BytesIO())
    assert seen == [(False, True)]


def test_an_export_loads_no_torch_onnx_module():
    """The engine never imports torch.onnx: a fresh process that exports (traced, dynamic axes, Conv+BatchNorm) ends
    with no torch.onnx module loaded. (torchvision and torch.jit.script may load it for the caller; not used here.)"""
    script = (
        "import io, sys, torch, exporter\n"
        "model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()\n"
        "exporter.export(model, (torch.randn(1, 3, 8, 8),), io.BytesIO(), opset_version=11, input_names=['x'],\n"
        "                dynamic_axes={'x': [0]})\n"
        "print(sorted(m for m in sys.modules if m.startswith('torch.onnx')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ENGINE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_export_never_imports_torch_onnx():
    """A run that never loads PyTorch's exporter exports, fails, and still has not loaded it."""
    program = (
        "import io, sys, torch, exporter\n"
        "exporter.export(torch.nn.ReLU(), (torch.randn(2),), io.BytesIO())\n"
        "try:\n"
        "    exporter.export(torch.nn.ReLU(), (torch.randn(2),), io.BytesIO(), opset_version=99)\n"
        "except exporter.errors.OnnxExporterError as error:\n"
        "    assert type(error) is exporter.errors.ExportArgumentError, type(error).__mro__\n"
        "assert not [m for m in sys.modules if m.startswith('torch.onnx')], 'torch.onnx was imported'\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, cwd=ENGINE.parent)
