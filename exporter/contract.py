"""The public entry points: :func:`export`, with the signature, defaults and return values of PyTorch's own ONNX
export function in our torch (both of its contracts), and :func:`export_program`, the same call returning the program
for both captures (what the harness, the CLI and :func:`exporter.verify` call). The pipeline itself is
``exporter.api.run_export``; the artifacts PyTorch's debugging options ask for are ``exporter.artifacts``'.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import onnx
import torch

from exporter import destination
from exporter.api import prepare_capture, pretty_text, run_export
from exporter.arguments import with_keyword_arguments
from exporter.artifacts import Artifacts, check_outputs
from exporter.capture_choice import DYNAMO_DEFAULT
from exporter.errors import ExportArgumentError
from exporter.frontends.export.capture import capture_given_program
from exporter.options import OperatorExportTypes, TrainingMode
from exporter.program import ONNXProgram

# torch.onnx's warning for the TorchScript-era export (dynamo=False), word for word, as torch 2.13 raises it.
LEGACY_WARNING = (
    "You are using the legacy TorchScript-based ONNX export. Starting in PyTorch 2.9, "
    "the new torch.export-based ONNX exporter has become the default. "
    "Learn more about the new export logic: https://docs.pytorch.org/docs/stable/onnx_export.html. "
    "For exporting control flow: "
    "https://pytorch.org/tutorials/beginner/onnx/export_control_flow_model_to_onnx_tutorial.html"
)


def export(
    model: torch.nn.Module | torch.export.ExportedProgram | torch.jit.ScriptModule | torch.jit.ScriptFunction,
    args: tuple[Any, ...] = (),
    f: str | os.PathLike | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = DYNAMO_DEFAULT,
    external_data: bool = True,
    dynamic_shapes: dict[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    custom_translation_table: dict[Callable, Callable] | None = None,
    report: bool = False,
    optimize: bool = True,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir: str | os.PathLike = ".",
    export_params: bool = True,
    keep_initializers_as_inputs: bool = False,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    do_constant_folding: bool = True,
    custom_opsets: Mapping[str, int] | None = None,
    export_modules_as_functions: bool | Collection[type[torch.nn.Module]] = False,
    autograd_inlining: bool = True,
    provenance_in_model: bool = False,
    captured: Any = None,
    runtime_workarounds: bool | Collection[str] = True,
    check_dynamic_axes: bool = True,
) -> ONNXProgram | None:
    """Export ``model`` to ONNX: our torch's ``torch.onnx.export``, parameter for parameter (see
    :func:`export_program` for each), returning what it returns: with ``dynamo=True`` (the default), or for an
    ``ExportedProgram`` or ``ExportableModule``, the :class:`~exporter.program.ONNXProgram` (saved to ``f`` when
    given); with ``dynamo=False``, None after writing ``f``, with torch.onnx's DeprecationWarning."""
    program_contract = returns_program(dynamo, model)
    if not program_contract:
        warnings.warn(LEGACY_WARNING, DeprecationWarning, stacklevel=2)
    program = export_program(
        model, args, f, kwargs=kwargs, verbose=verbose, input_names=input_names, output_names=output_names,
        opset_version=opset_version, dynamo=dynamo, external_data=external_data, dynamic_shapes=dynamic_shapes,
        custom_translation_table=custom_translation_table, report=report, optimize=optimize, verify=verify,
        profile=profile, dump_exported_program=dump_exported_program, artifacts_dir=artifacts_dir,
        export_params=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs, dynamic_axes=dynamic_axes,
        training=training, operator_export_type=operator_export_type, do_constant_folding=do_constant_folding,
        custom_opsets=custom_opsets, export_modules_as_functions=export_modules_as_functions,
        autograd_inlining=autograd_inlining, provenance_in_model=provenance_in_model, captured=captured,
        runtime_workarounds=runtime_workarounds, check_dynamic_axes=check_dynamic_axes)
    return program if program_contract else None


