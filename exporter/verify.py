"""Localize a mismatch: the first ONNX node whose result disagrees with PyTorch, and whose fault it is.

:func:`verify` exports a model, runs the captured graph (TorchScript's, or torch.export's program with ``dynamo=True``)
with every intermediate value as an output and ONNX Runtime with every intermediate value as an extra graph output,
pairs them through the export's provenance, and compares them in topological order. A value out of tolerance in the full run may only carry
rounding error grown upstream, so each such value gets a *local* check: the ONNX nodes that compute it from the
previous compared values (its subgraph), fed with PyTorch's own inputs. The first value whose local check fails
is the divergence; its subgraph, with those inputs, is the minimal repro, run in ONNX Runtime and in the ONNX
reference evaluator to say whose result is right.

Comparisons follow the conformance harness's policy, which lives in the library: ``exporter.numerics.compare_arrays``
with the per-operator tolerance of ``exporter.tolerances`` (by the op's family, ``aten::conv2d``), and sessions from
``exporter.ort_session.make_session``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from exporter.arguments import bound_arguments, with_keyword_arguments
from exporter.binding import graph_input_values
from exporter.errors import ExportArgumentError
from exporter.frontends.base import split_args
from exporter.localization.findings import Agreement, Divergence, Repro, SelectionCheck, VerifyResult
from exporter.localization.verifier import Verifier

__all__ = ["Agreement", "Divergence", "Repro", "SelectionCheck", "VerifyResult", "verify"]

# A value out of tolerance in the full run is checked locally; past this many local checks without a failing one
# the divergence is reported as not localized (the cost is bounded on huge graphs).
DEFAULT_MAX_LOCAL_CHECKS = 2000


def verify(
    model: Any,
    args: Any,
    opset_version: int | None = None,
    *,
    check_args: Any = None,
    output_tolerance: Callable[[float], tuple[float, float]] | None = None,
    repro_dir: str | None = None,
    max_local_checks: int = DEFAULT_MAX_LOCAL_CHECKS,
    judge_selection: bool = False,
    **export_options: Any,
) -> VerifyResult:
    """Export ``model`` and find the first ONNX node whose result disagrees with PyTorch, with its provenance.

    ``model``, ``args`` and ``export_options`` (``input_names``, ``dynamic_axes``, ...) are as for
    :func:`exporter.export_program` (the model is exported to memory; ``dynamo`` defaults to False here, the
    TorchScript capture). ``model`` may also be an :class:`~exporter.program.ONNXProgram` exported with
    ``dynamo=True``: it is verified against the ExportedProgram it holds, on ``args``. The comparison runs on ``check_args`` (default
    ``args``; another input size for a dynamic export), in PyTorch and on ONNX Runtime's CPU provider.
    ``dynamo=True`` verifies the torch.export capture's conversion as the default verifies the TorchScript one's.
    Intermediate values are judged by the harness's per-operator tolerance (``exporter.tolerances``) of the op
    that computes them (a TorchScript node's kind, or the ATen op of a program's node: ``aten::conv2d``); the
    model's outputs by ``output_tolerance`` (scale -> (rtol, atol)), or by the zoo's default model tolerance
    (``exporter.tolerances.DEFAULT_RTOL``/``DEFAULT_ATOL``) when None. Values inside control flow (TorchScript
    If/Loop bodies, torch.export cond/while_loop subgraphs) are not compared.
    ``repro_dir`` receives the diverging subgraph as an ONNX backend test. ``judge_selection`` also judges the
    model before its data-dependent selections (``VerifyResult.selection``, a :class:`SelectionCheck`): for
    detectors whose final outputs sit on near-ties. Returns a :class:`VerifyResult`.
    """
    if max_local_checks < 1:
        raise ExportArgumentError(f"max_local_checks must be at least 1, got {max_local_checks!r}")
    if "f" in export_options:
        raise ExportArgumentError("verify exports to memory: do not pass `f`")
    from exporter.contract import export_program
    from exporter.program import ONNXProgram

    export_options.setdefault("dynamo", False)
    if isinstance(model, ONNXProgram):  # exported already: its torch.export program is the model it came from
        result = model
        if result.exported_program is None or result.provenance is None or export_options.get("kwargs"):
            raise ExportArgumentError("verify takes a program exported with dynamo=True (it holds the "
                                      "ExportedProgram to compare with) and its arguments as args; else the model")
        model, export_options["dynamo"] = result.exported_program.module(), True
    else:
        result = export_program(model, args, opset_version=opset_version, **export_options)
    check_args = with_keyword_arguments(args, export_options.get("kwargs")) if check_args is None else check_args
    check_args = bound_arguments(model, check_args, export_options["dynamo"])  # as export binds
    assert result.capture is not None  # an export's program holds its capture
    graph_inputs = graph_input_values(check_args, result.capture) + [tensor for _, tensor in result.capture.params]
    with torch.no_grad():
        eager = model(*split_args(check_args)[0], **split_args(check_args)[1])
    verifier = Verifier(result, graph_inputs, output_tolerance, repro_dir, max_local_checks)
    return verifier.run(eager, judge_selection=judge_selection)
