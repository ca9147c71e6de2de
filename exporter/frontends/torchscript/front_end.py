"""The TorchScript front end as the pipeline sees it (:class:`exporter.frontends.base.FrontEnd`): a traced model
(TRACE) or a scripted one's own graph (SCRIPT), converted by this package's driver."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Collection
from typing import Any

import torch

from exporter import ir, naming
from exporter.frontends.base import Capture, Captured, Driver, FrontEnd, SizeCheck, flatten, split_args
from exporter.frontends.torchscript import boundary
from exporter.frontends.torchscript import origin as _origin  # noqa: F401  (registers the origin of its stamps)
from exporter.frontends.torchscript import symbolics as _families  # noqa: F401  (registers the prim families)
from exporter.frontends.torchscript.driver import Converter
from exporter.frontends.torchscript.facts import graph_output_count
from exporter.frontends.torchscript.graph_reader import TorchScriptGraph
from exporter.frontends.torchscript.scripted import split_list_inputs
from exporter.frontends.torchscript.traced_sizes import TraceCheck, check_traced_axes
from exporter.graph_context import ExportSession
from exporter.lowering.sequence import SEQUENCE_OPSET


class _TraceSizeCheck(SizeCheck):
    """A trace's check of its declared dynamic axes (``traced_sizes``), made before conversion."""

    def __init__(self, check: TraceCheck):
        self.check = check
        self.seconds = check.seconds

    def refuse(self, names_in: list[str]) -> None:
        self.check.refuse()


class TorchScriptFrontEnd(FrontEnd):
    captures = (Capture.TRACE, Capture.SCRIPT)

    def output_count(self, captured: Captured) -> int:
        return graph_output_count(captured.graph)

    def unshared(self, captured: Captured) -> Captured:
        # The converter's passes rewrite the TorchScript graph they read: each export gets its own copy.
        return dataclasses.replace(captured, graph=captured.graph.copy())

    def at_opset(self, captured: Captured, opset: int, keep: Collection = ()) -> Captured:
        # Below the opset of ONNX sequences, a list input is one input per item.
        return split_list_inputs(captured) if opset < SEQUENCE_OPSET else captured

    def user_input_names(self, model: Any, args: Any, captured: Captured) -> list[str]:
        return naming.default_user_input_names(model, args, captured.user_inputs)

    def graph_input_values(self, args: Any, captured: Captured) -> list:
        """A list argument that is one input (a scripted list, an ONNX sequence) stays one list of tensors, whatever
        its length; numbers are inputs, as 0-d tensors."""
        positional, kwargs = split_args(args)
        user_inputs = captured.user_inputs
        out: list = []
        for argument in list(positional) + list(kwargs.values()):
            if isinstance(argument, (list, tuple)) and len(out) < len(user_inputs) and \
                    isinstance(user_inputs[len(out)], list):
                out.append(flatten(list(argument), numbers_as_tensors=True)[0])
            else:
                out.extend(flatten(argument, numbers_as_tensors=True)[0])
        return out

    def list_input_number_type(self, captured: Captured, position: int) -> torch.dtype | None:
        return boundary.list_input_number_type(captured.graph, position)

    def read_at_run_time(self, value: ir.Value, opset: int) -> bool:
        return boundary.read_at_run_time(value, opset)

    def declared_axes(self, captured: Captured, names_in: list[str], names_out: list[str],
                      axes: dict) -> tuple[dict, bool]:
        return axes, not axes

    def size_check(self, model: Any, args: Any, captured: Captured, names_in: list[str], axes: dict,
                   enabled: bool) -> SizeCheck:
        return _TraceSizeCheck(check_traced_axes(model, args, captured, names_in, axes, enabled))

    def driver(self, session: ExportSession, source_locations: bool) -> Driver:
        return Converter(session, source_locations=source_locations)

    def graph_reader(self, captured: Captured, inputs: list) -> TorchScriptGraph:
        return TorchScriptGraph(captured.graph, inputs)

    def dump(self, captured: Captured, directory: pathlib.Path, stem: str) -> pathlib.Path:
        path = directory / f"{stem}_torchscript.txt"
        path.write_text(str(captured.graph))
        return path


TORCHSCRIPT = TorchScriptFrontEnd()
