"""The public API and the orchestration of one export: its arguments checked (``exporter.arguments``), then
capture -> convert -> optimize -> assemble -> validate -> write."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import onnx
import torch

from exporter import (
    binding,
    destination,
    local_functions,
    naming,
    passes,
    provenance,
    serialize,
    tensor_bytes,
    validate,
)
from exporter.arguments import (
    bound_arguments,
    check_argument_kinds,
    check_capture_choice,
    check_custom_opsets,
    check_dynamic_axes_shape,
    check_export_capture_options,
    check_opset,
    check_tensors_hold_data,
    check_workarounds,
    dynamic_request,
    exports_training_mode,
    known_dynamic_axes,
    normalize_dynamic_axes,
    state_tensors,
    with_keyword_arguments,
)
from exporter.capture import EXPORT, Capture, capture, split_list_inputs
from exporter.capture.export import at_opset, program_axes
from exporter.capture.export_guards import check_program_guards
from exporter.capture.traced_sizes import check_traced_axes
from exporter.capture_choice import capture_choice, captured_or_traced, traced_arguments
from exporter.convert import Converter
from exporter.convert_fx import FxConverter
from exporter.custom_translation import as_table as translation_table
from exporter.errors import ExportArgumentError
from exporter.graph_context import ExportSession
from exporter.lowering.sequence import SEQUENCE_OPSET
from exporter.options import OperatorExportTypes, TrainingMode, enum_member
from exporter.program import NON_STRICT, ONNXProgram
from exporter.provenance import Provenance, write_doc_strings
from exporter.registry import REGISTRY
from exporter.timing import StageTimes
from exporter.ts_types import blocks_of

logger = logging.getLogger("exporter")


_in_export = False

def is_in_onnx_export() -> bool:
    """True only while :func:`export` of this engine is running. (PyTorch's own ``is_in_onnx_export()`` reads its
    exporter's state, which this engine never touches: models that branch for export ask this function.)"""
    return _in_export


@contextlib.contextmanager
def _exporting():
    global _in_export
    previous, _in_export = _in_export, True
    try:
        yield
    finally:
        _in_export = previous


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while exporting (as it was, after). An export makes tens of thousands
    of objects that live until it ends (the graphs, their values, the protos), which makes the collector run full
    collections: each one walks every object of the process (0.2 s once torch and torchvision are loaded) and finds
    next to nothing, since what the export discards is freed by reference counting."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


_CUSTOM_NAME = re.compile(r"^[A-Za-z0-9_.\-]+::[A-Za-z_\-][A-Za-z0-9_.\-]*$")


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Callable, opset_version: int) -> None:
    """Register ``symbolic_fn`` for the op ``symbolic_name`` ("<namespace>::<op>") from ``opset_version`` on.

    The function is called as ``symbolic_fn(g, *inputs)`` like a built-in symbolic and may emit ops of a
    custom domain with ``g.op("domain::Op", ...)``. It wins over a built-in symbolic of the same op at
    ``opset_version`` and above; registering ``prim::PythonOp`` takes over every autograd.Function.
    """
    _check_custom_name(symbolic_name)
    if not callable(symbolic_fn):
        raise ExportArgumentError(f"symbolic_fn for {symbolic_name!r} must be callable")
    REGISTRY.register(symbolic_name, check_opset(opset_version), symbolic_fn, custom=True)


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """Remove the symbolic registered for ``symbolic_name`` at ``opset_version``; a built-in one applies again."""
    _check_custom_name(symbolic_name)
    REGISTRY.unregister(symbolic_name, check_opset(opset_version))


def _check_custom_name(symbolic_name: str) -> None:
    if not isinstance(symbolic_name, str) or not _CUSTOM_NAME.match(symbolic_name):
        raise ExportArgumentError(
            f"symbolic name must look like '<namespace>::<op>' (e.g. 'custom_ops::foo'), got {symbolic_name!r}"
        )


