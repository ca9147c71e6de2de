"""Whether a torch.export program holds at every size of the dynamic input dims its ONNX model declares free.

torch.export keeps a dim symbolic and records what the model's code assumed of it as guards on its ShapeEnv
(LongT5's ``Eq(1 + s22//4, 3)``: its count of global blocks), and as ``_assert_scalar`` nodes for facts left to run
time. The program is valid only where they hold. ONNX states none of them: a dim is a name (``dim_param``), so the
only facts its model carries are that dims are equal (one name) or derived (an output's ``2*s0``), which the
program's shapes already state, and which torch.export's replacements already folded into the guards. Each other
guard on one input dim is judged by the sizes it admits, the dim probed at 2 to 128 and at larger sizes up to
2**20 (0 and 1 are torch.export's own special sizes, which it assumes apart from every dynamic dim: its ``!= 1``
guards are not the model's):

- a guard that admits only a bounded set of sizes where torch.export's range for the dim does not bound it (an
  equality fixing a value computed from the size: ``1 + s//4 == 3`` admits 8 to 11) makes the axis effectively
  static. torch.export refuses a dim the code fixes to one size ("marked as dynamic but your code specialized it");
  this is the same refusal for a size fixed through arithmetic: a :class:`DynamicAxesError` naming the input, the
  axis, the guard, the sizes it admits and the first op whose shape reads it (``check_dynamic_axes=False``: a
  warning, and the model written).
- a guard that excludes some sizes and admits unboundedly many (``s % 4 == 0``, or ``s % 4 != 0`` where the code
  pads to a block size on one branch) is a ``UserWarning`` naming it and sizes it excludes, as for a range torch.export
  bounds (``export._warn_if_bounded``): the axis stays dynamic, and the ONNX model computes the program's branch at
  every size. Only where the model itself computes at an excluded size (it runs once there): an op's own condition
  (``reshape(2, -1)`` wants an even size) excludes sizes the model refuses too, and is no news.

Guards relating two dims (``mask.shape[1] < past.shape[1] + tokens.shape[1]``) are not judged: probing one dim with
the others held at the example's sizes would break relations the caller's inputs keep.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable

import sympy
import torch
from torch.export.graph_signature import InputKind
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.printers import PythonPrinter

from exporter.errors import DynamicAxesError
from exporter.frontends.base import flatten, split_args
from exporter.provenance import Origin

# The sizes each dim is probed at: every size up to 128, then powers of two and their neighbours up to 2**20.
SMALL = range(2, 129)
LARGE = sorted({n + d for k in range(8, 21) for n in (2 ** k,) for d in (-1, 0, 1)} | {1000, 10007, 65537})
PROBES = [*SMALL, *LARGE]


@dataclasses.dataclass
class Dim:
    """A symbolic dim of a user input: its symbol, its example size, and how the caller names it."""

    symbol: sympy.Symbol
    hint: int
    where: str  # "axis 1 of input 'input_ids' (seq)"
    reads: str  # "input_ids.shape[1]", for printing guards


def check_program_guards(model, args, captured, names_in: list[str], axes: dict[str, dict[int, str]],
                         refuse: bool = True) -> None:
    """Refuse (``refuse``, else warn) each dynamic input dim of ``captured``'s program that its guards bound, and
    warn of each they restrict otherwise where the model itself takes the sizes they exclude (see the module
    docstring). ``names_in`` names the graph inputs, ``axes`` the ONNX model's dynamic axes (``program_axes``)."""
    program = captured.program
    dims: dict[sympy.Symbol, Dim] = {}
    for name, node in zip(names_in, _user_inputs(program), strict=False):
        for axis, size in enumerate(node.meta["val"].shape):
            if isinstance(size, torch.SymInt) and isinstance(size.node.expr, sympy.Symbol) \
                    and size.node.expr not in dims and size.node.hint is not None:
                where = f"axis {axis} of input {name!r} ({axes.get(name, {}).get(axis, size)})"
                dims[size.node.expr] = Dim(size.node.expr, int(size.node.hint), where, f"{name}.shape[{axis}]")
    if not dims:
        return
    guards = [(expr, where) for expr, where in _guards(program) if len(expr.free_symbols) == 1
              and next(iter(expr.free_symbols)) in dims]
    for dim in dims.values():
        relevant = [(expr, where) for expr, where in guards if dim.symbol in expr.free_symbols]
        if relevant:
            _judge(model, args, program, dim, relevant, dims, refuse)


