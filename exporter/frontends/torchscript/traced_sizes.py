"""Whether a trace honours the dynamic axes it is exported with: a size the trace froze into its graph is refused.

A trace records the ops one run took. Where the model's code read a size as a Python number (``int(x.shape[1])``,
``float(...)``, ``math.sqrt``, a branch or a loop on it, a list as long as it, a number of pieces to split into), the
graph holds that number as a constant, or holds the branch or the unrolled loop the example took, and the ONNX model,
though it declares the axis free, computes at every size what the model computes at the example's: silently wrong
numbers (CANINE, Funnel, RecurrentGemma), or a failure in ONNX Runtime, where PyTorch's exporter raises nothing but
TracerWarnings (and for a loop over ``range(x.size(1))``, a ``[1] * n`` list or a split's pieces, not even those).

The check traces the model again with every declared dynamic input axis at twice its example size (the example
repeated along the axis, so ids, masks and indices stay valid, and sizes that were equal, or multiples of one
another or of a block size, stay so; at one more where the model refuses the double) and compares the two graphs:
the same ops in the same order with as many inputs and outputs, then equal constants. Any difference is a
:class:`DynamicAxesError` naming the dim, the inputs and axes that carry it, and the op (kind, module, source line)
where the graphs part, with what differs. The sizes of a constant's broadcast into ``copy_`` are not compared: the
converter's ``copy_`` broadcasts to the destination's run-time shape.

Every trace exported with declared dynamic input axes is checked, not only one that raised TracerWarnings: the
silent forms above are as common in models as the warned ones (three op cases relied on sizes whose piece counts
coincide; transformers' one-token decode step packs its attention heads for one query only). The cost is one more
trace of the model, at the larger size (docs/measurements/2026-12-07-dynamic-axes-check.md), once per capture:
a capture exported at many opsets (``prepare_capture``) is checked once. ``export(check_dynamic_axes=False)`` skips it and writes the model as traced,
as PyTorch's exporter does.

False positives kept out: both traces draw the same random numbers (torch's, Python's and NumPy's generators are
set to one state before each, and left after as the first trace left them), and a difference is confirmed against
a third trace at the example's own sizes from that state, so a model that draws random numbers on the Python side
(layer drop) differs only where sizes change what it does. A model that refuses both other sizes (a fixed table of
positions) is not judged: PyTorch computes nothing there either. Misses: a derived value that happens to be equal at
both sizes (``(n + 7) // 8`` at 1 and 2) and a state the model changes between calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

import torch

from exporter.errors import DynamicAxesError
from exporter.frontends.base import Capture, Captured, flatten, split_args
from exporter.frontends.torchscript.capture import capture
from exporter.frontends.torchscript.facts import blocks_of
from exporter.frontends.torchscript.warning_filter import silenced
from exporter.provenance import Origin

# The second sizes tried, in order, from the example's size n: twice it (sizes that were multiples of one another, or
# of a block size, stay so), else one more (a model that takes no size beyond its example's double, such as a table of
# positions, may still take that).
SECOND_SIZES = ((lambda n: 2 * n), (lambda n: n + 1))


@dataclasses.dataclass(frozen=True)
class Axis:
    """One declared dynamic axis of a graph input: its input (position and name), axis, dim name and example size."""

    position: int
    input_name: str
    axis: int
    dim_name: str
    size: int


@dataclasses.dataclass
class Difference:
    """Where two traces of one model part: a node of the first and the node of the second at its place."""

    first: Any  # a torch._C.Node, or None where the first trace ended earlier
    second: Any
    what: str  # in words: "a constant 8 where the other has 16", "aten::add where the other has aten::mul"


@dataclasses.dataclass
class TraceCheck:
    """The check of one export's trace: the seconds it spent tracing again, and why the trace does not honour the
    declared axes (None where it does)."""

    seconds: float = 0.0
    frozen: str | None = None

    def refuse(self) -> None:
        """Raise the :class:`DynamicAxesError` the check found, if any. The export calls it once the graph is
        converted, so that an op the library cannot convert, the first thing to fix, is the error it reports."""
        if self.frozen is not None:
            raise DynamicAxesError(self.frozen + " (check_dynamic_axes=False writes the model as traced)")


def check_traced_axes(model: Any, args: Any, captured: Captured, names_in: list[str], axes: dict[str, dict[int, str]],
                      enabled: bool = True) -> TraceCheck:
    """Whether the trace froze a declared dynamic input axis into its graph (see the module docstring); nothing
    where not ``enabled``. ``names_in`` names the graph inputs in order, ``axes`` the declared dynamic axes by name.
    Made before the graph is converted (the converter's passes rewrite it). The verdict is kept on ``captured``
    (shared by the copies an export makes of it), so a capture exported many times is checked once."""
    if not enabled or captured.capture is not Capture.TRACE:
        return TraceCheck()
    declared = _declared_axes(captured, names_in, axes)
    if not declared:
        return TraceCheck()
    key = tuple(dataclasses.astuple(axis) for axis in declared)
    verdicts = captured.size_checks
    if key in verdicts:
        return TraceCheck(0.0, verdicts[key])
    began = time.perf_counter()
    verdicts[key] = _verdict(model, args, captured, declared)
    return TraceCheck(time.perf_counter() - began, verdicts[key])


def _declared_axes(captured: Captured, names_in: list[str], axes: dict[str, dict[int, str]]) -> list[Axis]:
    declared = []
    for position, (name, example) in enumerate(zip(names_in, captured.user_inputs, strict=False)):
        if name not in axes or not isinstance(example, torch.Tensor):
            continue
        for axis, dim_name in sorted(axes[name].items()):
            if -example.dim() <= axis < example.dim() and example.shape[axis] > 0:
                axis %= example.dim()
                declared.append(Axis(position, name, axis, dim_name, int(example.shape[axis])))
    return declared


def _verdict(model, args, captured: Captured, declared: list[Axis]) -> str | None:
    """None where the trace honours ``declared``, else why not, in words."""
    with _randomness_kept() as same_randomness:
        for second_size in SECOND_SIZES:
            with same_randomness():
                wider = _traced(model, args, declared, second_size)
            if wider is not None:
                break
        else:
            return None  # the model refuses other sizes: nothing to compare (PyTorch itself fails there)
        if _first_difference(captured.graph, wider.graph) is None:
            return None
        with same_randomness():  # the baseline from the same random state, at the example's own sizes
            control = _traced(model, args, [], second_size)
        if control is None:
            return None
        difference = _first_difference(control.graph, wider.graph)
        if difference is None:
            return None  # the first trace differed by its random draws alone
        culprits = _attributed(difference, declared, second_size)
        if culprits is None:  # a value derived from a size: trace each named group of axes alone
            culprits = []
            groups: dict[str, list[Axis]] = {}
            for axis in declared:
                groups.setdefault(axis.dim_name, []).append(axis)
            for group in groups.values() if len(groups) > 1 else ():
                with same_randomness():
                    alone = _traced(model, args, group, second_size)
                if alone is not None and _first_difference(control.graph, alone.graph) is not None:
                    culprits += group
            culprits = culprits or declared
    return _message(culprits, difference, second_size)


def _traced(model, args, grown: list[Axis], second_size) -> Captured | None:
    """The capture of ``model`` with the ``grown`` axes at their second size, the example repeated along them (None
    where tracing fails); its warnings are not shown (the first trace showed the model's)."""
    positional, kwargs = split_args(args)
    flat, rebuild = flatten((positional, kwargs), numbers_as_tensors=True)
    flat = list(flat)
    try:
        with torch.no_grad():
            for axis in grown:
                tensor, size = flat[axis.position], second_size(axis.size)
                repeats = -(-size // axis.size)
                flat[axis.position] = torch.cat([tensor] * repeats, dim=axis.axis).narrow(axis.axis, 0, size)
        wider_positional, wider_kwargs = rebuild(flat)
        with silenced():
            return capture(model, (*wider_positional, wider_kwargs))
    except Exception:  # noqa: BLE001 - the model refuses these sizes (a fixed table, a size check): no verdict
        return None


@contextlib.contextmanager
def _randomness_kept() -> Iterator:
    """A context in which ``same_randomness()`` sets torch's, Python's and NumPy's random generators to the state they
    have now; they are left in that state after."""
    numpy = sys.modules.get("numpy")
    cpu, python = torch.get_rng_state(), random.getstate()
    numpy_state = numpy.random.get_state() if numpy else None
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None

    def restore():
        torch.set_rng_state(cpu)
        random.setstate(python)
        if numpy:
            numpy.random.set_state(numpy_state)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)

    @contextlib.contextmanager
    def same_randomness():
        restore()
        yield

    try:
        yield same_randomness
    finally:
        restore()


# -- comparing two traces -------------------------------------------------------------------------------------------
def _nodes(block) -> Iterator:
    """The nodes of ``block`` and of the blocks inside them, in order."""
    for node in block.nodes():
        yield node
        for inner in blocks_of(node):
            yield from _nodes(inner)


def _first_difference(first_graph, second_graph) -> Difference | None:
    """Where the two graphs differ: first an op of another kind (or with another number of inputs or outputs), then a
    constant of another value, named by the op that reads it. The values' types, which hold the sizes, are not
    compared: the graphs are traced at different sizes."""
    first_ops = [node for node in _nodes(first_graph) if node.kind() != "prim::Constant"]
    second_ops = [node for node in _nodes(second_graph) if node.kind() != "prim::Constant"]
    for first, second in itertools.zip_longest(first_ops, second_ops):
        if first is None or second is None or _form(first) != _form(second):
            return Difference(first, second, _kinds_differ(first, second))
        if first.kind() == "prim::PythonOp" and not _same(first.scalar_args(), second.scalar_args()):
            return Difference(first, second, f"arguments {first.scalar_args()} where the other has "
                                             f"{second.scalar_args()}")
    first_constants = [node for node in _nodes(first_graph) if node.kind() == "prim::Constant"]
    second_constants = [node for node in _nodes(second_graph) if node.kind() == "prim::Constant"]
    for first, second in itertools.zip_longest(first_constants, second_constants):
        if first is None or second is None:
            return Difference(first, second, "another number of constants")
        a, b = _constant(first), _constant(second)
        if not _same(a, b) and not _broadcast_into_copy(first) and not _only_overwritten(first.output()):
            return Difference(first, second, f"a constant {_shown(a)} where the other has {_shown(b)}")
    return None


def _broadcast_into_copy(constant) -> bool:
    """Whether ``constant`` is a size of the broadcast of a constant into ``copy_`` (``x[:, n:] = torch.tensor([1, 2,
    3])``: the tracer records the row expanded to the traced size of the view), which the converter's ``copy_``
    replaces by a broadcast to the destination's run-time shape."""
    for use in constant.output().uses():
        sizes = use.user
        if sizes.kind() == "prim::ListConstruct":
            uses = sizes.output().uses()
            if len(uses) != 1:
                return False
            use = uses[0]
        expand = use.user
        if expand.kind() != "aten::expand" or use.offset != 1 or not _from_constants(expand.inputsAt(0).node()):
            return False
        readers = expand.output().uses()
        if not readers or any(r.user.kind() not in ("aten::copy_", "aten::copy") or r.offset != 1 for r in readers):
            return False
    return True


# Ops through which a tensor stays the same storage (or a copy of it) on its way to an ``out=`` argument.
_PASSED_ON = ("aten::to", "aten::detach", "aten::clone", "aten::contiguous")


def _only_overwritten(value, depth: int = 4) -> bool:
    """Whether ``value`` reaches only ``out=`` arguments, whose contents the op overwrites (``torch.arange(n, end,
    out=torch.tensor([1.]))``: the tracer records the ``out`` tensor by reference, holding what the op wrote at the
    traced size; only its type is read)."""
    uses = value.uses()
    return bool(uses) and all(_an_out_argument(use) or (
        use.user.kind() in _PASSED_ON and use.offset == 0 and depth > 0
        and _only_overwritten(use.user.output(), depth - 1)) for use in uses)


def _an_out_argument(use) -> bool:
    if not use.user.kind().startswith("aten::"):
        return False
    try:
        arguments = torch._C.parse_schema(use.user.schema()).arguments
    except RuntimeError:  # a node without a registered schema
        return False
    return use.offset < len(arguments) and arguments[use.offset].name == "out"


def _from_constants(node, depth: int = 8) -> bool:
    """Whether ``node`` computes from constants alone (looked at ``depth`` ops deep)."""
    if node.kind() == "prim::Constant":
        return True
    return depth > 0 and node.inputsSize() > 0 and all(
        _from_constants(node.inputsAt(i).node(), depth - 1) for i in range(node.inputsSize()))


def _form(node) -> tuple[str, int, int]:
    return node.kind(), node.inputsSize(), node.outputsSize()


def _kinds_differ(first, second) -> str:
    if first is None:
        return f"the graph ends where the other goes on with {second.kind()}"
    if second is None:
        return f"{first.kind()} where the other has ended"
    if first.kind() == second.kind():
        return (f"{first.kind()} with {first.inputsSize()} inputs and {first.outputsSize()} outputs where the other's "
                f"has {second.inputsSize()} and {second.outputsSize()}")
    return f"{first.kind()} where the other has {second.kind()}"


def _constant(node) -> Any:
    try:
        return node.output().toIValue()
    except RuntimeError:  # a constant TorchScript cannot hand to Python (an object): compared as printed
        return str(node)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.ScriptObject) or isinstance(b, torch.ScriptObject):
        return type(a) is type(b)  # module state (a quantized layer's packed weights), which no size changes
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and a.device == b.device
                and (a.is_quantized or bool(torch.equal(a, b)) or _both_nan_where_unequal(a, b)))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _both_nan_where_unequal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if not a.is_floating_point():
        return False
    return bool(torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0))
                and torch.equal(a.isnan(), b.isnan()))