def unconvertible_ops(
    model: Any, args: Any, training: TrainingMode = TrainingMode.EVAL, opset_version: int | None = None
) -> tuple[torch._C.Graph, list[str]]:
    """The captured TorchScript graph and every op in it that has no symbolic at ``opset_version`` (or one that
    refuses every use there), all at once.

    Approximate, as documented: ops removed during conversion are listed too, and ops that are supported
    only for some arguments are not.
    """
    opset = check_opset(opset_version)
    args = bound_arguments(model, args, dynamo=False)
    with _exporting(), select_model_mode_for_export(model, training):
        captured = capture(model, args)
    missing: list[str] = []
    _collect_unconvertible(captured.graph.nodes(), opset, missing)
    return captured.graph, missing


def _collect_unconvertible(nodes, opset: int, missing: list[str]) -> None:
    from exporter.convert import PYTHON_OP, python_op_class

    for node in nodes:
        kind = node.kind()
        if kind == "prim::Constant":
            continue
        if kind == PYTHON_OP and not REGISTRY.is_supported(kind, opset):
            if getattr(python_op_class(node), "symbolic", None) is None and node.hasAttribute("Subgraph"):
                _collect_unconvertible(node.g("Subgraph").nodes(), opset, missing)
            continue
        if not REGISTRY.is_supported(kind, opset) and kind not in missing:
            missing.append(kind)
        for block in blocks_of(node):
            _collect_unconvertible(block.nodes(), opset, missing)


_log_handler: logging.Handler | None = None


def enable_log() -> None:
    """Log the export stages (capture, convert, optimize, assemble, write) to stderr."""
    global _log_handler
    if _log_handler is None:
        _log_handler = logging.StreamHandler()
        _log_handler.setFormatter(logging.Formatter("exporter: %(message)s"))
        logger.addHandler(_log_handler)
    logger.setLevel(logging.INFO)


def disable_log() -> None:
    """Stop logging the export stages."""
    global _log_handler
    if _log_handler is not None:
        logger.removeHandler(_log_handler)
        _log_handler = None
    logger.setLevel(logging.NOTSET)


def is_log_enabled() -> bool:
    return _log_handler is not None


@contextlib.contextmanager
def _logging_if(enabled: bool):
    """``verbose=True`` turns logging on for one export, as documented."""
    if not enabled or is_log_enabled():
        yield
        return
    enable_log()
    try:
        yield
    finally:
        disable_log()


@contextlib.contextmanager
def select_model_mode_for_export(model: Any, mode: TrainingMode):
    """Context manager putting ``model`` in the mode ``mode`` asks for, restoring its original mode after.

    ``mode`` is a :class:`TrainingMode` or PyTorch's own ``TrainingMode`` (matched by member name).
    """
    mode = enum_member(TrainingMode, mode, "mode")
    if not isinstance(model, torch.nn.Module):
        yield
        return
    original = model.training
    wanted = {TrainingMode.TRAINING: True, TrainingMode.EVAL: False}.get(mode)  # None: PRESERVE
    if _already_in_mode(model, original if wanted is None else wanted):
        yield
        return
    if wanted is not None:
        model.train(wanted)
    try:
        yield
    finally:
        model.train(original)


def _already_in_mode(model: torch.nn.Module, training: bool) -> bool:
    """Whether every submodule is in the mode and none overrides ``train``: then setting the mode (and restoring it)
    would change nothing, and costs an attribute write per submodule."""
    return all(module.training == training and type(module).train is torch.nn.Module.train
               for module in model.modules())


