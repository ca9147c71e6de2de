"""The symbolic registry: TorchScript op name -> variants, each valid since an opset.

Dispatch picks the variant with the highest ``since`` that is <= the target opset. User registrations
(``register_custom_op_symbolic``) live in their own layer and win over built-ins at their opset and above.

A variant may be a *refusal*: a symbolic that raises UnsupportedOperatorError for every input at the opsets it
covers, registered for its message (the opset this form of the op needs, or the ONNX gap that rules it out).
Dispatch still calls it, but the support queries (``is_supported``, ``supported_opsets``, ``lowest_opset``,
``min_opset``) do not count it, so the registry never claims an opset at which no use of the op exports.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from exporter import ir
from exporter.errors import SymbolicValueError, UnsupportedOperatorError
from exporter.opsets import MAX_OPSET, MIN_OPSET


@dataclass(frozen=True)
class Variant:
    since: int
    fn: Callable
    refuses: bool = False  # a refusal: ``fn`` raises for every input from ``since`` up to the next variant


# The op library (the families every capture shares, and the TorchScript front end's own: prim, control flow, loops),
# whose modules register the built-in symbolics (``@symbolic``) as they are imported. The package root
# imports nothing eagerly (exporter/__init__.py), so the registry imports the library itself the first time its
# built-in table is read: whoever reads the registry reads it full, however the engine was entered. Not at import
# time: the library imports modules that import this one, which may be the module being imported.
_BUILTIN_LIBRARY = ("exporter.symbolics", "exporter.frontends.torchscript.symbolics")
_library_imported = False


def _import_library() -> None:
    global _library_imported
    if not _library_imported:
        _library_imported = True  # first: the library's own registrations read the table while it is imported
        for package in _BUILTIN_LIBRARY:
            importlib.import_module(package)


class SymbolicRegistry:
    def __init__(self) -> None:
        self._builtin_table: dict[str, list[Variant]] = {}
        self._custom: dict[str, list[Variant]] = {}

    @property
    def _builtin(self) -> dict[str, list[Variant]]:
        """The built-in variants by op name, the op library imported first (see ``_import_library``)."""
        _import_library()
        return self._builtin_table

    @_builtin.setter
    def _builtin(self, table: dict[str, list[Variant]]) -> None:
        self._builtin_table = table

    def register(self, name: str, since: int, fn: Callable, *, custom: bool = False, refuses: bool = False) -> None:
        table = self._custom if custom else self._builtin
        variants = [v for v in table.get(name, []) if v.since != since]
        variants.append(Variant(since, fn, refuses))
        table[name] = sorted(variants, key=lambda v: v.since)

    def unregister(self, name: str, since: int) -> None:
        variants = [v for v in self._custom.get(name, []) if v.since != since]
        if variants:
            self._custom[name] = variants
        else:
            self._custom.pop(name, None)

    def lookup(self, name: str, opset: int) -> Callable:
        """The symbolic for ``name`` at ``opset`` (a refusal too, which raises the op's own error); raises
        UnsupportedOperatorError naming the minimum opset where there is none."""
        variant = self._dispatch(name, opset)
        if variant is None:
            raise UnsupportedOperatorError(name, opset, self.min_opset(name))
        return variant.fn

    def _dispatch(self, name: str, opset: int) -> Variant | None:
        """The variant ``lookup`` calls: the user layer's where it has one at ``opset``, else the built-in one."""
        for table in (self._custom, self._builtin):
            variant = _pick(table.get(name, []), opset)
            if variant is not None:
                return variant
        return None

    def has_symbolic(self, name: str, opset: int) -> bool:
        """Whether ``lookup`` finds a symbolic for ``name`` at ``opset``, a refusal included: the torch.export
        capture leaves such an op to it (whose error names the opset) rather than to PyTorch's decompositions."""
        return self._dispatch(name, opset) is not None

    def is_supported(self, name: str, opset: int) -> bool:
        """Whether ``name`` has a symbolic at ``opset`` that exports some use of it (not a refusal)."""
        variant = self._dispatch(name, opset)
        return variant is not None and not variant.refuses

    def min_opset(self, name: str) -> int | None:
        sinces = [v.since for t in (self._custom, self._builtin) for v in t.get(name, []) if not v.refuses]
        return min(sinces) if sinces else None

    def names(self) -> list[str]:
        return sorted(set(self._builtin) | set(self._custom))

    def variants(self, name: str) -> list[Variant]:
        return list(self._builtin.get(name, []))

    def supported_opsets(self, name: str) -> list[int]:
        """The opsets MIN_OPSET-MAX_OPSET at which ``name`` has a symbolic (a user registration or a built-in
        variant) that is not a refusal, read from the declarations alone. A form of the op may need more (its error
        names the opset)."""
        return [opset for opset in range(MIN_OPSET, MAX_OPSET + 1) if self.is_supported(name, opset)]

    def lowest_opset(self, name: str) -> int | None:
        """The lowest opset at which ``name`` has a symbolic that is not a refusal, None when it has none."""
        opsets = self.supported_opsets(name)
        return opsets[0] if opsets else None

    def family(self, name: str) -> str | None:
        """The op-library module that holds the built-in symbolic of ``name`` (e.g. ``indexing``)."""
        variants = self._builtin.get(name)
        return variants[-1].fn.__module__.rsplit(".", 1)[-1] if variants else None


def _pick(variants: list[Variant], opset: int) -> Variant | None:
    best = None
    for variant in variants:
        if variant.since <= opset:
            best = variant
    return best


REGISTRY = SymbolicRegistry()


def supported_opsets(name: str) -> list[int]:
    """Which opsets (MIN_OPSET-MAX_OPSET) support the TorchScript op ``name`` (e.g. ``"aten::gather"``): see
    :meth:`SymbolicRegistry.supported_opsets`. ``python -c "from exporter.registry import supported_opsets;
    print(supported_opsets('aten::gather'))"`` answers without exporting anything."""
    return REGISTRY.supported_opsets(name)


def lowest_opset(name: str) -> int | None:
    """The lowest opset with a symbolic for ``name``, None when no opset MIN_OPSET-MAX_OPSET has one."""
    return REGISTRY.lowest_opset(name)


def symbolic(*names: str, since: int = MIN_OPSET, refuses: bool = False):
    """Decorator registering a built-in symbolic for one or more TorchScript op names since an opset. ``refuses``
    registers a refusal: the symbolic raises UnsupportedOperatorError for every input at the opsets it covers (up
    to the op's next variant), which the support queries do not count (see the module docstring)."""

    def decorate(fn: Callable) -> Callable:
        for name in names:
            REGISTRY.register(name, since, fn, refuses=refuses)
        return fn

    return decorate


def unsupported(name: str, opset: int, reason: str) -> UnsupportedOperatorError:
    """An error for an op that has a symbolic but cannot express this particular use at this opset."""
    return UnsupportedOperatorError(name, opset, reason=reason)


# ---------------------------------------------------------------------------------------------------------------
# parse_args: turning constant inputs into Python values.

def _is_dynamic(arg: Any) -> bool:
    return isinstance(arg, ir.Value) and arg.const is None


def _constant_payload(arg: Any) -> Any:
    if isinstance(arg, ir.Value):
        return arg.const
    if isinstance(arg, torch.Tensor):
        return arg.detach().cpu().numpy()
    return arg


def _scalar(arg: Any, kind: type, descriptor: str) -> Any:
    if arg is None:
        return None
    if _is_dynamic(arg):
        raise SymbolicValueError(f"expected a constant {kind.__name__} ('{descriptor}'), got a value computed at run time")
    payload = _constant_payload(arg)
    if hasattr(payload, "item"):
        payload = payload.item() if getattr(payload, "size", 1) == 1 else payload
    return kind(payload)


def _scalar_list(arg: Any, kind: type, descriptor: str) -> list | None:
    if arg is None:
        return None
    if _is_dynamic(arg):
        raise SymbolicValueError(f"expected a constant list ('{descriptor}'), got a value computed at run time")
    payload = _constant_payload(arg)
    if isinstance(payload, (list, tuple)):
        return [_scalar(item, kind, descriptor) for item in payload]
    if hasattr(payload, "tolist"):
        values = payload.tolist()
        return [kind(v) for v in (values if isinstance(values, list) else [values])]
    return [kind(payload)]


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "v": lambda arg: arg,
    "i": lambda arg: _scalar(arg, int, "i"),
    "f": lambda arg: _scalar(arg, float, "f"),
    "b": lambda arg: _scalar(arg, bool, "b"),
    "s": lambda arg: _scalar(arg, str, "s"),
    "is": lambda arg: _scalar_list(arg, int, "is"),
    "fs": lambda arg: _scalar_list(arg, float, "fs"),
    "t": lambda arg: arg if isinstance(arg, torch.Tensor) else torch.as_tensor(_constant_payload(arg)),
    "none": lambda arg: None,
}


