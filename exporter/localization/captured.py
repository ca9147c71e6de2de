"""The captured graph as :func:`exporter.verify` reads it, whichever front end captured it.

The verifier compares ONNX values with the values of the graph the export converted: TorchScript's
(``exporter.frontends.torchscript.graph_reader``) or torch.export's FX graph (``exporter.frontends.export.graph_reader``). A
*value* is what the export's provenance names for an ONNX value (a TorchScript ``Value``, an FX ``Node``); its *key*
indexes the arrays a run returns. Only the values computed at the graph's top level are compared: values inside
TorchScript If/Loop bodies and torch.export cond/while_loop subgraphs are computed by their control-flow op, as a
whole.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable
from typing import Any

import numpy as np

from exporter.localization.selections import Selections


class CapturedGraph(ABC):
    """The captured graph, run on the inputs the verifier compares on (those of the ONNX model's graph inputs)."""

    @abstractmethod
    def key(self, value: Any) -> Hashable:
        """The key of ``value`` in the arrays :meth:`run` and :meth:`float64_values` return."""

    @abstractmethod
    def comparable(self, value: Any) -> bool:
        """Whether ``value`` is a tensor computed at the graph's top level (not inside a control-flow body)."""

    @abstractmethod
    def input_array(self, value: Any) -> np.ndarray | list:
        """The run's input bound to the graph input ``value`` (a list input's items as a list)."""

    @abstractmethod
    def kind(self, value: Any) -> str:
        """The op computing ``value``, by its TorchScript name (``aten::conv2d``): the tolerance's family."""

    @abstractmethod
    def is_quantized(self, value: Any) -> bool:
        """Whether ``value`` is a quantized tensor (compared as its integers)."""

    @abstractmethod
    def owners(self, value: Any) -> list[Any]:
        """The nodes computing ``value``, as the provenance names ONNX nodes' origins: its node, and for one item of
        a multi-result op's list or tuple, that op too."""

    @abstractmethod
    def ranked_values(self) -> list[Any]:
        """The tensors a top-k or sort ranks (to tell an exact tie broken otherwise from a wrong selection)."""

    @abstractmethod
    def ranking(self, value: Any) -> tuple[Hashable, int] | None:
        """For the integer indices a top-k or sort computes: (the key of the data it ranks, the dim it ranks
        along); None for any other value."""

    @abstractmethod
    def run(self, wanted: list[Any]) -> tuple[dict[Hashable, np.ndarray], list[np.ndarray]]:
        """Run the graph with the ``wanted`` values as extra outputs, each taken as it is produced (a later
        in-place op cannot change it): ({key: array}, the graph's own outputs)."""

    @abstractmethod
    def float64_values(self, values: list[Any]) -> dict[Hashable, np.ndarray]:
        """PyTorch's float64 result of the nodes computing ``values``, each computed from its own float inputs cast
        to float64 (its other inputs as the graph computes them), by key. A value whose node holds subgraphs (a
        control-flow op) has no entry; a node without a float64 kernel raises."""

    @abstractmethod
    def selections(self) -> Selections:
        """The graph's data-dependent selections (``exporter.localization.selections``), by value keys."""

    @abstractmethod
    def successors(self, value: Any) -> list[Any]:
        """The values computed at the top level by the nodes reading ``value``."""

    @abstractmethod
    def is_output(self, value: Any) -> bool:
        """Whether ``value`` is one of the model's outputs."""
