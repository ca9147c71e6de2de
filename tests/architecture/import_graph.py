"""The project's import graph, read from the source: which of the project's modules each of its modules imports.

Every import counts: the ones inside functions and the ones under ``if TYPE_CHECKING:`` too (a lazy or a type-only
import hides a dependency, it does not remove it), and a package's ``__init__`` is a module like any other.
"""

from __future__ import annotations

import ast
import functools
import pathlib

PROJECT = pathlib.Path(__file__).resolve().parents[2]
LIBRARY = "exporter"
HARNESS = ("opcases", "model_zoo", "conformance", "reports", "op_tests", "benchmarks")


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.lru_cache(maxsize=1)
def project_modules() -> dict[str, pathlib.Path]:
    """Module name -> source file, for every module of the project's top-level packages (package roots included)."""
    roots = [path.parent for path in PROJECT.glob("*/__init__.py")]
    return {module_name(path): path for root in roots for path in root.rglob("*.py")}


def imports(path: pathlib.Path) -> set[str]:
    """The project modules ``path`` imports, at any depth. ``from package import name`` imports the submodule
    ``package.name`` where there is one, else the package itself (``name`` is its ``__init__``'s to define)."""
    modules = project_modules()
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(_submodule_or_package(node.module, alias.name, modules) for alias in node.names)
    return found & modules.keys()


def _submodule_or_package(package: str, name: str, modules: dict[str, pathlib.Path]) -> str:
    return f"{package}.{name}" if f"{package}.{name}" in modules else package


def import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the modules it imports, over the modules of ``packages``."""
    inside = {name: path for name, path in project_modules().items() if name.split(".")[0] in packages}
    return {name: imports(path) & inside.keys() for name, path in inside.items()}


def reaches(graph: dict[str, set[str]], start: str, targets: set[str]) -> list[str] | None:
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


def import_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (its modules in import order, the first again at the end), or None."""
    for module in sorted(graph):
        for imported in sorted(graph[module] - {module}):
            back = reaches(graph, imported, {module})
            if back is not None:
                return [module] + back
    return None