def export_program(
    model: Any,  # an nn.Module, ExportedProgram, ExportableModule, ScriptModule or ScriptFunction
    args: tuple[Any, ...] = (),
    f: str | os.PathLike | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = DYNAMO_DEFAULT,
    external_data: bool = True,
    dynamic_shapes: dict[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    custom_translation_table: dict[Callable, Callable] | None = None,
    report: bool = False,
    optimize: bool = True,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir: str | os.PathLike = ".",
    export_params: bool = True,
    keep_initializers_as_inputs: bool | None = False,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    do_constant_folding: bool = True,
    custom_opsets: Mapping[str, int] | None = None,
    export_modules_as_functions: bool | Collection[type[torch.nn.Module]] = False,
    autograd_inlining: bool = True,
    provenance_in_model: bool = False,
    captured: Any = None,
    runtime_workarounds: bool | Collection[str] = True,
    check_dynamic_axes: bool = True,
) -> ONNXProgram:
    """Export ``model`` as :func:`export` does and return the :class:`~exporter.program.ONNXProgram` whichever the
    capture (:func:`export` returns None for ``dynamo=False``, as torch.onnx does).

    ``model``: an ``nn.Module``; a ``torch.export.ExportedProgram`` (converted as captured: ``args``/``kwargs`` are the
    example arguments, by default the program's own; ``dynamic_shapes`` is its own); a ``torch.onnx.ExportableModule``
    (its ``example_arguments()``, ``input_names()``, ``output_names()`` and ``dynamic_shapes()`` fill what the call
    leaves out); a ``ScriptModule``/``ScriptFunction`` with ``dynamo=False`` (torch.export refuses them, as it does
    in torch.onnx). ``args``: positional arguments (a tensor is a 1-tuple; a trailing dict holds keyword arguments),
    ``kwargs``: keyword arguments.

    ``dynamo=True`` captures with ``torch.export.export`` (non-strict); ``dynamo=False`` with TorchScript (tracing an
    ``nn.Module``, or a scripted model's own graph, Python numbers as 0-d inputs). Both convert through the same op
    library at ``opset_version`` (7 to 20, default 20). ``dynamic_shapes`` is torch.export's form (by ``forward``'s
    parameter names, or in argument order); ``dynamic_axes`` (``{name: {axis: axis name}}`` or ``{name: [axes]}``)
    works for both captures (translated to ``dynamic_shapes`` for torch.export); a key that names no input or output
    is ignored with torch.onnx's warning.

    ``f``: a path or a binary file object, written atomically once the model passed ``onnx.checker`` (None: nothing is
    written). With ``dynamo=True`` it is saved as torch.onnx saves it, ``program.save(f,
    include_initializers=export_params, keep_initializers_as_inputs=..., external_data=external_data)``: the weights
    go to ``<f>.data`` by default (``external_data=True``); a file object gets the whole model. With ``dynamo=False``
    the file holds the weights (an external data file only past 2 GiB); ``export_params=False`` makes the parameters
    plain inputs and ``keep_initializers_as_inputs`` lists them as inputs too, as torch's TorchScript exporter does.

    ``input_names``/``output_names`` name the graph's inputs (the arguments' tensors, then every parameter and buffer
    in state_dict order) and outputs. ``optimize=False`` skips constant folding (the graph is otherwise cleaned as
    always). ``verify=True`` runs the model on ONNX Runtime on the example arguments and compares with PyTorch
    (``program.verification``; a mismatch warns, as torch.onnx's logs). ``report=True`` writes a markdown report
    (``onnx_export_<time>_<status>.md``, on failure too) into ``artifacts_dir``; ``profile=True`` profiles the export
    (in the report, else printed); ``dump_exported_program=True`` saves the capture there (torch.export's ``.pt2``, or
    a TorchScript graph's text). ``training`` (eval by default, for both captures), ``operator_export_type``,
    ``do_constant_folding``, ``custom_opsets`` and ``export_modules_as_functions`` (``dynamo=False``) are as in torch's
    TorchScript exporter; ``verbose=True`` logs the stages and prints the model. ``custom_translation_table`` maps
    torch ops (``torch.ops.aten.add.Tensor``, a custom op's overload, an overload packet) to onnxscript functions (or
    lists of them: the first whose annotated input types fit is used) that convert that op in this export only, with
    either capture (``exporter/custom_translation.py``). ``autograd_inlining=False`` is refused (autograd Functions
    are always inlined).

    Beyond torch.onnx: ``provenance_in_model`` writes each node's origin into its ``doc_string``; ``captured`` reuses
    a capture of :func:`exporter.prepare_capture`; ``runtime_workarounds`` chooses the ONNX Runtime workarounds
    (``exporter/lowering/runtime.py``); ``check_dynamic_axes`` refuses a declared dynamic axis the capture fixes (a
    warning when False). See docs/user-guide.md for each.
    """
    if autograd_inlining is not True:
        raise ExportArgumentError("autograd_inlining=False is not supported: autograd Functions without a symbolic are "
                                  "always exported as the ops they call")
    exported_program = isinstance(model, torch.export.ExportedProgram)
    if is_exportable_module(model) and not args and not kwargs:
        args, kwargs = model.example_arguments()
        input_names = model.input_names() if input_names is None else input_names
        output_names = model.output_names() if output_names is None else output_names
        dynamic_shapes = model.dynamic_shapes() if dynamic_shapes is None else dynamic_shapes
    program_contract = returns_program(dynamo, model)
    if f is not None:
        destination.check_destination(f)
    if exported_program:
        if dynamic_shapes:
            warnings.warn("dynamic_shapes is ignored for an ExportedProgram: its dynamic dimensions are its own",
                          UserWarning, stacklevel=2)
        captured, args = capture_given_program(model, with_keyword_arguments(args, kwargs))
        # its module cannot change mode (the program was captured in one): exported as it is
        model, kwargs, dynamic_shapes, training = model.module(), None, None, TrainingMode.PRESERVE
    if program_contract and not exported_program and dynamic_shapes is None and dynamic_axes is not None:
        _warn_dynamic_axes_translated()
    artifacts = Artifacts(artifacts_dir, report=report, profile=profile, dump=dump_exported_program, verbose=verbose)
    program = None
    try:
        with artifacts.profiling():
            if dump_exported_program and captured is None:
                captured = prepare_capture(model, args, training, kwargs=kwargs, dynamo=program_contract,
                                           dynamic_shapes=dynamic_shapes, dynamic_axes=dynamic_axes,
                                           input_names=input_names)
                dynamic_shapes = None
            if dump_exported_program:
                artifacts.dump_capture(captured)
            program = run_export(
                model, args, None if program_contract else f,
                export_params=export_params or program_contract, verbose=verbose, training=training,
                input_names=input_names, output_names=output_names, operator_export_type=operator_export_type,
                opset_version=opset_version, do_constant_folding=do_constant_folding and optimize,
                dynamic_axes=dynamic_axes,
                keep_initializers_as_inputs=False if program_contract else keep_initializers_as_inputs,
                custom_opsets=custom_opsets, export_modules_as_functions=export_modules_as_functions, kwargs=kwargs,
                dynamo=_capture_asked(dynamo, program_contract, exported_program), dynamic_shapes=dynamic_shapes,
                provenance_in_model=provenance_in_model,
                captured=captured, runtime_workarounds=runtime_workarounds, check_dynamic_axes=check_dynamic_axes,
                exported_program_given=exported_program, custom_translation_table=custom_translation_table)
        if program_contract and f is not None:
            _save_as_torch_onnx(program, f, export_params, bool(keep_initializers_as_inputs), external_data)
        program.verification = check_outputs(program, model, with_keyword_arguments(args, kwargs)) if verify else None
    except Exception as error:
        artifacts.finish(model, program, error)
        raise
    artifacts.finish(model, program, checks=program.verification)
    return program


# The start of each of those warnings, as a ``warnings.filterwarnings`` message pattern (for callers that filter them).
DYNAMIC_AXES_WARNINGS = r"(# 'dynamic_axes' is not recommended|from_dynamic_axes_to_dynamic_shapes is deprecated)"


def _warn_dynamic_axes_translated() -> None:
    """torch.onnx's two warnings for ``dynamic_axes`` with a torch.export capture (it translates them to dynamic
    shapes, as we do), worded as torch.onnx words them: callers and PyTorch's suite filter and match on the text."""
    warnings.warn("# 'dynamic_axes' is not recommended when dynamo=True, and may lead to 'torch._dynamo.exc.UserError: "
                  "Constraints violated.' Supply the 'dynamic_shapes' argument instead if export is unsuccessful.",
                  UserWarning, stacklevel=3)
    warnings.warn("from_dynamic_axes_to_dynamic_shapes is deprecated and will be removed in a future release. This "
                  "function converts 'dynamic_axes' format (including custom axis names) to 'dynamic_shapes' format. "
                  "Instead of relying on this conversion, provide 'dynamic_shapes' directly with custom names.",
                  DeprecationWarning, stacklevel=3)


def _save_as_torch_onnx(program: ONNXProgram, f: Any, export_params: bool, as_inputs: bool, external_data: bool):
    """``f`` written as torch.onnx's dynamo export writes it: ``save`` with the export's options, a file object with
    the whole model (it has no folder for a data file)."""
    if destination.is_path(f):
        program.save(f, include_initializers=export_params, keep_initializers_as_inputs=as_inputs,
                     external_data=external_data)
    else:
        program.save(f, include_initializers=export_params, keep_initializers_as_inputs=as_inputs)


def _capture_asked(dynamo: Any, program_contract: bool, exported_program: bool) -> Any:
    """The ``dynamo`` the pipeline gets: the default kept as such where the pipeline captures (it may then fall back
    to the trace: ``exporter/capture_choice.py``), else the contract's capture."""
    return dynamo if dynamo is DYNAMO_DEFAULT and not exported_program else program_contract


def returns_program(dynamo: Any, model: Any) -> bool:
    """Whether torch.onnx takes its torch.export path (and returns a program): ``dynamo=True`` (its default), or a
    model that is an ``ExportedProgram`` or an ``ExportableModule`` whatever ``dynamo`` says."""
    if dynamo is DYNAMO_DEFAULT:
        return True
    if not isinstance(dynamo, bool):
        raise ExportArgumentError(f"dynamo must be True (capture with torch.export) or False (TorchScript), "
                                  f"got {dynamo!r}")
    return dynamo or isinstance(model, torch.export.ExportedProgram) or is_exportable_module(model)


def is_exportable_module(model: Any) -> bool:
    """Whether ``model`` is a ``torch.onnx.ExportableModule`` (known by its class, without importing torch's
    exporter: the engine never does)."""
    return any(cls.__name__ == "ExportableModule" and cls.__module__.split(".")[:2] == ["torch", "onnx"]
               for cls in type(model).__mro__)


def export_to_pretty_string(
    model: Any, args: Any, *, google_printer: bool = False, add_node_names: bool = True, export_type: Any = None,
    **kwargs: Any,
) -> str:
    """Export like :func:`export` and return the ONNX model as readable text instead of writing a file.

    ``google_printer=True`` gives the protobuf text format instead of ONNX's compact text syntax;
    ``add_node_names=False`` leaves node names out. ``export_type`` is accepted for compatibility and ignored
    (this exporter writes one format, a protobuf file).
    """
    kwargs.setdefault("dynamo", False)  # the TorchScript-era function: its capture unless asked
    program = export_program(model, args, **kwargs)
    printed = onnx.ModelProto()
    printed.CopyFrom(program.model_proto)
    if not add_node_names:
        for node in printed.graph.node:
            node.ClearField("name")
    if google_printer:
        for tensor in printed.graph.initializer:
            tensor.ClearField("raw_data")
        return str(printed)
    return pretty_text(printed)