def run_export(
    model: torch.nn.Module | torch.jit.ScriptModule | torch.jit.ScriptFunction,
    args: tuple[Any, ...] | torch.Tensor,
    f: Any,
    export_params: bool = True,
    verbose: bool | None = False,
    training: TrainingMode = TrainingMode.EVAL,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    opset_version: int | None = None,
    do_constant_folding: bool = True,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    keep_initializers_as_inputs: bool | None = None,
    custom_opsets: Mapping[str, int] | None = None,
    export_modules_as_functions: bool | Collection[type[torch.nn.Module]] = False,
    *,
    kwargs: Mapping[str, Any] | None = None,
    dynamo: bool = False,
    custom_translation_table: Mapping[Any, Any] | None = None,
    dynamic_shapes: Mapping[str, Any] | Sequence[Any] | None = None,
    provenance_in_model: bool = False,
    captured: Capture | None = None,
    runtime_workarounds: bool | Collection[str] = True,
    check_dynamic_axes: bool = True,
    exported_program_given: bool = False,
) -> ONNXProgram:
    """The export pipeline behind :func:`exporter.export` and :func:`exporter.export_program` (``exporter/contract.py``
    holds the public signature and documents each parameter): capture, convert, optimize, assemble, check, and write to
    ``f`` when it is not None. Returns the :class:`~exporter.program.ONNXProgram`. ``exported_program_given``: the
    model was handed in as a ``torch.export.ExportedProgram`` (``captured`` is its capture): the program reports no
    capture strategy, as torch.onnx's."""
    times = StageTimes()
    verbose = verbose is True
    with times.stage("arguments"):
        choice = capture_choice(dynamo, model)
        dynamo = choice.dynamo
        check_capture_choice(dynamo, dynamic_shapes, model)
        check_argument_kinds(input_names, output_names, dynamic_axes, kwargs)
        workarounds = check_workarounds(runtime_workarounds)
        translations = translation_table(custom_translation_table)
        call_args = with_keyword_arguments(args, kwargs)
        args = bound_arguments(model, call_args, dynamo)
        opset = check_opset(opset_version)
        if f is not None:
            destination.check_destination(f)
        state = state_tensors(model)
        check_tensors_hold_data(state, args)
        training = enum_member(TrainingMode, training, "training")
        operator_export_type = enum_member(OperatorExportTypes, operator_export_type, "operator_export_type")
        requested_axes = dict(dynamic_axes or {})
        check_dynamic_axes_shape(requested_axes)
        request = dynamic_request(model, args, dynamic_shapes, requested_axes, input_names, dynamo)
        check_custom_opsets(custom_opsets)
        if dynamo:
            check_export_capture_options(operator_export_type, export_modules_as_functions)
        if export_modules_as_functions:
            local_functions.check_request(model, export_modules_as_functions, opset)
        if keep_initializers_as_inputs is None:
            keep_initializers_as_inputs = operator_export_type != OperatorExportTypes.ONNX
        keep_initializers_as_inputs = opset < 9 or bool(keep_initializers_as_inputs)
        if export_params and f is not None:
            destination.check_room_for_parameters(state, f)

    with (_exporting(), _logging_if(verbose), select_model_mode_for_export(model, training), _collector_paused()):
        is_training = exports_training_mode(model, training)
        logger.info("capturing %s (training=%s)", type(model).__name__, is_training)
        with times.stage("capture"):
            captured_here = captured is None
            if captured is not None:
                captured = _unshared(captured, dynamic_shapes)
            elif dynamo:  # or the trace, where torch.export refuses and the caller did not choose (capture_choice.py)
                captured = captured_or_traced(model, call_args, args, request, choice)
            else:
                captured = capture(model, args)
            if dynamo and captured.front_end != EXPORT:  # the fallback's trace, made here or by prepare_capture
                args, request = traced_arguments(model, call_args, dynamic_shapes, requested_axes, input_names)
                dynamo = False
            if captured.front_end == EXPORT:
                captured = at_opset(captured, opset, translations.overloads if translations else ())
            elif opset < SEQUENCE_OPSET:  # no ONNX sequences: one input per item
                captured = split_list_inputs(captured)
        if captured_here:  # PyTorch's trace (or scripted graph) is the floor; our passes over it are not
            times.move(captured.graph_passes_seconds, "capture", "capture passes")
        with times.stage("names"):
            names_in = naming.input_names(model, args, captured, input_names)
            names_out = naming.output_names(captured, output_names)
            naming.refuse_shared_names(names_in, names_out)
            requested_axes = known_dynamic_axes({**request.axes_by_name(names_in, named_only=dynamo), **requested_axes},
                                                names_in, names_out, len(captured.user_inputs))
            naming.refuse_complex_boundary(captured, names_in, names_out)
            axes = normalize_dynamic_axes(requested_axes)
            static_shapes = not axes
            traced_check = check_traced_axes(model, args, captured, names_in, axes, check_dynamic_axes)
            times.move(traced_check.seconds, "names", "dynamic axes check")  # the second trace: apart from names
            if captured.front_end == EXPORT:
                axes = program_axes(captured, names_in, names_out, axes)
                static_shapes = not any(name in axes for name in names_in)  # a data-decided output size is no reason
            session = ExportSession(
                opset=opset,
                static_shapes=static_shapes,
                training=is_training,
                fold_params=do_constant_folding and not is_training,
                operator_export_type=operator_export_type,
                custom_opsets=dict(custom_opsets or {}),
                workarounds=workarounds,
                translations=translations,
            )
            inputs, params = naming.graph_inputs(captured, names_in, axes, export_params)
        if logger.isEnabledFor(logging.INFO):  # counting the nodes walks the whole graph
            logger.info("converting %d TorchScript nodes at opset %d", len(list(captured.graph.nodes())), opset)
        with times.stage("convert"):
            converter: FxConverter | Converter
            if captured.front_end == EXPORT:
                converter = FxConverter(session)
                graph = converter.convert_program(captured, inputs + params)
            else:
                converter = Converter(session, source_locations=verbose)
                graph = converter.convert_graph(captured.graph, inputs + params)
            names_in = naming.lay_out_inputs(graph, inputs, params, names_in, export_params)
            feed_names = names_in[:len(captured.user_inputs)]  # each flat argument's input, before unused ones go
            naming.name_outputs(graph, names_out, session)
        traced_check.refuse()  # once converted: an op the library cannot convert is the first error to fix
        if captured.front_end == EXPORT:
            check_program_guards(model, args, captured, names_in, axes, check_dynamic_axes)
        logger.info("optimizing %d ONNX nodes", len(graph.nodes))
        passes.optimize(
            graph, opset, do_constant_folding=session.fold_params, fold_params=not is_training,
            keep_module_boundaries=bool(export_modules_as_functions), times=times,
        )
        with times.stage("names"):
            names_in = naming.drop_unused_inputs(graph, names_in, len(params), opset)
        if provenance_in_model:
            write_doc_strings(graph)
        outline = None
        if export_modules_as_functions:
            def outline(proto):
                local_functions.export_modules_as_functions(
                    proto, model, converter.node_scopes, export_modules_as_functions
                )
        model_proto, staging = _assemble_check_write(
            graph, session, naming.output_examples(captured), f, keep_initializers_as_inputs and export_params, axes,
            outline, verbose, times,
        )
    with times.stage("result"):
        recorded = Provenance.of(graph) if provenance.RECORD else None
        program = None if captured.front_end != EXPORT else captured.program
        result = ONNXProgram(
            model_proto, capture=captured, input_names=names_in, output_names=names_out, feed_names=feed_names,
            signature=binding.signature_of(model), provenance=recorded, workarounds=sorted(session.used_workarounds),
            stage_seconds=times.seconds, exported_program=program, staging=staging,
            capture_strategy=NON_STRICT if program is not None and not exported_program_given else None)
    logger.info("%s", times.summary())
    return result


