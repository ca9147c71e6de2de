"""The torch.export front end: ``torch.export.export`` captures the model as an ExportedProgram, whose functional ATen
graph the FX driver (``exporter/frontends/export/driver.py``) converts through the same op library as the TorchScript captures.

No ``torch.jit`` function runs on this path. The program is decomposed only where the op library has no symbolic for
an op at the target opset: an op with a symbolic is kept whole (``conv2d``, ``layer_norm``, ``scaled_dot_product_attention``
stay one op each, as a trace records them), so a decomposition never replaces a conversion that exists.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import logging
import math
import operator
import sys
import warnings
from collections.abc import Collection, Mapping
from typing import Any

import sympy
import torch
from torch.export.dynamic_shapes import _DimHint
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree
from torch.utils._sympy.numbers import int_oo

from exporter.errors import CaptureError, DynamicAxesError, ExportArgumentError, UnsupportedOperatorError
from exporter.frontends.base import Capture, Captured, flatten, split_args
from exporter.frontends.export.library_ops import library_implementation, onnx_op_decomposition
from exporter.frontends.export.recurrent import recurrent_layers_whole
from exporter.registry import REGISTRY

# Ops torch.export leaves in a program that assert facts about its inputs (shapes, ranges, metadata) at run time.
# The ONNX graph checks none of them, as a trace checks none: they are dropped.
ASSERTION_OPS = frozenset({
    "aten::_assert_scalar", "aten::_assert_async", "aten::_assert_tensor_metadata", "aten::sym_constrain_range",
    "aten::sym_constrain_range_for_size", "aten::_functional_sym_constrain_range",
    "aten::_functional_sym_constrain_range_for_size", "aten::_functional_assert_async", "aten::_print",
    "aten::_linalg_check_errors",
})

# The ATen ops of SymInt arithmetic and the Python operators torch.export records on sizes, by the op whose symbolic
# computes them (the one a scripted model's int arithmetic calls). The FX driver converts them through it, so they
# need no decomposition.
SYMBOLIC_OF = {
    "aten::sym_size": "aten::size", "aten::sym_numel": "aten::numel",
    operator.add: "aten::add", operator.sub: "aten::sub", operator.mul: "aten::mul",
    operator.floordiv: "aten::floordiv", operator.truediv: "aten::div", operator.mod: "aten::remainder",
    operator.neg: "aten::neg", operator.eq: "aten::eq", operator.ne: "aten::ne", operator.lt: "aten::lt",
    operator.le: "aten::le", operator.gt: "aten::gt", operator.ge: "aten::ge", torch.sym_max: "aten::maximum",
    torch.sym_min: "aten::minimum", torch.sym_float: "aten::Float", torch.sym_int: "aten::Int",
    math.floor: "aten::floor", math.ceil: "aten::ceil", math.trunc: "aten::trunc", operator.pow: "aten::pow",
    torch.sym_not: "aten::__not__", torch.sym_ite: "aten::where",
}


def capture_program(model: Any, args: Any, dynamic_shapes: Any) -> Captured:
    """Capture ``model`` called with ``args`` (positional arguments and an optional trailing dict of keyword
    arguments) with ``torch.export.export`` (non-strict). The program is decomposed for an opset by
    :func:`at_opset`, so one capture serves exports at several opsets."""
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        raise ExportArgumentError(
            f"dynamo=True captures with torch.export, which takes an nn.Module, not a {type(model).__name__}; "
            "export a scripted model with dynamo=False")
    positional, kwargs = split_args(args)
    program = None
    widened = _widened_examples(model, positional, kwargs, dynamic_shapes)
    if widened is not None:
        wide_positional, wide_kwargs = widened
        with contextlib.suppress(Exception):  # the model refuses the wider example: captured as given, below
            program = _captured(model, wide_positional, wide_kwargs, dynamic_shapes)
        if program is not None and not _reproduces_example(program, model, positional, kwargs):
            program = None  # the wider example took another branch: captured as given, below
    if program is None:
        try:
            program = _captured(model, positional, kwargs, dynamic_shapes)
        except Exception as error:  # torch.export's own refusals: data-dependent control flow, unsupported Python
            raise CaptureError(f"torch.export could not capture the model: {type(error).__name__}: "
                               f"{_first_lines(str(error))}") from error
    return _capture_of(program, positional, kwargs)


def _captured(model, positional, kwargs, dynamic_shapes):
    printed = io.StringIO()
    # On failure torch.export prints the partial graph to stderr before raising: the error says what failed.
    with (_torch_export_quiet(), recurrent_layers_whole(), contextlib.redirect_stderr(printed),
          _dynamic_marks_kept(flatten((positional, kwargs))[0])):
        program = torch.export.export(model, tuple(positional), kwargs=kwargs or None,
                                      dynamic_shapes=dynamic_shapes, strict=False)
    sys.stderr.write(printed.getvalue())  # what the model itself printed
    return program


@contextlib.contextmanager
def _dynamic_marks_kept(tensors: list[torch.Tensor]):
    """The caller's tensors left without the dynamic-dimension marks torch.export sets on them (``_dynamo_dynamic_indices``
    and the like): it removes them when a capture succeeds, not when it fails, and a later capture of the same tensors
    would then read a failed export's dynamic dims as the caller's request."""
    before = [(tensor, {key: value for key, value in vars(tensor).items() if key.startswith("_dynamo")})
              for tensor in tensors if isinstance(tensor, torch.Tensor)]
    try:
        yield
    finally:
        for tensor, marks in before:
            for key in [key for key in vars(tensor) if key.startswith("_dynamo") and key not in marks]:
                delattr(tensor, key)
            for key, value in marks.items():
                setattr(tensor, key, value)


def _widened_examples(model, positional, kwargs, dynamic_shapes):
    """The example arguments with every dynamic axis of size 1 repeated to size 2 (positional, kwargs), or None when
    none has size 1 or the spec is not by ``forward``'s parameter names (the form ``dynamic_axes`` becomes).

    Even traced size-oblivious, an example size of 1 on a dynamic axis can end up in the program as a literal: PyTorch's
    MultiheadAttention in-projection views to ``[L, 1, 3, E]`` for a batch of 1 while every other view keeps the
    symbolic batch, and the export then fails for any other batch. A size of 2 leaves no such literal to take."""
    if not isinstance(dynamic_shapes, Mapping):
        return None
    try:
        bound = _forward_arguments(model, positional, kwargs)
    except TypeError:
        return None
    widened = False
    for name, value in bound.arguments.items():
        spec = dynamic_shapes.get(name)
        if spec is None:
            continue
        leaves, structure = pytree.tree_flatten(value)
        axes_of = pytree.tree_flatten(spec, is_leaf=lambda x: x is None or _is_axes(x))[0]
        if len(axes_of) != len(leaves):
            return None
        for index, (leaf, axes) in enumerate(zip(leaves, axes_of, strict=True)):
            for axis in _dynamic_axes_of(axes) if isinstance(leaf, torch.Tensor) else ():
                if leaf.dim() > axis >= -leaf.dim() and leaf.shape[axis] == 1:
                    leaf = torch.cat([leaf, leaf], dim=axis)
                    widened = True
            leaves[index] = leaf
        bound.arguments[name] = pytree.tree_unflatten(leaves, structure)
    return (list(bound.args), dict(bound.kwargs)) if widened else None


def _reproduces_example(program, model, positional, kwargs) -> bool:
    """Whether ``program``, captured from the widened example, computes what ``model`` computes for the example as
    given. A branch the wider size takes (``size > 1``, or a relation between two inputs' sizes that the widening
    broke, such as a decode step's mask and its new tokens) is in the program with no check left in the ONNX model:
    torch.export turns such a guard into an input range, which ONNX cannot state, or drops it. Random ops disagree too,
    and are then captured as given. The program runs without its own input checks: the ranges it holds are the wider
    example's (a decode step's one new token captured as two is ``>= 2``), and only its values at the given example
    can tell whether the branch it took is the given example's too. The model's buffers are restored after both runs."""
    buffers = {name: buffer.clone() for name, buffer in model.named_buffers()}
    try:
        with torch.no_grad(), _torch_export_quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the model's own warnings were shown by the capture
            unchecked = program.module(check_guards=False)
            unchecked._forward_pre_hooks.clear()  # the input checks of check_guards=False
            expected = model(*positional, **kwargs)
            got = unchecked(*positional, **kwargs)
    except Exception:  # noqa: BLE001 - any failure of the program at the given example means it does not reproduce it
        return False
    finally:
        with torch.no_grad():
            for name, buffer in model.named_buffers():
                buffer.copy_(buffers[name])
    expected_leaves, got_leaves = pytree.tree_leaves(expected), pytree.tree_leaves(got)
    return len(expected_leaves) == len(got_leaves) and all(
        _same_value(a, b) for a, b in zip(expected_leaves, got_leaves, strict=True))


def _same_value(expected, got) -> bool:
    """Equal, for tensors within float rounding (the same ATen ops on the same inputs, perhaps in another order)."""
    if not isinstance(expected, torch.Tensor) or not isinstance(got, torch.Tensor):
        return type(expected) is type(got) and expected == got
    if expected.shape != got.shape or expected.dtype != got.dtype:
        return False
    if not expected.is_floating_point():
        return bool(torch.equal(expected, got))
    return bool(torch.allclose(expected, got, rtol=1e-3, atol=1e-5, equal_nan=True))


def _forward_arguments(model, positional, kwargs) -> inspect.BoundArguments:
    """The call's arguments by ``forward``'s parameter names, the keys of torch.export's ``dynamic_shapes`` (a
    TypeError when they do not fit ``forward``)."""
    return inspect.signature(model.forward).bind(*positional, **kwargs)


def _is_axes(spec) -> bool:
    """A tensor's dynamic_shapes entry ({axis: Dim}, or one dim per axis), as opposed to a container's."""
    if isinstance(spec, dict):
        return all(isinstance(key, int) for key in spec)
    return isinstance(spec, (tuple, list)) and bool(spec) and all(
        dim is None or isinstance(dim, (int, str, torch.export.Dim, _DimHint)) for dim in spec)


def _dynamic_axes_of(axes) -> list[int]:
    """The axes a tensor's entry makes dynamic (not None, an int or ``Dim.STATIC``)."""
    items = axes.items() if isinstance(axes, dict) else enumerate(axes) if isinstance(axes, (tuple, list)) else ()
    return [axis for axis, dim in items if dim is not None and not isinstance(dim, int) and dim != _DimHint.STATIC()]


