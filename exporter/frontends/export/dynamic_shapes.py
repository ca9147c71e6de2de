"""``dynamic_shapes`` as torch.export callers write it, read once for both captures.

torch.export takes, for each argument of ``forward`` (a dict by parameter name, or a tuple/list in argument order),
the spec of its tensors nested as the argument nests them: per tensor ``None`` (static), ``{axis: dim}`` or one entry
per axis, each dim a ``Dim("name")`` (derived: ``2*Dim("s")``), ``Dim.AUTO``, ``Dim.DYNAMIC``, ``Dim.STATIC``, an int
or None; torch.onnx also takes a str, a name for a ``Dim.DYNAMIC`` axis. Read against the call's arguments, it gives

- the spec handed to torch.export: a str as ``Dim.DYNAMIC``, and so is a named ``Dim`` with no range of its own that
  no derived dim is made from (torch.export refuses a plain ``Dim`` whose whole default range the code does not take,
  such as a recurrent layer's guard ``seq != 1``; ``Dim.DYNAMIC`` takes the range the code admits, which the export
  then judges, ``guards.py``); a Dim with a range, or the root of a derived dim, is passed as given;
- the ONNX name of each named axis (a str, a Dim's name, a derived dim's expression), by flat tensor argument;
- for the TorchScript capture, which has no dims of its own, every dynamic axis (``Dim.AUTO`` too) as ``dynamic_axes``
  would declare it, unnamed ones after their input (``x_dim_0``); a Dim's range is not checked by a trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export.dynamic_shapes import _DerivedDim, _DimHint
from torch.utils import _pytree as pytree

from exporter import binding
from exporter.errors import ExportArgumentError
from exporter.frontends.base import SCALARS, split_args

Dim = torch.export.Dim


@dataclass
class DynamicRequest:
    """What a ``dynamic_shapes`` asks, read against the call's arguments."""

    shapes: Any = None  # the spec for torch.export
    # flat tensor argument index -> {axis: ONNX dim name} for the named axes; ``None`` names an unnamed dynamic axis
    axes: dict[int, dict[int, str | None]] = field(default_factory=dict)

    def axes_by_name(self, names_in: list[str], named_only: bool) -> dict[str, dict[int, str]]:
        """The request as ``dynamic_axes`` by input name: the named axes only (``named_only``: a torch.export program
        names the others after its symbols), else every one, an unnamed one as ``<input>_dim_<axis>``."""
        found: dict[str, dict[int, str]] = {}
        for index, axes in self.axes.items():
            if index >= len(names_in):
                continue
            name = names_in[index]
            for axis, dim_name in axes.items():
                if dim_name is not None or not named_only:
                    found.setdefault(name, {})[axis] = dim_name or f"{name}_dim_{axis}"
        return found


def read_dynamic_shapes(model: Any, args: Any, dynamic_shapes: Any, numbers_are_inputs: bool) -> DynamicRequest:
    """``dynamic_shapes`` read against ``args`` (bound as the capture takes them). ``numbers_are_inputs``: Python
    numbers count as inputs in the flat order (the TorchScript capture's 0-d inputs)."""
    if dynamic_shapes is None:
        return DynamicRequest()
    if not isinstance(dynamic_shapes, (Mapping, tuple, list)):
        raise ExportArgumentError("dynamic_shapes must be a dict (by forward's parameter names), a tuple or a list, "
                                  f"as torch.export takes it; got {type(dynamic_shapes).__name__}")
    reader = _Reader(_kept_dims(dynamic_shapes), numbers_are_inputs)
    positional, kwargs = split_args(args)
    if isinstance(dynamic_shapes, Mapping):
        arguments = _arguments_by_name(model, positional, kwargs, dynamic_shapes)
        shapes: Any = {name: reader.read(value, dynamic_shapes.get(name), f"dynamic_shapes[{name!r}]")
                       for name, value in arguments.items()}
        shapes.update((key, spec) for key, spec in dynamic_shapes.items() if key not in shapes)
    else:
        values = [*positional, *kwargs.values()]
        if len(dynamic_shapes) != len(values):
            raise ExportArgumentError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(values)} arguments "
                                      "(a tuple or list gives one per argument, in order)")
        read = [reader.read(value, spec, f"dynamic_shapes[{i}]")
                for i, (value, spec) in enumerate(zip(values, dynamic_shapes, strict=True))]
        shapes = _by_parameter(model, read, len(positional), list(kwargs)) or type(dynamic_shapes)(read)
    return DynamicRequest(shapes, reader.axes)


def _by_parameter(model, read: list, positional: int, keywords: list[str]) -> dict | None:
    """A spec given one per argument, as a dict by ``forward``'s parameters: torch.export reads a tuple by parameter,
    so ``forward(*args)`` would take the whole tuple as the spec of ``args`` (torch.onnx fails there too)."""
    signature = binding.signature_of(model)
    try:
        return None if signature is None else dict(
            signature.bind(*read[:positional], **dict(zip(keywords, read[positional:], strict=True))).arguments)
    except TypeError:
        return None


