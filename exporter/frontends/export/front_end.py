"""The torch.export front end as the pipeline sees it (:class:`exporter.frontends.base.FrontEnd`): an
ExportedProgram (EXPORT), converted by this package's driver."""

from __future__ import annotations

import pathlib
from collections.abc import Collection
from typing import Any

import torch

from exporter import ir
from exporter.frontends.base import Capture, Captured, Driver, FrontEnd, SizeCheck, flatten, split_args
from exporter.frontends.export import origin as _origin  # noqa: F401  (registers the origin of its stamps)
from exporter.frontends.export.capture import at_opset, program_axes, user_input_placeholders
from exporter.frontends.export.driver import FxConverter
from exporter.frontends.export.graph_reader import FxGraph
from exporter.frontends.export.guards import check_program_guards
from exporter.graph_context import ExportSession


class _GuardCheck(SizeCheck):
    """The program's guards on its dynamic dims (``guards``), read once the graph is converted and its inputs laid
    out."""

    def __init__(self, model: Any, args: Any, captured: Captured, axes: dict, enabled: bool):
        self.model, self.args, self.captured, self.axes, self.enabled = model, args, captured, axes, enabled

    def refuse(self, names_in: list[str]) -> None:
        check_program_guards(self.model, self.args, self.captured, names_in, self.axes, self.enabled)


class ExportFrontEnd(FrontEnd):
    captures = (Capture.EXPORT,)
    holds_complex_as_real_views = True

    def output_count(self, captured: Captured) -> int:
        assert captured.example_outputs is not None  # the torch.export capture records its outputs
        return len(captured.example_outputs)

    def unshared(self, captured: Captured) -> Captured:
        return captured  # at_opset decomposes a copy of the program

    def at_opset(self, captured: Captured, opset: int, keep: Collection = ()) -> Captured:
        return at_opset(captured, opset, keep)

    def user_input_names(self, model: Any, args: Any, captured: Captured) -> list[str]:
        # the program's placeholders', as PyTorch's torch.export-based ONNX exporter names them
        return [node.name for node in user_input_placeholders(captured.program)]

    def graph_input_values(self, args: Any, captured: Captured) -> list:
        """The tensors alone: the program specialized the numbers."""
        positional, kwargs = split_args(args)
        return flatten((positional, kwargs))[0]

    def list_input_number_type(self, captured: Captured, position: int) -> torch.dtype | None:
        return None  # a program's inputs are tensors

    def read_at_run_time(self, value: ir.Value, opset: int) -> bool:
        return False  # inputs are the program's: no read is folded that PyTorch's exporter makes at run time

    def declared_axes(self, captured: Captured, names_in: list[str], names_out: list[str],
                      axes: dict) -> tuple[dict, bool]:
        axes = program_axes(captured, names_in, names_out, axes)
        return axes, not any(name in axes for name in names_in)  # a data-decided output size is no reason

    def size_check(self, model: Any, args: Any, captured: Captured, names_in: list[str], axes: dict,
                   enabled: bool) -> SizeCheck:
        return _GuardCheck(model, args, captured, axes, enabled)

    def driver(self, session: ExportSession, source_locations: bool) -> Driver:
        return FxConverter(session)

    def graph_reader(self, captured: Captured, inputs: list) -> FxGraph:
        return FxGraph(captured, inputs)

    def dump(self, captured: Captured, directory: pathlib.Path, stem: str) -> pathlib.Path:
        path = directory / f"{stem}.pt2"
        torch.export.save(captured.program, path)
        return path


EXPORT = ExportFrontEnd()
