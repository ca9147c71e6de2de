"""The engine's layers and the project's import graph, checked on the source: the symbolics (and the modules they
build on) never import the converter or the public API, the library never imports the harness, and no import circle
runs through the engine or through the harness. Every import counts (see ``tests.architecture.import_graph``): the ones inside
functions, the ones under ``if TYPE_CHECKING:`` and the package roots too."""

from __future__ import annotations

import ast
import functools

import pytest

from tests.architecture.import_graph import (
    HARNESS,
    LIBRARY,
    import_circle,
    import_graph,
    imports,
    project_modules,
    reaches,
)

# The top of the flow: what users call and what orchestrates an export (the package root is the public facade over the
# API and verify; verify's machinery, exporter.localization, exports the model it verifies), and the front ends, one
# package per capture (exporter.frontends.*: each capture, its facts, its driver, its graph reader), which the
# pipeline reaches through the one FrontEnd of exporter.frontends.base. Below them, the core: the conversion core
# both drivers build on, the registry, the graph context, the options, the IR, the lowering layer and the symbolics,
# the seam's own types (frontends.base, and the captured graph verify reads: localization.captured and selections);
# the core imports no front end.
PIPELINE = {"exporter", "exporter.api", "exporter.contract", "exporter.stand_in", "exporter.verify", "exporter.__main__",
            "exporter.capture_choice", "exporter.arguments", "exporter.artifacts", "exporter.program",
            "exporter.localization", "exporter.localization.findings", "exporter.localization.repro",
            "exporter.localization.runs", "exporter.localization.verifier"}
FRONT_END_PACKAGES = ("exporter.frontends.torchscript", "exporter.frontends.export")


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def is_above_the_api(module: str) -> bool:
    """The generation helpers (exporter.generation) export prefill and decode steps through the public API."""
    return in_package(module, "exporter.generation")


def is_front_end(module: str) -> bool:
    return module == "exporter.frontends" or any(in_package(module, package) for package in FRONT_END_PACKAGES)


@functools.lru_cache(maxsize=1)
def _import_graph() -> dict[str, set[str]]:
    """Module -> the engine modules it imports."""
    return import_graph((LIBRARY,))


UPPER = PIPELINE | {name for name in _import_graph() if is_front_end(name) or is_above_the_api(name)}
LOWER = sorted(name for name in _import_graph() if name not in UPPER)


@pytest.mark.parametrize("module", LOWER)
def test_the_core_never_imports_a_front_end_or_the_pipeline(module):
    path = reaches(_import_graph(), module, UPPER)
    assert path is None, f"{module} reaches the upper layer: {' -> '.join(path)}"


def test_the_library_never_imports_the_harness():
    """The harness builds on the library, never the other way: what both need (the comparison, the tolerance table,
    the ONNX Runtime session) lives in the library."""
    offenders = {name: sorted(i for i in imports(path) if i.split(".")[0] in HARNESS)
                 for name, path in project_modules().items() if name.split(".")[0] == LIBRARY}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_scan_sees_lazy_imports(tmp_path):
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    from exporter.frontends.torchscript.driver import Converter\n")
    assert "exporter.frontends.torchscript.driver" in imports(source)


# What a family module of the op library may build on: the registry, the lowering layer and the facts below them; a
# family of TorchScript's own ops (exporter.frontends.torchscript.symbolics) its front end's facts too.
FAMILY_MAY_IMPORT = ("exporter.registry", "exporter.lowering", "exporter.ir", "exporter.dtypes", "exporter.errors",
                     "exporter.options", "exporter.graph_context")
TORCHSCRIPT_FAMILIES = "exporter.frontends.torchscript.symbolics"
FAMILIES = sorted(name for name in _import_graph()
                  if name.startswith("exporter.symbolics.") or name.startswith(TORCHSCRIPT_FAMILIES + "."))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_imports_only_the_registry_the_lowering_layer_and_the_facts(family):
    """Families are not each other's helper libraries: what two of them share is a building block in lowering/."""
    may_import = FAMILY_MAY_IMPORT + (("exporter.frontends.torchscript.facts",)
                                      if family.startswith(TORCHSCRIPT_FAMILIES) else ())

    def allowed(name):
        return any(in_package(name, prefix) for prefix in may_import)

    assert sorted(name for name in _import_graph()[family] if not allowed(name)) == []


@pytest.mark.parametrize("module", sorted(name for name in _import_graph() if name.startswith("exporter.lowering")))
def test_the_lowering_layer_never_imports_a_family(module):
    assert sorted(name for name in _import_graph()[module] if name.startswith("exporter.symbolics")) == []


@pytest.mark.parametrize("packages", [(LIBRARY,), HARNESS], ids=["engine", "harness"])
def test_no_import_circle(packages):
    circle = import_circle(import_graph(packages))
    assert circle is None, f"import circle: {' -> '.join(circle)}"


def test_the_scan_sees_type_checking_imports_and_the_package_root(tmp_path):
    source = tmp_path / "typed.py"
    source.write_text("from typing import TYPE_CHECKING\nfrom exporter import __version__, ir\n"
                      "if TYPE_CHECKING:\n    from exporter.graph_context import ExportSession\n")
    assert imports(source) == {"exporter", "exporter.ir", "exporter.graph_context"}


def test_the_circle_scan_finds_a_circle():
    assert import_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_circle({"a": {"a", "b"}, "b": set()}) is None  # a package importing its own submodules


def test_the_family_scan_sees_a_family_import(tmp_path):
    source = tmp_path / "family.py"
    source.write_text("from exporter.symbolics.shape import arange_indices\n")
    assert "exporter.symbolics.shape" in imports(source)