def at_opset(captured: Captured, opset: int, keep: Collection = ()) -> Captured:
    """``captured`` with its program functionalized (in-place ops made functional), then decomposed where the op
    library has no symbolic at ``opset``, and only there (the capture itself is left as it is). The ops of ``keep``
    (those a custom_translation_table converts) are never decomposed."""
    try:
        with _torch_export_quiet(), recurrent_layers_whole():
            program = _with_library_ops(captured.program, opset, keep)
            # One pass in the common case: functionalize, decomposing the ops of the captured program that have no
            # symbolic; functionalization itself may bring ops that need one (rarely), hence further rounds.
            program = program.run_decompositions(
                _decompositions_of(_ops_without_symbolics(program, opset, keep)))
            for _ in range(_DECOMPOSITION_ROUNDS):
                table = _decompositions_of(_ops_without_symbolics(program, opset, keep))
                if not table:
                    break
                program = program.run_decompositions(table)
            program = _with_further_decompositions(program, opset, keep)
        _sym_sums_as_additions(program.graph)
    except UnsupportedOperatorError:
        raise
    except Exception as error:
        raise CaptureError(f"decomposing the exported program failed: {type(error).__name__}: "
                           f"{_first_lines(str(error))}") from error
    return dataclasses.replace(captured, graph=program.graph, program=program,
                               example_outputs=_example_outputs(program))