def parse_args(*descriptors: str):
    """Decorator converting a symbolic's positional inputs according to ``descriptors``.

    ``"v"`` passes the value through, ``"i"``/``"f"``/``"b"``/``"s"`` require a constant int/float/bool/str,
    ``"is"``/``"fs"`` a constant list of ints/floats, ``"t"`` a constant tensor, and ``"none"`` drops the input.
    Extra inputs beyond the descriptors are passed through unchanged. A dynamic input where a constant is
    required raises :class:`SymbolicValueError` naming the argument.
    """
    for descriptor in descriptors:
        if descriptor not in _PARSERS:
            raise ValueError(f"unknown parse_args descriptor {descriptor!r}")

    def decorate(fn: Callable) -> Callable:
        names = fn.__code__.co_varnames[1 : fn.__code__.co_argcount]

        @functools.wraps(fn)
        def wrapper(g, *args, **kwargs):
            parsed = []
            for index, arg in enumerate(args):
                if index >= len(descriptors):
                    parsed.append(arg)
                    continue
                try:
                    parsed.append(_PARSERS[descriptors[index]](arg))
                except SymbolicValueError as error:
                    name = names[index] if index < len(names) else f"#{index}"
                    raise SymbolicValueError(f"argument '{name}': {error}") from None
            return fn(g, *parsed, **kwargs)

        return wrapper

    return decorate
