"""This engine in ``torch.onnx.export``'s place, for a library that calls torch.onnx itself (transformers' own
exporter, Optimum): :func:`in_place_of_torch_onnx` swaps the function in and puts torch's back.

A library reaches the exporter two ways: by attribute at call time (``torch.onnx.export(...)``) or through a name it
bound at import (``from torch.onnx import export``). Replacing the attribute alone misses the second, so every module
attribute that holds torch's function is swapped, and on the way out every one that holds ours (modules imported
inside the block bound ours) gets torch's back. Nothing else of torch.onnx changes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch.onnx

ENGINE_PACKAGE = __name__.partition(".")[0]


@contextlib.contextmanager
def in_place_of_torch_onnx(export: Callable[..., Any] | None = None) -> Iterator[Callable[..., Any]]:
    """Within the block, ``torch.onnx.export`` and every module-level name bound to it is ``export`` (this engine's
    :func:`exporter.export` by default); after it, torch's function again, whether the block returns or raises. Yields
    the function swapped in. Nests: an inner block restores what the outer one put in place."""
    from exporter.contract import export as engine_export  # here: the package root imports this module

    export = export or engine_export
    replaced = torch.onnx.export
    if replaced is export:  # already in place: nothing to swap, nothing to restore
        yield export
        return
    # The engine's own names (exporter.export, where it is defined) are never swapped nor restored (see _bindings_of):
    # a nested block must not turn exporter.export into the function it replaces, nor its end turn it into torch's.
    # Names that held ``export`` before the block keep it after.
    bindings, held_before = set(_bindings_of(replaced)), set(_bindings_of(export))
    for module, name in bindings:
        setattr(module, name, export)
    try:
        yield export
    finally:
        # Those swapped in here and those bound to ours since (a module imported inside the block).
        for module, name in (bindings | set(_bindings_of(export))) - held_before:
            if getattr(module, name, None) is export:
                setattr(module, name, replaced)


def _bindings_of(function: Callable[..., Any]) -> list[tuple[ModuleType, str]]:
    """Every (module, name) of a loaded module outside the engine whose attribute ``name`` is ``function`` itself."""
    found: list[tuple[ModuleType, str]] = []
    for module in list(sys.modules.values()):
        try:
            namespace = vars(module)
        except TypeError:  # an entry that is no module (sys.modules admits any object)
            continue
        if getattr(module, "__name__", "").partition(".")[0] == ENGINE_PACKAGE:
            continue
        found.extend((module, name) for name, value in list(namespace.items()) if value is function)
    return found