def _sym_sums_as_additions(graph: torch.fx.Graph) -> None:
    """Each ``torch.sym_sum([a, b, ...])`` (a sum of sizes, one node over a list) as the additions it stands for, which
    the op library converts (``operator.add``: ``aten::add``). The decomposed program is this export's own copy."""
    for node in [n for n in graph.nodes if n.op == "call_function" and n.target is torch.sym_sum]:
        items = list(node.args[0])
        if not items:
            continue
        total = items[0]
        with graph.inserting_before(node):
            for item in items[1:]:
                added = graph.call_function(operator.add, (total, item))
                added.meta["val"] = _value_of(total) + _value_of(item)
                total = added
        node.replace_all_uses_with(total)
        graph.erase_node(node)


def _value_of(item: Any) -> Any:
    return item.meta["val"] if isinstance(item, torch.fx.Node) else item


def _first_lines(text: str, count: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:count]) + ("\n..." if len(lines) > count else "")


# The loggers through which torch.export reports, as warnings, the guards a capture could not place (with the
# partial graph) before it raises, and, as an error, the traceback of a kernel that refused its fake tensors: the
# raised error, which the export passes on with its reason, says it all. Each is raised to the level that hides them.
_CAPTURE_LOGGERS = {"torch.fx.experimental.symbolic_shapes": logging.ERROR, "torch._export": logging.ERROR,
                    "torch.export": logging.ERROR, "torch._subclasses.fake_tensor": logging.CRITICAL}


