"""The engine's layers, checked on the source: the symbolics (and the modules they build on) never import the
converter or the public API, so no import circle runs through the converter, and none of them imports the harness. Every import counts, the ones inside functions too (a lazy import hides a circle, it does not remove it)."""

from __future__ import annotations

import ast
import functools
import pathlib

import pytest

import exporter

ENGINE = pathlib.Path(exporter.__file__).parent
# The top of the flow: what builds ONNX graphs from TorchScript ones and what users call. Below them: the registry,
# the graph context, the TorchScript facts (ts_types), the options, the IR and the symbolics.
UPPER = {"exporter.api", "exporter.convert", "exporter.convert_fx", "exporter.verify", "exporter.__main__"}
HARNESS = ("conformance", "op_tests", "model_zoo", "reports", "benchmarks")


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path) -> set[str]:
    """Every module ``path`` imports, at any depth, except under ``if TYPE_CHECKING:`` (never run)."""
    names: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@functools.lru_cache(maxsize=1)
def _import_graph() -> dict[str, set[str]]:
    """Module -> the engine modules it imports. The package itself (``exporter/__init__.py``, the public facade) is
    left out: ``from exporter import ir`` imports ``exporter.ir``, not the facade's imports."""
    modules = {_module_name(path): path for path in ENGINE.rglob("*.py") if path.name != "__init__.py" or
               path.parent != ENGINE}
    return {name: {imported for imported in _imports(path) if imported in modules} for name, path in modules.items()}


def _reaches(graph: dict[str, set[str]], start: str, targets: set[str]) -> list[str] | None:
    """An import path from ``start`` to one of ``targets``, or None."""
    stack, seen = [[start]], {start}
    while stack:
        path = stack.pop()
        for imported in sorted(graph.get(path[-1], ())):
            if imported in targets:
                return path + [imported]
            if imported not in seen:
                seen.add(imported)
                stack.append(path + [imported])
    return None


LOWER = sorted(name for name in _import_graph() if name not in UPPER)


@pytest.mark.parametrize("module", LOWER)
def test_lower_layers_never_import_the_converter_or_the_api(module):
    path = _reaches(_import_graph(), module, UPPER)
    assert path is None, f"{module} reaches the upper layer: {' -> '.join(path)}"


def test_the_conversion_layers_never_import_the_harness():
    """Only exporter.verify, which compares with the harness's own tolerance policy by design, may use it."""
    paths = {_module_name(path): path for path in ENGINE.rglob("*.py")}
    offenders = {name: sorted(i for i in _imports(paths[name]) if i.split(".")[0] in HARNESS) for name in LOWER}
    assert not {name: found for name, found in offenders.items() if found}


def test_the_scan_sees_lazy_imports(tmp_path):
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    from exporter.convert import Converter\n")
    assert "exporter.convert" in _imports(source)


# What a family module of the op library may build on: the registry, the lowering layer and the facts below them.
FAMILY_MAY_IMPORT = ("exporter.registry", "exporter.lowering", "exporter.ts_types", "exporter.ir", "exporter.dtypes",
                     "exporter.errors", "exporter.options", "exporter.graph_context")
FAMILIES = sorted(name for name in _import_graph() if name.startswith("exporter.symbolics."))


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_imports_only_the_registry_the_lowering_layer_and_the_facts(family):
    """Families are not each other's helper libraries: what two of them share is a building block in lowering/."""
    allowed = lambda name: any(name == prefix or name.startswith(prefix + ".") for prefix in FAMILY_MAY_IMPORT)
    assert sorted(name for name in _import_graph()[family] if not allowed(name)) == []


@pytest.mark.parametrize("module", sorted(name for name in _import_graph() if name.startswith("exporter.lowering")))
def test_the_lowering_layer_never_imports_a_family(module):
    assert sorted(name for name in _import_graph()[module] if name.startswith("exporter.symbolics")) == []


def test_no_import_circle_in_the_engine():
    graph = _import_graph()
    for module in graph:
        for imported in graph[module] - {module}:  # a package importing its own submodules is no circle
            back = _reaches(graph, imported, {module})
            assert back is None, f"import circle: {module} -> {' -> '.join(back)}"


def test_the_family_scan_sees_a_family_import(tmp_path):
    source = tmp_path / "family.py"
    source.write_text("from exporter.symbolics.shape import arange_indices\n")
    assert "exporter.symbolics.shape" in _imports(source)


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
    "exporter.capture.torchscript", "exporter.capture.mutation", "exporter.capture.script_passes",
    "exporter.capture.module_state", "exporter.ts_types", "exporter.convert",
    # TorchScript's own prim:: ops (If/Loop blocks, lists, tuples): no torch.export program holds them
    "exporter.symbolics.prim", "exporter.symbolics.control_flow",
    # readers of a TorchScript capture's graph: list-input types and inputs PyTorch's exporter reads at run time
    # (naming), the origin of a TorchScript node (provenance), the captured graph run with every value exposed
    # (verify, which refuses dynamo=True), the op listing of unconvertible_ops (api)
    "exporter.naming", "exporter.provenance", "exporter.verify", "exporter.api",
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
    paths = {_module_name(path): path for path in ENGINE.rglob("*.py")}
    assert not _graph_api_calls(paths[module]), (
        f"{module} reads the TorchScript graph API; ask GraphContext's facts (NodeFacts) instead")