def prepare_capture(
    model: torch.nn.Module | torch.jit.ScriptModule | torch.jit.ScriptFunction,
    args: tuple[Any, ...] | torch.Tensor,
    training: TrainingMode = TrainingMode.EVAL,
    *,
    kwargs: Mapping[str, Any] | None = None,
    dynamo: bool = False,
    dynamic_shapes: Mapping[str, Any] | Sequence[Any] | None = None,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    input_names: Sequence[str] | None = None,
) -> Capture:
    """Capture ``model`` on ``args`` as :func:`export` would (in the ``training`` mode, with
    ``is_in_onnx_export()`` true), for ``export(..., captured=...)`` to reuse: tracing once, exporting many times.
    ``dynamo=True`` captures with torch.export, whose program fixes which axes are dynamic: give ``dynamic_shapes``
    or ``dynamic_axes`` (with the ``input_names`` they refer to) here, and the same ``dynamic_axes`` to the exports."""
    check_argument_kinds(input_names, None, dynamic_axes, kwargs)
    choice = capture_choice(dynamo, model)
    dynamo = choice.dynamo
    call_args = with_keyword_arguments(args, kwargs)
    args = bound_arguments(model, call_args, dynamo)
    check_tensors_hold_data(state_tensors(model), args)
    check_capture_choice(dynamo, dynamic_shapes, model)
    training = enum_member(TrainingMode, training, "training")
    with _exporting(), select_model_mode_for_export(model, training):
        if dynamo:
            axes = dict(dynamic_axes or {})
            check_dynamic_axes_shape(axes)
            request = dynamic_request(model, args, dynamic_shapes, axes, input_names, dynamo)
            return captured_or_traced(model, call_args, args, request, choice)
        return capture(model, args)