@contextlib.contextmanager
def _torch_export_quiet():
    """torch.export's internal deprecation notices (pytree's LeafSpec, ...) concern PyTorch's own code, not the
    caller's, and its failure logs repeat the error the export raises: neither is shown. Tracing is size-oblivious."""
    loggers = [logging.getLogger(name) for name in _CAPTURE_LOGGERS]
    levels = [logger.level for logger in loggers]
    # Size-oblivious tracing, for the capture and for every decomposition (which traces again): an example size of 0
    # or 1 on a dynamic axis is not taken as that axis's value (the zoo's batch of 1), as PyTorch's own
    # torch.export-based exporter captures. A decomposition traced without it bakes such a size in silently.
    # (torch's config modules get patch() at run time, from install_config_module: their stubs lack it)
    with warnings.catch_warnings(), torch.fx.experimental._config.patch(  # type: ignore[attr-defined]
            backed_size_oblivious=True):
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.|copyreg")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.")
        # raised by the code of torch.export's own graphs (while_loop bodies), which torch generates and runs
        warnings.filterwarnings("ignore", message=r"_check_is_size will be removed", category=FutureWarning)
        # nn.RNN, LSTM and GRU refresh their own weight list (_flat_weights) when called: PyTorch's module, not the
        # caller's code, assigns those tensors, and nothing the caller could register as a buffer.
        warnings.filterwarnings("ignore", message=r"The tensor attributes ([\w.]*_flat_weights\[\d+\](, )?)+ were "
                                                  r"assigned during export", category=UserWarning)
        for logger, hiding in zip(loggers, _CAPTURE_LOGGERS.values(), strict=True):
            logger.setLevel(max(logger.level, hiding))
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)


# A decomposition may bring ops that need one in turn (a composite op made of composite ops).
_DECOMPOSITION_ROUNDS = 4


def _ops_without_symbolics(program, opset: int, keep: Collection = ()) -> set:
    # A refusal counts as a symbolic: the op library has ruled on the op at this opset (its error names the opset
    # that works), which PyTorch's decompositions are not to route around.
    return {node.target for node in program.graph.nodes
            if isinstance(node.target, torch._ops.OpOverload) and _kind_of(node.target) not in ASSERTION_OPS
            and node.target not in keep
            and not REGISTRY.has_symbolic(SYMBOLIC_OF.get(_kind_of(node.target), _kind_of(node.target)), opset)}


def _with_library_ops(program, opset: int, keep: Collection):
    """``program`` with each op that has no symbolic at ``opset`` but a PyTorch implementation the export may trace
    (a ``torch.library`` custom op's, ours of a ``torch.onnx.ops`` op: ``library_ops.py``) decomposed through it, one
    op at a time so that an implementation torch.export cannot trace is reported as that op's."""
    for op in sorted(_ops_without_symbolics(program, opset, keep), key=str):
        implementation = onnx_op_decomposition(op) or library_implementation(op)
        if implementation is None:
            continue
        try:
            program = program.run_decompositions({op: implementation})
        except Exception as error:
            raise UnsupportedOperatorError(_kind_of(op), opset, REGISTRY.min_opset(_kind_of(op)), reason=(
                "the op library has no symbolic for it, and torch.export could not trace its registered "
                f"implementation: {type(error).__name__}: {_first_lines(str(error), 2)}")) from error
    return program


