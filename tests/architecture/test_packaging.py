"""What ``pip install`` puts in place is enough to run it, checked on ``pyproject.toml`` and the source: every
project module an installed module imports (lazily too) is in a package ``[tool.setuptools.packages.find]`` lists,
and every data file inside an installed package is in its ``[tool.setuptools.package-data]``."""

from __future__ import annotations

import fnmatch
import functools
import pathlib
import tomllib

import setuptools

from tests.architecture.import_graph import PROJECT, imports, project_modules

# Files in a package directory that the code never reads: documentation for whoever reads the repository.
NOT_DATA = ("*.py", "*.pyc", "*.md")


@functools.lru_cache(maxsize=1)
def _setuptools() -> dict:
    return tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["setuptools"]


@functools.lru_cache(maxsize=1)
def installed_packages() -> frozenset[str]:
    """The packages setuptools' ``find`` lists for this pyproject (namespace packages too: pyproject's default)."""
    find = _setuptools()["packages"]["find"]
    finder = setuptools.find_namespace_packages if find.get("namespaces", True) else setuptools.find_packages
    return frozenset(finder(where=str(PROJECT), include=find.get("include", ("*",)), exclude=find.get("exclude", ())))


def _package_of(module: str) -> str:
    """The package a module's file is installed with: itself for a package root, else its parent."""
    return module if project_modules()[module].name == "__init__.py" else module.rpartition(".")[0]


def _installed_modules() -> dict[str, pathlib.Path]:
    return {name: path for name, path in project_modules().items() if _package_of(name) in installed_packages()}


def test_every_module_the_installed_code_imports_is_installed():
    missing = {name: sorted(i for i in imports(path) if _package_of(i) not in installed_packages())
               for name, path in _installed_modules().items()}
    assert {name: found for name, found in missing.items() if found} == {}


def _is_package_data(path: pathlib.Path) -> bool:
    """Whether a package-data glob of ``path``'s package or of a package above it names ``path``."""
    for package, globs in _setuptools().get("package-data", {}).items():
        directory = PROJECT.joinpath(*package.split("."))
        if directory in path.parents:
            relative = path.relative_to(directory).as_posix()
            if any(fnmatch.fnmatchcase(relative, glob) for glob in globs):
                return True
    return False


def _data_files() -> list[pathlib.Path]:
    """The files other than code and documentation inside the installed packages' directories."""
    directories = {PROJECT.joinpath(*package.split(".")) for package in installed_packages()}
    return sorted(path for directory in directories for path in directory.iterdir()
                  if path.is_file() and not any(fnmatch.fnmatchcase(path.name, glob) for glob in NOT_DATA))


def test_every_data_file_of_an_installed_package_is_package_data():
    assert [str(path.relative_to(PROJECT)) for path in _data_files() if not _is_package_data(path)] == []