def _judge(model, args, program, dim: Dim, guards: list, dims: dict, refuse: bool) -> None:
    bounds = program.range_constraints.get(dim.symbol)
    probes = [size for size in PROBES if bounds is None or bounds.lower <= size <= bounds.upper]
    failing = []
    for expr, where in guards:
        excluded = [size for size in probes if not _holds(expr, dim.symbol, size)]
        if excluded and dim.hint not in excluded:
            failing.append((expr, where, excluded))
    if bounds is None or bounds.upper == int_oo:  # else torch.export's range says so: export._warn_if_bounded
        for expr, where, excluded in failing:
            admitted = [size for size in probes if size not in excluded]
            if any(size in admitted for size in LARGE):
                continue
            beyond = next(size for size in excluded if size > admitted[-1]) if admitted else excluded[0]
            stated = _stated(program, expr, where, dim, dims)
            if not _model_runs_at(model, args, program, dim.symbol, beyond):
                warnings.warn(f"the model's code checks {dim.where}: torch.export's program holds only while {stated}, "
                              f"that is at sizes {_ranges(admitted)} (the model itself refuses {beyond}), and the "
                              "ONNX model checks nothing", UserWarning, stacklevel=4)
                return
            message = (f"dynamic_axes asks for {dim.where}, but torch.export's program holds only while {stated}, "
                       f"that is at sizes {_ranges(admitted)}, where the model itself computes at other sizes too "
                       f"({beyond}): its code fixes a value computed from the size, so the ONNX model, which declares "
                       "the axis free, would compute something else than the model (or fail) there. Leave the axis "
                       "out of dynamic_axes for a static model, or compute that value with tensor ops")
            if refuse:
                raise DynamicAxesError(message + " (check_dynamic_axes=False writes the model, with a warning)")
            warnings.warn(message, UserWarning, stacklevel=4)
            return
    for expr, where, excluded in failing[:_MODEL_RUNS]:
        beyond = [size for size in excluded if size > dim.hint]
        if not _model_runs_at(model, args, program, dim.symbol, beyond[0] if beyond else excluded[-1]):
            continue  # an op's own condition (a reshape's divisibility): the model refuses that size too
        shown = ", ".join(map(str, excluded[:6])) + (", ..." if len(excluded) > 6 else "")
        warnings.warn(f"the model's code branches on or checks {dim.where}: torch.export's program holds only while "
                      f"{_stated(program, expr, where, dim, dims)} (not at {shown}, where the model itself computes), "
                      "and the ONNX model checks nothing, so at those sizes it may compute something else than the "
                      "model", UserWarning, stacklevel=4)
        return


# At most this many guards of one dim are tried on the model (each a run of it) before none is warned of.
_MODEL_RUNS = 3


def _stated(program, expr, where: str, dim: Dim, dims: dict) -> str:
    """The guard in the caller's names, and where the model reads what it fixes."""
    return _printed(expr, dims) + (_located(program, expr, dim.symbol) or (f" at {where}" if where else ""))


def _user_inputs(program) -> list:
    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    return [node for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True)
            if spec.kind == InputKind.USER_INPUT and isinstance(node.meta.get("val"), torch.Tensor)]


