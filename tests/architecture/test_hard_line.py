"""The one hard line: the engine never calls torch.onnx nor a torch._C function with "onnx" in its name.

Its one exception: ``exporter/errors.py`` imports ``torch.onnx.errors.OnnxExporterError`` as the base of our errors,
so that callers catch our refusals as PyTorch's. That import, and nothing else of torch.onnx, is allowed.
"""

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
ALLOWED_IMPORT = ("torch.onnx.errors", ["OnnxExporterError"])  # the base class of our errors, in errors.py only
ERRORS_MODULE = ENGINE / "errors.py"
# The stand-in swaps torch.onnx.export for ours and back: it reads the attribute to replace it, and never calls it.
STAND_IN_MODULE = ENGINE / "stand_in.py"
STAND_IN_ALLOWED = {"import torch.onnx", "torch.onnx", "torch.onnx.export"}


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _violations(tree: ast.AST, allow_base_class: bool = False):
    for node in ast.walk(tree):
        if allow_base_class and isinstance(node, ast.ImportFrom) and (node.module, [a.name for a in node.names]) \
                == ALLOWED_IMPORT:
            continue
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
        for line, what in _violations(ast.parse(path.read_text(), str(path)), allow_base_class=path == ERRORS_MODULE):
            if not (path == STAND_IN_MODULE and what in STAND_IN_ALLOWED):
                offenders.append(f"{path.relative_to(ENGINE.parent)}:{line}: {what}")
    assert not offenders, "\n".join(offenders)


def test_the_stand_in_never_calls_what_it_replaces():
    calls = [node for node in ast.walk(ast.parse(STAND_IN_MODULE.read_text()))
             if isinstance(node, ast.Call) and _dotted(node.func).startswith("torch.onnx")]
    assert not calls and "torch.onnx.export" in STAND_IN_MODULE.read_text()


def test_the_source_scan_catches_violations():
    sample = (
        "import torch.onnx\nfrom torch import onnx\ntorch._C._jit_pass_onnx(g)\ngetattr(torch._C, '_jit_pass_onnx_lint')\n"
        "importlib.import_module('torch.onnx.utils')\nimportlib.import_module('torch.onnx._internal.exporter._flags')\n"
    )
    assert {line for line, _ in _violations(ast.parse(sample))} == {1, 2, 3, 4, 5, 6}


def test_the_scan_allows_exactly_the_error_base_class_import_in_errors_py():
    allowed = "from torch.onnx.errors import OnnxExporterError as TorchOnnxExporterError\n"
    assert not list(_violations(ast.parse(allowed), allow_base_class=True))
    assert list(_violations(ast.parse(allowed)))  # anywhere else it is a violation
    for other in ("from torch.onnx.errors import OnnxExporterError, SymbolicValueError\n",
                  "from torch.onnx.errors import UnsupportedOperatorError\n", "from torch.onnx import errors\n",
                  "import torch.onnx.errors\n", "x = torch.onnx.errors.OnnxExporterError\n"):
        assert list(_violations(ast.parse(other), allow_base_class=True)), other


def test_every_error_of_ours_is_a_torch_onnx_exporter_error():
    from torch.onnx.errors import OnnxExporterError

    classes = [c for c in vars(exporter.errors).values() if isinstance(c, type) and issubclass(c, Exception)
               and c.__module__ == "exporter.errors"]
    assert len(classes) >= 6 and all(issubclass(c, OnnxExporterError) for c in classes)
    with pytest.raises(OnnxExporterError, match="supports opsets 7 to 26"):
        exporter.export(torch.nn.ReLU(), (torch.randn(2),), io.BytesIO(), opset_version=27, dynamo=False)


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
                    dynamic_axes={"x": {0: "batch"}}, input_names=["x"], dynamo=False)
    assert buffer.getvalue()


def test_scripted_export_works_with_onnx_functions_replaced(onnx_functions_raise):
    @torch.jit.script
    def fn(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1.0

    buffer = io.BytesIO()
    exporter.export(fn, (torch.randn(2, 3),), buffer, opset_version=11, dynamo=False)
    assert buffer.getvalue()


def test_torch_is_in_onnx_export_stays_false_during_our_export():
    """The engine touches no torch.onnx state, not even the flag torch.onnx.is_in_onnx_export() reads: during our
    export it is exporter.is_in_onnx_export() that is True."""
    seen = []

    class ReadsBoth(torch.nn.Module):
        def forward(self, x):
            seen.append((torch.onnx.is_in_onnx_export(), exporter.is_in_onnx_export()))
            return x + 1

    exporter.export(ReadsBoth(), (torch.randn(2),), io.BytesIO(), dynamo=False)
    assert seen == [(False, True)]


def _torch_onnx_modules_after(program: str) -> str:
    """The torch.onnx modules loaded at the end of ``program``, run in a fresh process (their sorted list, printed)."""
    script = program + "\nprint(sorted(m for m in sys.modules if m.startswith('torch.onnx')))\n"
    env = dict(os.environ, PYTHONPATH=str(ENGINE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_exports_load_nothing_of_torch_onnx_but_what_importing_its_error_class_loads():
    """Importing ``torch.onnx.errors`` (for our errors' base class) loads the torch.onnx package; exporting (traced,
    dynamic axes, Conv+BatchNorm) and failing load not one torch.onnx module more."""
    just_the_base_class = _torch_onnx_modules_after("import sys, torch, torch.onnx.errors")
    exports = _torch_onnx_modules_after(
        "import io, sys, torch, exporter\n"
        "model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()\n"
        "exporter.export(model, (torch.randn(1, 3, 8, 8),), io.BytesIO(), opset_version=11, input_names=['x'],\n"
        "                dynamic_axes={'x': [0]}, dynamo=False)\n"
        "try:\n"
        "    exporter.export(torch.nn.ReLU(), (torch.randn(2),), io.BytesIO(), opset_version=99, dynamo=False)\n"
        "except exporter.errors.OnnxExporterError as error:\n"
        "    assert type(error) is exporter.errors.ExportArgumentError, type(error).__mro__\n"
    )
    assert exports == just_the_base_class