# Capture-specific code lives in its front end's package, and nowhere else: a module outside
# exporter.frontends.torchscript reads no TorchScript graph (no call of the graph API below, no torch._C.Graph / Node /
# Value / Block, nothing of torch._C's _jit functions, nothing of torch.jit but the model types a caller hands in);
# a module outside exporter.frontends.export uses nothing of torch.export, torch.fx, torch._dynamo, torch._export,
# torch._higher_order_ops, torch._decomp or torch._subclasses (imported or spelled out) but the model type a caller
# hands in, ExportedProgram. The op library reads the node being converted through GraphContext's facts
# (graph_context.NodeFacts), which each front end answers, so one symbolic serves both captures; the pipeline asks a
# capture's front end (frontends.base.FrontEnd).
_TORCHSCRIPT_GRAPH_API = frozenset({
    "inputsAt", "outputsAt", "inputsSize", "outputsSize", "uses", "scopeName", "sourceRange", "blocks", "toIValue",
    "pyobj", "cconv", "scalar_args", "returnNode", "return_node", "insertConstant", "replaceAllUsesWith", "kindOf",
    "schema", "scalarType", "varyingSizes", "getElementType",
})
_MODEL_TYPES = frozenset({"torch.jit.ScriptModule", "torch.jit.ScriptFunction", "torch.export.ExportedProgram"})
_CAPTURE_MODULES = {  # module prefix -> the front end that alone may use it
    "torch.jit": "exporter.frontends.torchscript", "torch._C._jit": "exporter.frontends.torchscript",
    "torch._C.Graph": "exporter.frontends.torchscript", "torch._C.Node": "exporter.frontends.torchscript",
    "torch._C.Value": "exporter.frontends.torchscript", "torch._C.Block": "exporter.frontends.torchscript",
    **{prefix: "exporter.frontends.export" for prefix in (
        "torch.export", "torch.fx", "torch._dynamo", "torch._export", "torch._higher_order_ops", "torch._decomp",
        "torch._subclasses")},
}
# Named exceptions, each for a reason: the public signature of unconvertible_ops returns the TorchScript graph (as
# torch.onnx's does); a ScriptFunction's parameters are read from its schema before any capture (binding).
_ALLOWED_ELSEWHERE = {("exporter.api", "torch._C.Graph"), ("exporter.binding", ".schema")}


def _owner(spelled: str) -> str | None:
    """The front end that alone may use ``spelled`` (a dotted name or an imported module), or None."""
    for prefix, owner in _CAPTURE_MODULES.items():
        if spelled == prefix or spelled.startswith(prefix + ".") or (prefix.endswith("_jit") and spelled.startswith(prefix)):
            return owner
    return None


def capture_specific_uses(source: str) -> list[tuple[str, str, int]]:
    """Each use in ``source`` of one capture's machinery: (what, the front end owning it, line). A dotted name counts
    once, spelled out whole (``torch.fx.Node``, not also ``torch.fx``)."""
    tree = ast.parse(source)
    found: list[tuple[str, str | None, int]] = []
    attributes = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)]
    owned = [node for node in attributes if _owner(ast.unparse(node))]
    inner = {id(node.value) for node in owned}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, _owner(alias.name), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, _owner(node.module) or _owner(f"{node.module}.{alias.name}"), node.lineno)
                      for alias in node.names]
    for node in attributes:
        spelled = ast.unparse(node)
        if node.attr in _TORCHSCRIPT_GRAPH_API:
            found.append((f".{node.attr}", "exporter.frontends.torchscript", node.lineno))
        elif node in owned and id(node) not in inner and spelled not in _MODEL_TYPES:
            found.append((spelled, _owner(spelled), node.lineno))
    return [(what, owner, line) for what, owner, line in found if owner is not None]


@pytest.mark.parametrize("module", sorted(_import_graph()))
def test_capture_specific_code_lives_in_its_front_end(module):
    misplaced = [f"line {line}: {what} (belongs in {owner})"
                 for what, owner, line in capture_specific_uses(project_modules()[module].read_text())
                 if not in_package(module, owner) and (module, what) not in _ALLOWED_ELSEWHERE]
    assert misplaced == [], f"{module} uses a capture's machinery outside its front end: {misplaced}"


def test_the_capture_scan_sees_each_capture():
    source = ("import torch.fx\nfrom torch.export import Dim\nfrom torch._C import _jit_pass_dce\n"
              "def f(model, node, graph):\n    torch.jit.trace(model, ())\n    node.inputsAt(0)\n"
              "    isinstance(model, torch.jit.ScriptModule)\n    isinstance(model, torch.export.ExportedProgram)\n"
              "    torch.export.export(model, ())\n    torch._C._jit_pass_inline(graph)\n    return torch.fx.Node\n")
    assert sorted((what, owner.rsplit(".", 1)[1]) for what, owner, _ in capture_specific_uses(source)) == sorted([
        ("torch.fx", "export"), ("torch.export", "export"), ("torch._C", "torchscript"),
        ("torch.jit.trace", "torchscript"), (".inputsAt", "torchscript"), ("torch.export.export", "export"),
        ("torch._C._jit_pass_inline", "torchscript"), ("torch.fx.Node", "export")])


def test_the_front_ends_are_reached_through_their_protocol():
    """The pipeline asks a capture's front end; apart from the registry of front ends (exporter.frontends), only the
    modules that must name one capture import a front end's modules: capture_choice (which capture to make, and the
    fallback to the trace), the api (TorchScript's capture for unconvertible_ops and the trace), arguments
    (torch.export's dynamic_shapes, read for both captures) and contract (a program handed in)."""
    reaching = {name for name, imported in _import_graph().items()
                if not is_front_end(name) and any(is_front_end(i) for i in imported)}
    assert reaching == {"exporter.capture_choice", "exporter.api", "exporter.arguments", "exporter.contract"}