def _with_further_decompositions(program, opset: int, keep: Collection = ()):
    """``program`` with PyTorch's decompositions beyond the core ATen set (``torch._decomp``: native_group_norm,
    ldexp, ...) applied to the ops still without a symbolic, where that leaves fewer such ops and brings no new
    one; else ``program`` as it is, so that an error names the op the model called (not ``prims::exp2``), and a
    decomposition that fails (one that is not functional) costs nothing."""
    from torch._decomp import decomposition_table

    missing = _ops_without_symbolics(program, opset, keep)
    table = {op: decomposition_table[op] for op in missing if op in decomposition_table}
    if not table:
        return program
    try:
        decomposed = program.run_decompositions(table)
    except Exception:
        return program
    left = _ops_without_symbolics(decomposed, opset, keep)
    return decomposed if left < missing else program


def _decompositions_of(ops: set) -> dict:
    """torch.export's decompositions of ``ops``, where it has one (else an op's own implicit one)."""
    table = torch.export.default_decompositions()
    found = {}
    for op in ops:
        try:
            found[op] = table[op]
        except KeyError:
            if op.has_kernel_for_dispatch_key(torch._C.DispatchKey.CompositeImplicitAutograd):
                found[op] = op.decompose
    return found


def _kind_of(op) -> str:
    """"aten::add" for ``torch.ops.aten.add.Tensor``."""
    return op.name().partition(".")[0]


def capture_given_program(program, args: Any) -> tuple[Captured, Any]:
    """The capture of an ExportedProgram handed in as the model, converted as it was captured, and the example
    arguments it is converted with: ``args`` (positional arguments and a trailing dict of keyword arguments) when
    given, else the program's own example inputs."""
    positional, kwargs = split_args(args)
    if not positional and not kwargs:
        if program.example_inputs is None:
            raise ExportArgumentError("the ExportedProgram holds no example inputs: give its arguments as args/kwargs")
        positional, kwargs = tuple(program.example_inputs[0]), dict(program.example_inputs[1] or {})
        args = (*positional, kwargs) if kwargs or (positional and isinstance(positional[-1], dict)) else positional
    return _capture_of(program, positional, kwargs), args


# The Python numbers a program computes from sizes (``x.shape[0] * 2``, ``torch.sym_float``), by the dtype of the 0-d
# tensor each is as an ONNX output (torch.onnx's: what ``torch.tensor`` makes of the number).
SYMBOLIC_NUMBERS = {torch.SymInt: torch.int64, torch.SymFloat: torch.float32, torch.SymBool: torch.bool}


def _capture_of(program, positional: tuple, kwargs: dict) -> Captured:
    signature = program.graph_signature
    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    params = []
    user_examples = 0
    for spec, node in zip(signature.input_specs, placeholders, strict=True):
        if spec.kind == InputKind.USER_INPUT:
            user_examples += isinstance(node.meta.get("val"), torch.Tensor)
            if isinstance(node.meta.get("val"), tuple(SYMBOLIC_NUMBERS)):
                # torch.export made a Python number argument an input (dynamic_shapes gave it a Dim): the converter
                # would bake some value of it into the graph, so it is refused until it becomes an ONNX input
                raise ExportArgumentError(
                    f"argument {node.name!r} is a Python number that dynamic_shapes makes dynamic; numbers are "
                    "constants of the ONNX model here: pass it as a tensor, or leave it out of dynamic_shapes (None)")
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            params.append((spec.target, state_tensor(program, spec.target)))
        elif spec.kind not in (InputKind.CONSTANT_TENSOR, InputKind.TOKEN):  # constants stay constants; effect
            # tokens order side effects (its driver drops the assertions they order)
            raise CaptureError(f"the exported program takes a {spec.kind.name} input ({spec.target}), which ONNX "
                               "cannot hold (a script object or an effect token)")
    tensors: list[torch.Tensor | list[torch.Tensor]] = [
        t for t in flatten((positional, kwargs))[0] if isinstance(t, torch.Tensor)]
    if len(tensors) != user_examples:
        raise CaptureError(f"the exported program takes {user_examples} of the {len(tensors)} tensor arguments")
    # Every parameter and buffer, used or not, as PyTorch's exporter counts them for input_names (see Captured).
    state_names = list(program.state_dict.keys())
    state_names += [name for name, _ in params if name not in program.state_dict]
    return Captured(graph=program.graph, user_inputs=tensors, params=params, example_outputs=_example_outputs(program),
                   state_names=state_names, capture=Capture.EXPORT, program=program)


