"""One dispatch model for the op library: a symbolic declares the opsets it supports in the registry
(``@symbolic(name, since=N)``, one variant per ONNX form), and every other opset-dependent choice lives in a
building block of ``exporter/lowering/`` that owns its fork and names its minimum opset (``require_opset`` for a form
that needs a later opset). So no family module of ``exporter/symbolics/`` compares the target opset itself; this
test reads their source to make sure."""

from __future__ import annotations

import ast
import pathlib

import pytest

import exporter

_ROOT = pathlib.Path(exporter.__file__).parent  # the families both captures share, and TorchScript's own
FAMILIES = sorted(p for folder in (_ROOT / "symbolics", _ROOT / "frontends" / "torchscript" / "symbolics")
                  for p in folder.glob("*.py")
                  if p.name != "__init__.py")


def _mentions_opset(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Attribute) and n.attr == "opset") or
               (isinstance(n, ast.Name) and "opset" in n.id.lower()) for n in ast.walk(node))


def opset_forks(source: str) -> list[int]:
    """Lines of ``source`` where a comparison involves the target opset (``g.opset >= 11``, ``opset < X_OPSET``)."""
    return sorted({node.lineno for node in ast.walk(ast.parse(source))
                   if isinstance(node, ast.Compare) and _mentions_opset(node)})


@pytest.mark.parametrize("family", FAMILIES, ids=[p.stem for p in FAMILIES])
def test_a_family_never_compares_the_opset(family):
    assert opset_forks(family.read_text()) == [], (
        f"{family.name} forks on the opset at these lines: register a variant with since=N, move the fork into a "
        "building block of exporter/lowering/, or declare the form's minimum with require_opset")


def test_the_scan_sees_forks():
    assert opset_forks("def f(g):\n    if g.opset >= 11:\n        pass\n    x = 1 if opset < SEQ_OPSET else 2\n") == [2, 4]
    assert opset_forks("def f(g):\n    raise unsupported(g.node.kind(), g.opset, 'no ONNX form')\n") == []