def _unshared(captured: Capture, dynamic_shapes: Any) -> Capture:
    if not isinstance(captured, Capture):
        raise ExportArgumentError(
            f"captured must be a Capture from exporter.prepare_capture, got {type(captured).__name__}")
    if dynamic_shapes is not None:
        raise ExportArgumentError("dynamic_shapes is given with a capture: pass it to prepare_capture")
    if captured.front_end == EXPORT:  # at_opset decomposes a copy of the program
        return captured
    # The converter's passes rewrite the TorchScript graph they read: each export gets its own copy.
    return dataclasses.replace(captured, graph=captured.graph.copy())


def pretty_text(model: onnx.ModelProto) -> str:
    import onnx.printer

    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    for tensor in stripped.graph.initializer:
        tensor.ClearField("raw_data")
    return onnx.printer.to_text(stripped)


@contextlib.contextmanager
def _charging_folds(times: StageTimes, graph, stage: str):
    """Time ``stage``, less the time it spends computing deferred folds (Conv+BatchNormalization products made as
    they are written), which counts as the folding pass's."""
    before = passes.deferred_seconds(graph)
    with times.stage(stage):
        yield
    times.move(passes.deferred_seconds(graph) - before, stage, "pass:fuse_conv_batchnorm")


def _assemble_check_write(graph, session, examples, f, params_as_inputs, axes, outline, verbose, times: StageTimes):
    """Assemble the ModelProto, check it, write it to ``f`` (nothing is written when ``f`` is None). Large weights are
    streamed: into an external data file when they pass 2 GiB (with no ``f``, beside a model file in a temporary
    folder the program owns: the second value returned), else into the model file after the ModelProto's own bytes
    (then the ModelProto the file holds is built only when asked for: the :class:`tensor_bytes.StreamedModel`)."""
    staging = tempfile.TemporaryDirectory(prefix="exporter-") if f is None and destination.needs_external_data(graph) \
        else None
    target = f if staging is None else os.path.join(staging.name, "model.onnx")
    with destination.external_data_stage(graph, target) as stage:
        apart = None if stage else tensor_bytes.StreamedWeights()
        logger.info("assembling the ModelProto (%d nodes, external data: %s)", len(graph.nodes), stage is not None)
        with _charging_folds(times, graph, "assemble"):
            model_proto = serialize.assemble(
                graph, session.opset, session.custom_opsets, session.used_domains, params_as_inputs, axes, examples,
                tensor_writer=stage.tensor if stage else None, apart=apart,
            )
            if outline is not None:
                outline(model_proto)
        if verbose:
            print(pretty_text(model_proto if apart is None else apart.full_model(model_proto)), file=sys.stdout)
        logger.info("checking and writing the model")
        if stage:
            with times.stage("check+write (external data)"):
                stage.commit(model_proto, validate_path=validate.check)
            return (model_proto if staging is None else target), staging
        assert apart is not None  # no external data stage: the large weights were kept apart
        with times.stage("check"):
            validate.check(apart.declared(model_proto).SerializeToString())
        if target is not None:
            with _charging_folds(times, graph, "serialize"):
                destination.write(model_proto, target, apart)  # the one serialization of the weights, straight into f
    return tensor_bytes.StreamedModel(model_proto, apart), None
