"""What every front end's capture is: the :class:`Capture` the converter starts from, and the flattening of a call's
arguments and results that all front ends share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from exporter.errors import ExportArgumentError
from exporter.ts_types import graph_output_count

SCALARS = (bool, int, float)


TRACE, SCRIPT, EXPORT = "trace", "script", "export"  # the captures: torch.jit.trace, torch.jit.script, torch.export


@dataclass
class Capture:
    """A model captured on example arguments: what the converter starts from, whichever front end made it."""

    # The captured graph: TorchScript's (TRACE, SCRIPT) or the ExportedProgram's FX graph (EXPORT, see ``program``).
    graph: Any
    # One per graph input before the parameters: a tensor, or a list of tensors (a list input: an ONNX sequence).
    user_inputs: list[torch.Tensor | list[torch.Tensor]]
    params: list[tuple[str, torch.Tensor]]
    example_outputs: list[torch.Tensor] | None
    tracer_warnings: list[str] = field(default_factory=list)
    # Every parameter and buffer, used or not (one name per distinct tensor, state_dict order): PyTorch's exporter's
    # input_names name the model's inputs and then these, so a list naming unused ones is still valid.
    state_names: list[str] = field(default_factory=list)
    # Wall time of our TorchScript passes after the trace or the scripted graph (inlining, peepholes, constant
    # propagation, functionalization, ...): the export's work, apart from what PyTorch spends capturing.
    graph_passes_seconds: float = 0.0
    front_end: str = TRACE  # TRACE for a traced model (scripted functions inside it included), SCRIPT, or EXPORT
    program: Any = None  # EXPORT: the torch.export.ExportedProgram the graph belongs to
    # Whether the capture honours a set of declared dynamic axes, by that set (see capture/traced_sizes.py): shared by
    # the copies an export makes of a capture, so a capture exported many times is checked once.
    size_checks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def output_count(self) -> int:
        """How many outputs the captured graph has (before quantized outputs become three each)."""
        if self.front_end == EXPORT:
            assert self.example_outputs is not None  # the torch.export capture records its outputs
            return len(self.example_outputs)
        return graph_output_count(self.graph)


def split_args(args: Any) -> tuple[tuple, dict]:
    """Split ``export``'s ``args`` into positional arguments and keyword arguments, as documented.

    A tensor is a 1-tuple; a trailing dict holds keyword arguments; a trailing empty dict means the dict
    before it is positional.
    """
    if isinstance(args, torch.Tensor):
        return (args,), {}
    if not isinstance(args, tuple):
        args = (args,)
    if args and isinstance(args[-1], dict):
        if not args[-1]:
            return args[:-1], {}
        return args[:-1], dict(args[-1])
    return args, {}


def number_tensor(value: bool | int | float) -> torch.Tensor:
    """The 0-d tensor PyTorch's exporter makes of a Python number argument: bool, int64 or float64."""
    dtype = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float64
    return torch.tensor(value, dtype=dtype)


def flatten(obj: Any, numbers_as_tensors: bool = False) -> tuple[list[torch.Tensor], Callable[[list], Any]]:
    """Tensor leaves of a nested tuple/list/dict and a function rebuilding the structure from new leaves.

    With ``numbers_as_tensors``, Python numbers are leaves too, as 0-d tensors (:func:`number_tensor`), and the
    structure is rebuilt with those tensors in their place: how PyTorch's exporter traces a model, so a number argument
    becomes a graph input. Other non-tensor leaves (strings, None) are kept as they are, hard-coded. A dict's tensor
    keys are leaves as well, each just before its value, as PyTorch's exporter feeds them.
    """
    leaves: list[torch.Tensor] = []

    def walk(node):
        if numbers_as_tensors and isinstance(node, SCALARS):
            node = number_tensor(node)
        if isinstance(node, torch.Tensor):
            index = len(leaves)
            leaves.append(node)
            return lambda flat: flat[index]
        if isinstance(node, (tuple, list)):
            parts = [walk(item) for item in node]
            kind = type(node)
            if kind not in (tuple, list):  # named tuples
                return lambda flat: kind(*[p(flat) for p in parts])
            return lambda flat: kind(p(flat) for p in parts)
        if isinstance(node, dict):
            # A tensor key is an input too, before its value: the model may compute with it.
            parts = [(walk(key) if isinstance(key, torch.Tensor) else (lambda flat, key=key: key), walk(value))
                     for key, value in node.items()]
            return lambda flat: {key(flat): value(flat) for key, value in parts}
        return lambda flat: node

    rebuild = walk(obj)
    return leaves, rebuild


def flatten_outputs(obj: Any) -> list[torch.Tensor]:
    """Tensor outputs in order; dict values in insertion order; None is dropped; other values are errors."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if obj is None:
        return []
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in flatten_outputs(item)]
    if isinstance(obj, dict):
        return [t for value in obj.values() for t in flatten_outputs(value)]
    raise ExportArgumentError(
        f"the model returned a non-tensor output of type {type(obj).__name__} ({obj!r}); "
        "ONNX outputs must be tensors (or tuples, lists and dicts of tensors)"
    )