def _arguments_by_name(model, positional, kwargs, dynamic_shapes: Mapping) -> dict[str, Any]:
    signature = binding.signature_of(model)
    try:
        if signature is None:
            raise TypeError("Python cannot read forward's signature")
        arguments = dict(signature.bind(*positional, **kwargs).arguments)
    except TypeError as error:
        raise ExportArgumentError(f"dynamic_shapes by name needs arguments that fit the model's forward: {error}") \
            from None
    unknown = [key for key in dynamic_shapes if key not in arguments]
    if unknown:
        raise ExportArgumentError(f"dynamic_shapes names {unknown}, which forward was not called with (its "
                                  f"arguments: {list(arguments)})")
    return arguments


def _kept_dims(dynamic_shapes: Any) -> set[int]:
    """The ids of the named Dims passed to torch.export as given: those with a range of their own and the roots of
    derived dims."""
    kept: set[int] = set()
    for leaf in pytree.tree_leaves(dynamic_shapes, is_leaf=lambda x: isinstance(x, Dim)):
        if isinstance(leaf, _DerivedDim):
            kept.add(id(leaf.root))
        elif isinstance(leaf, Dim) and (leaf.min not in (0, 1, 2) or leaf.max != Dim("default").max):
            kept.add(id(leaf))
    return kept


class _Reader:
    def __init__(self, kept: set[int], numbers_are_inputs: bool):
        self.kept = kept
        self.numbers_are_inputs = numbers_are_inputs
        self.axes: dict[int, dict[int, str | None]] = {}
        self.index = 0

    def read(self, value: Any, spec: Any, where: str) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value, spec, where)
        if isinstance(value, SCALARS) or value is None or isinstance(value, str):
            self.index += self.numbers_are_inputs and isinstance(value, SCALARS)
            return spec
        if isinstance(value, dict):
            return self._mapping(value, spec, where)
        children = self._children(value)
        if spec is None or isinstance(spec, _DimHint):
            for child in children:
                self.read(child, None, where)
            return spec
        if not isinstance(spec, (tuple, list)) or len(spec) != len(children):
            raise ExportArgumentError(f"{where}: the argument is a {type(value).__name__} of {len(children)} items; "
                                      f"its spec must be None or a tuple or list of {len(children)}, got {spec!r}")
        return type(spec)(self.read(child, part, f"{where}[{i}]")
                          for i, (child, part) in enumerate(zip(children, spec, strict=True)))

    def _mapping(self, value: dict, spec: Any, where: str) -> Any:
        if spec is not None and not isinstance(spec, Mapping):
            raise ExportArgumentError(f"{where}: the argument is a dict; its spec must be None or a dict by its "
                                      f"keys, got {spec!r}")
        read = {}
        for key, item in value.items():
            if self.numbers_are_inputs and isinstance(key, torch.Tensor):  # a trace's input too, before its value
                self.index += 1
            read[key] = self.read(item, None if spec is None else spec.get(key), f"{where}[{key!r}]")
        return None if spec is None else {key: read[key] for key in spec if key in read}

    @staticmethod
    def _children(value: Any) -> list:
        if isinstance(value, (tuple, list)):
            return list(value)
        node = pytree.SUPPORTED_NODES.get(type(value))
        if node is None:
            raise ExportArgumentError(f"an argument of type {type(value).__name__} is neither a tensor nor a "
                                      "container torch.export can flatten")
        return list(node.flatten_fn(value)[0])

    def _tensor(self, tensor: torch.Tensor, spec: Any, where: str) -> Any:
        index = self.index
        self.index += 1
        if spec is None or isinstance(spec, _DimHint):
            if isinstance(spec, _DimHint) and spec != Dim.STATIC and tensor.dim():
                raise ExportArgumentError(f"{where}: a tensor's spec is None, a dict {{axis: dim}} or one dim per "
                                          f"axis, got {spec!r}")
            return spec
        if isinstance(spec, Mapping):
            items = list(spec.items())
        elif isinstance(spec, (tuple, list)):
            items = list(enumerate(spec))
        else:
            raise ExportArgumentError(f"{where}: a tensor's spec is None, a dict {{axis: dim}} or one dim per axis, "
                                      f"got {spec!r}")
        read = {}
        for axis, dim in items:
            if not isinstance(axis, int) or not -tensor.dim() <= axis < tensor.dim():
                raise ExportArgumentError(f"{where}: axis {axis!r} is not an axis of a {tensor.dim()}-d tensor")
            read[axis] = self._dim(index, axis % tensor.dim(), dim, where)
        return read if isinstance(spec, Mapping) else type(spec)(read[axis] for axis, _ in items)

    def _dim(self, index: int, axis: int, dim: Any, where: str) -> Any:
        if dim is None or isinstance(dim, int) or dim == Dim.STATIC:
            return dim
        if isinstance(dim, str):
            self.axes.setdefault(index, {})[axis] = dim
            return Dim.DYNAMIC
        if isinstance(dim, _DimHint):  # AUTO, DYNAMIC
            self.axes.setdefault(index, {})[axis] = None
            return dim
        if isinstance(dim, Dim):
            self.axes.setdefault(index, {})[axis] = dim.__name__
            return dim if id(dim) in self.kept or isinstance(dim, _DerivedDim) else Dim.DYNAMIC
        raise ExportArgumentError(f"{where}: axis {axis}'s dim must be a torch.export.Dim, Dim.AUTO, Dim.DYNAMIC, "
                                  f"Dim.STATIC, a str name, an int or None, got {dim!r}")
