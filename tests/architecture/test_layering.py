"""The engine's layers and the project's import graph, checked on the source: the symbolics (and the modules they
build on) never import the converter or the public API, the library never imports the harness, and no import circle
runs through the engine or through the harness. Every import counts (see ``tests.architecture.import_graph``): the ones inside
functions, the ones under ``if TYPE_CHECKING:`` and the package roots too."""

from __future__ import annotations

import ast
import functools
import pathlib

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

# The top of the flow: what builds ONNX graphs from TorchScript ones and what users call (the package root is the
# public facade over the API and verify; verify's machinery, exporter.localization, exports the model it verifies).
# Below them: the registry, the graph context, the TorchScript facts (ts_types), the options, the IR and the symbolics.
UPPER = {"exporter", "exporter.api", "exporter.contract", "exporter.stand_in", "exporter.convert", "exporter.convert_fx", "exporter.verify", "exporter.__main__",
         "exporter.localization", "exporter.localization.findings", "exporter.localization.repro",
         "exporter.localization.runs", "exporter.localization.selections", "exporter.localization.verifier",
         "exporter.localization.captured", "exporter.localization.torchscript_graph", "exporter.localization.fx_graph"}


@functools.lru_cache(maxsize=1)
def _import_graph() -> dict[str, set[str]]:
    """Module -> the engine modules it imports."""
    return import_graph((LIBRARY,))


LOWER = sorted(name for name in _import_graph() if name not in UPPER)


@pytest.mark.parametrize("module", LOWER)
def test_lower_layers_never_import_the_converter_or_the_api(module):
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
    source.write_text("def f():\n    from exporter.convert import Converter\n")
    assert "exporter.convert" in imports(source)


# What a family module of the op library may build on: the registry, the lowering layer and the facts below them.
FAMILY_MAY_IMPORT = ("exporter.registry", "exporter.lowering", "exporter.ts_types", "exporter.ir", "exporter.dtypes",
                     "exporter.errors", "exporter.options", "exporter.graph_context")
FAMILIES = sorted(name for name in _import_graph() if name.startswith("exporter.symbolics."))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_imports_only_the_registry_the_lowering_layer_and_the_facts(family):
    """Families are not each other's helper libraries: what two of them share is a building block in lowering/."""
    def allowed(name):
        return any(name == prefix or name.startswith(prefix + ".") for prefix in FAMILY_MAY_IMPORT)

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


# The TorchScript graph API (torch._C.Node / Value / Graph / Block methods). Only the TorchScript front end and the
# modules that read its graph by design may call them; the op library reads the node being converted through
# GraphContext's facts (graph_context.NodeFacts), which each front end answers, so one symbolic serves both captures.
_TORCHSCRIPT_GRAPH_API = frozenset({
    "inputsAt", "outputsAt", "inputsSize", "outputsSize", "uses", "scopeName", "sourceRange", "blocks", "toIValue",
    "pyobj", "cconv", "scalar_args", "returnNode", "return_node", "insertConstant", "replaceAllUsesWith", "kindOf",
    "schema", "scalarType", "varyingSizes", "getElementType",
})
_TORCHSCRIPT_READERS = {
    # the TorchScript front end: its capture, passes, facts and driver
    "exporter.capture.torchscript", "exporter.capture.scripted", "exporter.capture.flat_graph",
    "exporter.capture.mutation", "exporter.capture.script_passes",
    "exporter.capture.module_state", "exporter.ts_types", "exporter.convert",
    # the check that a trace honours its dynamic axes: it compares two traces of the model, node by node
    "exporter.capture.traced_sizes",
    # TorchScript's own prim:: ops (If/Loop blocks, lists, tuples): no torch.export program holds them
    "exporter.symbolics.prim", "exporter.symbolics.control_flow", "exporter.symbolics.loop",
    # readers of a TorchScript capture's graph: list-input types and inputs PyTorch's exporter reads at run time
    # (naming), the origin of a TorchScript node (provenance), the captured TorchScript graph as verify reads it
    # (its verifier reads either capture through exporter.localization.captured), the op listing of
    # unconvertible_ops (api), a scripted function's parameters from its schema (binding)
    "exporter.naming", "exporter.provenance", "exporter.localization.torchscript_graph", "exporter.api",
    "exporter.binding",
}


def _graph_api_calls(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _TORCHSCRIPT_GRAPH_API:
            found.append(f"line {node.lineno}: .{node.attr}")
        if isinstance(node, ast.Attribute) and node.attr in ("Graph", "Node", "Value", "Block") and \
                ast.unparse(node.value) == "torch._C":
            found.append(f"line {node.lineno}: torch._C.{node.attr}")
    return found


@pytest.mark.parametrize("module", sorted(name for name in _import_graph() if name not in _TORCHSCRIPT_READERS))
def test_only_the_torchscript_front_end_reads_torchscript_graphs(module):
    assert not _graph_api_calls(project_modules()[module]), (
        f"{module} reads the TorchScript graph API; ask GraphContext's facts (NodeFacts) instead")
