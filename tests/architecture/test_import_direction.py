"""The project's packages in layers, each importing only the layers below it: the flow is one way, from the engine
up to the tests. Every import counts (``tests.architecture.import_graph``: lazy and type-only ones too).

    exporter                      the engine
    opcases, model_zoo            what the harness runs: the op cases (one module per symbolic family) and the models
    conformance                   the harness library: pipeline stages, the op-case runner, results, gate, CLI
    reports                       the HTML report and generated tables, from conformance's results
    op_tests, benchmarks          the pytest tier over the op cases and PyTorch's OpInfo samples; the benchmarks
    tests                         everything's tests

A package of the same layer is not imported either (``opcases`` and ``model_zoo`` know nothing of each other), so a
layer can be read, and changed, knowing only the ones below it.
"""

from __future__ import annotations

import pytest

from tests.architecture.import_graph import PROJECT, imports, project_modules

LAYERS = (("exporter",), ("opcases", "model_zoo"), ("conformance",), ("reports",), ("op_tests", "benchmarks"),
          ("tests",))
LAYER_OF = {package: height for height, layer in enumerate(LAYERS) for package in layer}


def upward_imports(package: str) -> list[str]:
    """``module -> imported module`` for each import of ``package`` from its own layer or one above."""
    found = []
    for name, path in sorted(project_modules().items()):
        if name.split(".")[0] != package:
            continue
        for imported in sorted(imports(path)):
            other = imported.split(".")[0]
            if other != package and LAYER_OF[other] >= LAYER_OF[package]:
                found.append(f"{name} -> {imported}")
    return found


def test_every_package_has_a_layer():
    """A new top-level package is placed in a layer (here) before anything imports it."""
    packages = sorted(path.parent.name for path in PROJECT.glob("*/__init__.py"))
    assert sorted(set(packages) - LAYER_OF.keys()) == []


@pytest.mark.parametrize("package", sorted(LAYER_OF))
def test_a_package_imports_only_the_layers_below(package):
    assert upward_imports(package) == []


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """A conformance module importing op_tests (the harness flowing back) is found."""
    source = tmp_path / "upward.py"
    source.write_text("def run():\n    from op_tests.torch_export_limits import unsupported_modes\n")
    modules = {**project_modules(), "conformance.upward": source}
    monkeypatch.setattr("tests.architecture.test_import_direction.project_modules", lambda: modules)
    assert upward_imports("conformance") == ["conformance.upward -> op_tests.torch_export_limits"]