def _shown(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        if value.numel() <= 8:
            return f"tensor {value.tolist()}"
        return f"tensor of shape {list(value.shape)}"
    return repr(value)


# -- which axis, and the message ------------------------------------------------------------------------------------
def _numbers(value: Any) -> list[float] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, torch.Tensor) and value.numel() <= 64 and not value.is_complex():
        return [float(v) for v in value.flatten().tolist()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in value):
        return [float(v) for v in value]
    return None


def _attributed(difference: Difference, declared: list[Axis], second_size) -> list[Axis] | None:
    """The axes whose sizes the differing constant holds (the example's size in one trace, the second size in the
    other), or None where it holds none as such (a value derived from one) and several groups of axes could be the
    cause. With one group of axes (one dim name), it is that group."""
    if len({axis.dim_name for axis in declared}) == 1:
        return declared
    if difference.first is None or difference.second is None or difference.first.kind() != "prim::Constant":
        return None
    first, second = _numbers(_constant(difference.first)), _numbers(_constant(difference.second))
    if first is None or second is None or len(first) != len(second):
        return None
    pairs = {(a, b) for a, b in zip(first, second, strict=True) if a != b}
    found = [axis for axis in declared if (axis.size, second_size(axis.size)) in pairs]
    return found or None


def _message(culprits: list[Axis], difference: Difference, second_size) -> str:
    node = difference.first if difference.first is not None else difference.second
    if node is not None and node.kind() == "prim::Constant" and node.output().uses():
        node = node.output().uses()[0].user  # the op that reads the constant
    where = _located(node) if node is not None else "the end of the graph"
    groups: dict[tuple[str, int], list[Axis]] = {}
    for axis in culprits:
        groups.setdefault((axis.dim_name, axis.size), []).append(axis)
    axes = "; ".join(
        f"{name} (" + ", ".join(f"axis {axis.axis} of input {axis.input_name!r}" for axis in group)
        + f") traced at {size} and again at {second_size(size)}" for (name, size), group in groups.items())
    return (f"dynamic_axes asks for a size the trace froze: {axes}, the graphs differ at {where}: {difference.what}. "
            "The model's code read the size as a Python number (a branch, a loop, arithmetic or a list built from "
            "x.shape; its TracerWarnings, where it raised any, name the lines), so the ONNX model would compute at "
            "every size what the model computes at the example's. Compute with the size as a tensor (x.size(i) "
            "passed on to view/reshape/arange/expand, not int(), float() or range() of it), or leave the axis out "
            "of dynamic_axes for a static model")


def _located(node) -> str:
    """The op ``node`` in words, with the model's line: its own, else that of the nearest op reading its results (the
    tracer gives list and tuple constructions no line)."""
    origin = Origin.of(node)
    if origin.source:
        return str(origin)
    pending, seen = [node], set[int]()
    while pending and len(seen) < 50:
        current = pending.pop(0)
        for output in current.outputs():
            for use in output.uses():
                reader = use.user
                if id(reader) in seen:
                    continue
                seen.add(id(reader))
                source = Origin.of(reader).source
                if source:
                    return f"{origin} (read by {reader.kind()} at {source})"
                pending.append(reader)
    return str(origin)