def _model_runs_at(model, args, program, symbol, size: int) -> bool:
    """Whether ``model`` computes (raises nothing) with every input dim of ``symbol`` at ``size`` (the example repeated
    or cut along it); its buffers are left as they were."""
    positional, kwargs = split_args(args)
    leaves, rebuild = flatten((positional, kwargs))
    tensors = [index for index, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    for index, node in zip(tensors, _user_inputs(program), strict=False):
        for axis, dim in enumerate(node.meta["val"].shape):
            if isinstance(dim, torch.SymInt) and dim.node.expr == symbol:
                leaves[index] = _resized(leaves[index], axis, size)
    resized_positional, resized_kwargs = rebuild(leaves)
    buffers = {name: buffer.clone() for name, buffer in model.named_buffers()}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model(*resized_positional, **resized_kwargs)
        return True
    except Exception:  # noqa: BLE001 - any refusal of that size by the model
        return False
    finally:
        with torch.no_grad():
            for name, buffer in model.named_buffers():
                buffer.copy_(buffers[name])


def _resized(tensor: torch.Tensor, axis: int, size: int) -> torch.Tensor:
    if tensor.shape[axis] == 0:
        return tensor
    repeats = -(-size // tensor.shape[axis])
    return torch.cat([tensor] * repeats, dim=axis).narrow(axis, 0, size)


def _guards(program) -> Iterable[tuple[sympy.Expr, str]]:
    """The program's guards on its inputs' sizes (ShapeEnv guards, with the model's line where torch recorded one)
    and the conditions of its ``_assert_scalar`` nodes, each simplified by the ShapeEnv's replacements (dims it found
    equal share one symbol)."""
    shape_env = _shape_env(program)
    if shape_env is None:
        return
    seen = set()
    for guard in shape_env.guards:
        try:
            expr = shape_env.replace(guard.expr)
        except Exception:  # noqa: BLE001 - a guard torch cannot simplify is left to torch
            continue
        if expr in seen or expr in (sympy.true, sympy.false):
            continue
        seen.add(expr)
        yield expr, _model_location(guard.sloc)
    for node in program.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.aten._assert_scalar.default and node.args:
            condition = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
            if isinstance(condition, torch.SymBool):
                expr = shape_env.replace(condition.node.expr)
                if expr not in seen:
                    seen.add(expr)
                    yield expr, Origin.of(node).source


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _model_location(sloc) -> str:
    """``file:line`` where the model's code made the guard, where torch recorded one outside its own code."""
    location = sloc.maybe_user_loc or sloc.framework_loc
    if hasattr(location, "filename"):
        location = f"{location.filename}:{location.lineno}"
    location = str(location or "")
    return "" if not location or location.startswith(_TORCH_DIR) else location


def _shape_env(program):
    for node in program.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" else None
        mode = getattr(value, "fake_mode", None)
        if mode is not None and mode.shape_env is not None:
            return mode.shape_env
    return None


def _holds(expr, symbol, size: int) -> bool:
    try:
        value = expr.xreplace({symbol: sympy.Integer(size)})
        return bool(value)
    except (TypeError, ZeroDivisionError, ValueError):  # undecidable there: not held against the program
        return True


def _printed(expr, dims: dict) -> str:
    names = {symbol: sympy.Symbol(dim.reads, integer=True) for symbol, dim in dims.items()}
    return PythonPrinter().doprint(expr.xreplace(names))


def _located(program, expr, symbol) -> str:
    """" (at <the model's line> of <op>)" for the first op of ``program`` whose result's shape holds a size the guard
    reads (``s22//4``), or "" where none does."""
    terms = {term for term in sympy.preorder_traversal(expr) if isinstance(term, sympy.Expr) and not term.is_number
             and term != symbol and symbol in term.free_symbols and not isinstance(term, sympy.Symbol)}
    if not terms:
        return ""
    for node in program.graph.nodes:
        value = node.meta.get("val")
        shape = value.shape if isinstance(value, torch.Tensor) else [value] if isinstance(value, torch.SymInt) else ()
        for size in shape:
            if isinstance(size, torch.SymInt) and any(size.node.expr.has(term) for term in terms):
                origin = Origin.of(node)
                if origin.source:
                    return f" (first read by {origin})"
                break
    return ""


def _ranges(sizes: list[int]) -> str:
    """"8 to 11, 13" for [8, 9, 10, 11, 13]."""
    parts, start = [], None
    for index, size in enumerate(sizes):
        if start is None:
            start = size
        if index + 1 == len(sizes) or sizes[index + 1] != size + 1:
            parts.append(str(start) if start == size else f"{start} to {size}")
            start = None
    return ", ".join(parts) or "none"
