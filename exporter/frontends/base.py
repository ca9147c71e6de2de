"""The seam between the pipeline and the front ends: :class:`Capture` (which capture made a graph), the
:class:`Captured` record every front end's capture gives, the :class:`FrontEnd` each capture's package implements
(what the pipeline asks of a capture, instead of comparing captures), and the flattening of a call's arguments and
results that all front ends share.

A front end registers itself (:func:`register`) when its package is imported; a :class:`Captured` is only ever made
by its front end's capture, so ``captured.front_end`` always finds it. Nothing here imports a front end."""

from __future__ import annotations

import enum
import pathlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from exporter.errors import ExportArgumentError

if TYPE_CHECKING:
    from exporter import ir
    from exporter.graph_context import ExportSession
    from exporter.localization.captured import CapturedGraph

SCALARS = (bool, int, float)


class Capture(enum.StrEnum):
    """How a model was captured. The value is the word results rows, op test ids, reports and the command lines write
    (``capture`` in ``conformance.schema``), so it compares equal to that string."""

    TRACE = "trace"  # torch.jit.trace (scripted functions called inside the traced model stay scripted)
    SCRIPT = "script"  # a ScriptModule's or ScriptFunction's own graph
    EXPORT = "export"  # torch.export.export: an ExportedProgram (``dynamo=True``)

    @classmethod
    def of_dynamo(cls, dynamo: bool) -> Capture:
        """The capture ``dynamo`` names in an op test or a harness call: EXPORT, or TRACE for TorchScript (a model
        that is a script keeps its graph: SCRIPT, which only its capture tells)."""
        return cls.EXPORT if dynamo else cls.TRACE

    @property
    def dynamo(self) -> bool:
        """Whether this is the capture ``dynamo=True`` asks for."""
        return self is Capture.EXPORT


@dataclass
class Captured:
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
    capture: Capture = Capture.TRACE  # TRACE for a traced model (scripted functions inside it included), SCRIPT, EXPORT
    program: Any = None  # EXPORT: the torch.export.ExportedProgram the graph belongs to
    # Whether the capture honours a set of declared dynamic axes, by that set (see frontends/torchscript/traced_sizes.py):
    # shared by the copies an export makes of a capture, so a capture exported many times is checked once.
    size_checks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def front_end(self) -> FrontEnd:
        """The front end that made this capture: what the pipeline asks about it."""
        return _FRONT_ENDS[self.capture]

    @property
    def output_count(self) -> int:
        """How many outputs the captured graph has (before quantized outputs become three each)."""
        return self.front_end.output_count(self)


class SizeCheck(ABC):
    """Whether a capture holds at the sizes its declared dynamic axes leave free: computed before conversion,
    refused (:meth:`refuse`) after it, so that an op the library cannot convert is the first error reported."""

    seconds: float = 0.0  # the check's time before conversion (a second trace), reported apart

    @abstractmethod
    def refuse(self, names_in: list[str]) -> None:
        """Raise where the capture does not hold (``names_in``: the graph's inputs as laid out after conversion)."""


class Driver(ABC):
    """A front end's graph walk: one symbolic call per captured node, building the ONNX graph."""

    node_scopes: dict[str, str]  # ONNX node name -> the module path of the node it came from

    @abstractmethod
    def convert(self, captured: Captured, input_values: list) -> ir.Graph:
        """The ONNX graph of ``captured``: ``input_values`` are its user inputs then its parameters."""


class FrontEnd(ABC):
    """What the pipeline asks of the front end that made a capture. One instance per front end; the few methods
    here are the whole seam between the pipeline and a capture."""

    captures: tuple[Capture, ...]  # the captures this front end makes
    # Whether the driver holds complex tensors as their real views (a trailing axis of 2, as torch.onnx does); where
    # it does not, a complex input or output is refused before conversion.
    holds_complex_as_real_views = False

    @abstractmethod
    def output_count(self, captured: Captured) -> int:
        """How many outputs the captured graph has."""

    @abstractmethod
    def unshared(self, captured: Captured) -> Captured:
        """``captured`` as one export may use it: a copy where the conversion rewrites what it reads."""

    @abstractmethod
    def at_opset(self, captured: Captured, opset: int, keep: Collection = ()) -> Captured:
        """``captured`` made ready for conversion at ``opset`` (``keep``: ops a custom translation table takes)."""

    @abstractmethod
    def user_input_names(self, model: Any, args: Any, captured: Captured) -> list[str]:
        """The default names of the capture's user inputs."""

    @abstractmethod
    def graph_input_values(self, args: Any, captured: Captured) -> list:
        """The call's arguments (``export``'s ``args``) as the captured graph's inputs take them, flattened."""

    @abstractmethod
    def list_input_number_type(self, captured: Captured, position: int) -> torch.dtype | None:
        """The dtype of the numbers the list input at ``position`` holds; None where it holds tensors."""

    @abstractmethod
    def read_at_run_time(self, value: ir.Value, opset: int) -> bool:
        """Whether PyTorch's exporter reads the graph input ``value`` at run time where the converter folded every
        read (it stays an input, though no node reads it)."""

    @abstractmethod
    def declared_axes(self, captured: Captured, names_in: list[str], names_out: list[str],
                      axes: dict) -> tuple[dict, bool]:
        """The dynamic axes the model declares, and whether its shapes are static."""

    @abstractmethod
    def size_check(self, model: Any, args: Any, captured: Captured, names_in: list[str], axes: dict,
                   enabled: bool) -> SizeCheck:
        """The check that ``captured`` holds at every size its declared dynamic axes leave free."""

    @abstractmethod
    def driver(self, session: ExportSession, source_locations: bool) -> Driver:
        """The graph walk converting this front end's captures in ``session``."""

    @abstractmethod
    def graph_reader(self, captured: Captured, inputs: list) -> CapturedGraph:
        """The captured graph as :func:`exporter.verify` runs and reads it, on ``inputs``."""

    @abstractmethod
    def dump(self, captured: Captured, directory: pathlib.Path, stem: str) -> pathlib.Path:
        """Save the captured graph under ``directory`` (file name starting ``stem``); the path written."""


_FRONT_ENDS: dict[Capture, FrontEnd] = {}


def register(front_end: FrontEnd) -> FrontEnd:
    """Make ``front_end`` the one its captures' :class:`Captured` records answer to."""
    for capture in front_end.captures:
        _FRONT_ENDS[capture] = front_end
    return front_end


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