def state_tensor(program, target: str) -> torch.Tensor:
    """The parameter, buffer or lifted constant ``target`` of ``program``."""
    tensor = program.state_dict.get(target)
    return (program.constants[target] if tensor is None else tensor).detach()


def _example_outputs(program) -> list[torch.Tensor]:
    """Tensors shaped and typed as the program's user outputs (at the example's sizes), without running the model."""
    examples = []
    for node in user_outputs(program):
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) else node
        if isinstance(value, tuple(SYMBOLIC_NUMBERS)):  # a size (or a number computed from sizes): a 0-d tensor output
            examples.append(torch.empty([], dtype=SYMBOLIC_NUMBERS[type(value)]))
            continue
        if not isinstance(value, torch.Tensor):
            raise ExportArgumentError(
                f"the model returned a non-tensor output ({value!r}); ONNX outputs must be tensors (or tuples, lists "
                "and dicts of tensors)")
        shape = [_hint(dim) for dim in value.shape]
        examples.append(torch.empty(shape, dtype=value.dtype))
    return examples


def _hint(dim) -> int:
    """A dim's size at the example (a symbolic dim's hint; 0 for a size only the data decides, such as nonzero's
    count, which the ONNX model declares by name: see :func:`program_axes`)."""
    if isinstance(dim, int):
        return dim
    return 0 if dim.node.hint is None else int(dim.node.hint)


def dynamic_shapes_from_axes(model: torch.nn.Module, args: Any, axes_by_position: dict[int, dict[int, str]]):
    """torch.export's ``dynamic_shapes`` for a ``dynamic_axes`` request, as PyTorch's exporter translates it: each
    named axis of the tensor arguments is ``Dim.DYNAMIC`` (torch.export decides its range, and may find it static),
    keyed by ``forward``'s parameter names. ``axes_by_position``: flat tensor argument index -> {axis: name}."""
    positional, kwargs = split_args(args)
    try:
        bound = _forward_arguments(model, positional, kwargs)
    except TypeError as error:
        raise ExportArgumentError(f"the arguments do not fit the model's forward: {error}") from None
    shapes: dict[str, Any] = {}
    index = 0
    for name, value in bound.arguments.items():
        leaves, structure = pytree.tree_flatten(value)
        specs = []
        for leaf in leaves:
            axes = axes_by_position.get(index) if isinstance(leaf, torch.Tensor) else None
            specs.append({axis: torch.export.Dim.DYNAMIC for axis in axes} if axes else None)
            index += isinstance(leaf, torch.Tensor)
        # torch.export wants a container argument's spec in the container's structure, None at each static leaf
        shapes[name] = pytree.tree_unflatten(specs, structure)
    return shapes


def program_axes(captured: Captured, names_in: list[str], names_out: list[str],
                 axes: dict[str, dict[int, str]]) -> dict[str, dict[int, str]]:
    """The dynamic axes of the ONNX model, by input and output name: every symbolic dim of the program's user inputs
    (named as ``axes`` names it, else after its symbol: ``s77``), and every symbolic output dim (named as the input
    dim it is, else after its expression: ``u0`` for a size the data decides, ``2*s77``).
    An axis ``axes`` asks for that the program holds static is an error: the model's code fixed its size (the
    program's guards on the symbolic ones are ``guards``'s)."""
    program = captured.program
    user = user_input_placeholders(program)
    result = {name: dict(dims) for name, dims in axes.items()}
    symbol_names: dict[str, str] = {}
    dynamic: list[tuple[str, int, Any]] = []
    for name, node in zip(names_in, user, strict=False):  # names_in goes on with the parameters' names
        shape = node.meta["val"].shape
        for axis, dim in enumerate(shape):
            asked = axes.get(name, {}).get(axis if axis in axes.get(name, {}) else axis - len(shape))
            if isinstance(dim, int):
                if asked is not None:
                    raise DynamicAxesError(f"dynamic_axes asks for axis {axis} of input {name!r} to be dynamic, "
                                           f"but torch.export found the model's code fixes it to {dim}")
                continue
            if str(dim) not in symbol_names and not any(str(dim) == str(seen) for _, _, seen in dynamic):
                _warn_if_bounded(program, dim, f"axis {axis} of input {name!r} ({asked or dim})")
            dynamic.append((name, axis, dim))
            if asked is not None:
                _name_symbol(symbol_names, str(dim), asked)
    for name, axis, dim in dynamic:  # one name per symbol: the first asked for it, else the symbol's own
        result.setdefault(name, {})[axis] = symbol_names.setdefault(str(dim), str(dim))
    for name, arg in zip(names_out, user_outputs(program), strict=True):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if not isinstance(value, torch.Tensor):
            continue
        for axis, dim in enumerate(value.shape):
            if not isinstance(dim, int):
                result.setdefault(name, {}).setdefault(axis, symbol_names.get(str(dim)) or _named(dim, symbol_names))
    return result


def user_outputs(program) -> list[Any]:
    """What the program returns to its caller (not the buffers it mutates), in order, but for the Nones it returns:
    ONNX has no None output, and torch.onnx leaves them out too."""
    output_node = next(node for node in program.graph.nodes if node.op == "output")
    return [arg for spec, arg in zip(program.graph_signature.output_specs, output_node.args[0], strict=True)
            if spec.kind == OutputKind.USER_OUTPUT and arg is not None]


def _name_symbol(symbol_names: dict[str, str], symbol: str, asked: str) -> None:
    """``symbol`` named ``asked`` unless an axis of the same size named it first: then torch.onnx's warning."""
    first = symbol_names.setdefault(symbol, asked)
    if first != asked:
        warnings.warn(f"# The axis name: {asked} will not be used, since it shares the same shape constraints with "
                      f"another axis: {first}.", UserWarning, stacklevel=3)


def _named(dim, symbol_names: dict[str, str]) -> str:
    """A symbolic dim's expression with each input symbol written as its axis's name (``2*batch`` for ``2*s77``),
    where no other symbol has that name (the caller may name distinct sizes alike: ``s3 + s5`` is no ``2*sequence``)."""
    expr = dim.node.expr
    taken = list(symbol_names.values())
    names = {symbol: sympy.Symbol(symbol_names[str(symbol)]) for symbol in expr.free_symbols
             if str(symbol) in symbol_names and taken.count(symbol_names[str(symbol)]) == 1}
    return str(expr.xreplace(names))


def user_input_placeholders(program) -> list[torch.fx.Node]:
    """The placeholders of the program's tensor arguments, in the order of its inputs (torch.export names each after
    its argument: ``past_0_1`` for ``past[0][1]``)."""
    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    return [node for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True)
            if spec.kind == InputKind.USER_INPUT and isinstance(node.meta.get("val"), torch.Tensor)]


def _warn_if_bounded(program, dim, what: str) -> None:
    """Warn when torch.export bounded a dynamic input size: the model's code branched on it or checked it (``if
    x.shape[1] > 1``, a table of fixed length), and the program holds at the example's size but not at every size,
    which the ONNX model cannot check. A lower bound of 2 is torch.export's usual one (0 and 1 are special sizes to it),
    not the code's."""
    bounds = program.range_constraints.get(dim.node.expr)
    if bounds is None or (bounds.lower <= 2 and bounds.upper == int_oo):
        return
    upper = "" if bounds.upper == int_oo else f" {bounds.upper}"
    warnings.warn(f"the model's code branches on or checks {what}: torch.export bounds it to [{bounds.lower},"
                  f"{upper or ' ...'}], and the ONNX model checks nothing, so at sizes other than the example's it may "
                  "compute something else than the model", UserWarning, stacklevel=2)


def check_dynamic_shapes(dynamic_shapes: Any) -> None:
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, (Mapping, tuple, list)):
        raise ExportArgumentError("dynamic_shapes must be a dict (by forward's parameter names), a tuple or a list, "
                                  f"as torch.export takes it; got {type(dynamic_shapes).__name__}")
