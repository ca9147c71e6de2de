"""The in-memory ONNX graph that the converter builds and the passes rewrite.

Deliberately small: values know their producer, element type and (possibly symbolic) shape, and a value
with a known constant payload carries it, which is what constant folding and the symbolics need.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Value kinds.
TENSOR = "tensor"
SEQUENCE = "sequence"
NO_ITEMS = "no items"


def join_elem_shapes(a: tuple | str | None, b: tuple | str | None) -> tuple | str | None:
    """The item shape of a sequence holding the items of two sequences (or a sequence and one more item)."""
    if a == NO_ITEMS:
        return b
    if b == NO_ITEMS:
        return a
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


# A list a loop built by appending one tensor per iteration, held as the Loop's scan output: the tensors stacked
# on a new axis 0. Only aten::stack reads such a value (symbolics.loop._scanned_lists makes sure).
SCANNED = "scanned"
# An ONNX optional (opset 15+): a tensor or nothing, PyTorch's ``Optional[Tensor]`` that may be None at run time.
# ``dtype`` and ``shape`` describe the element it holds when it holds one.
OPTIONAL = "optional"


class RowScaled:
    """A constant computed when it is read: ``weight`` with each slice along axis 0 multiplied by one ``factor``
    (computed in ``factor``'s precision, rounded to ``weight``'s type), e.g. a Conv weight with a BatchNormalization
    folded into it. The writer computes it a chunk of rows at a time (:meth:`rows`), so folding allocates no copy of
    the model's weights; ``np.asarray`` gives the whole array. ``seconds`` counts the time spent computing it."""

    def __init__(self, weight: np.ndarray, factor: np.ndarray):
        self.weight, self.factor = weight, factor
        self.shape, self.dtype, self.ndim = weight.shape, weight.dtype, weight.ndim
        self.size, self.nbytes = weight.size, weight.nbytes
        self.seconds = 0.0

    def scaled(self, factor: np.ndarray) -> RowScaled:
        """This constant with each row multiplied by ``factor`` too (two BatchNormalizations folded in turn)."""
        return RowScaled(self.weight, self.factor * factor.astype(self.factor.dtype))

    def rows(self, start: int, stop: int) -> np.ndarray:
        began = time.perf_counter()
        factor = self.factor[start:stop].reshape(-1, *([1] * (self.ndim - 1)))
        block = (self.weight[start:stop].astype(self.factor.dtype, copy=False) * factor).astype(self.dtype, copy=False)
        self.seconds += time.perf_counter() - began
        return block

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        whole = self.rows(0, len(self))
        return whole if dtype is None else whole.astype(dtype, copy=False)


@dataclass(eq=False)
class Value:
    name: str
    dtype: int | None = None  # ONNX element type
    shape: tuple | None = None  # each dim: int, str (symbolic) or None; None = rank unknown
    producer: Node | None = None
    const: np.ndarray | RowScaled | None = None  # payload of a Constant node output or an initializer
    kind: str = TENSOR
    is_param: bool = False  # an initializer that holds a model parameter or buffer
    inferred_shape: tuple | None = None  # cached result of ONNX shape inference (dynamic-shape exports)
    shape_inferred: bool = False  # ONNX shape inference has seen this value (inferred_shape None: it could not tell)
    is_number: bool = False  # a TorchScript int/float/bool (a "wrapped number" for type promotion)
    # A graph input that an op on empty tensors read before the op was folded to a constant: it stays an input, as in
    # PyTorch's exporter, which keeps that op.
    read_by_folded_op: bool = False
    # A graph input: the TorchScript graph input it is, whose uses decide whether PyTorch's exporter keeps it.
    argument: Any = None
    # Provenance: the TorchScript value this value computes (the last one a symbolic result was bound to; a pass
    # that makes another value compute it, such as Conv+BatchNormalization fusion, hands it over).
    origin: Any = None
    # A sequence's items: their shape where every item has it (dims None where sizes may differ), None where even
    # the rank is unknown. NO_ITEMS: the sequence is known to be empty (an empty list), so any shape joins it.
    elem_shape: tuple | str | None = None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def __repr__(self) -> str:
        return f"Value({self.name!r})"


@dataclass(eq=False)
class Node:
    op_type: str
    inputs: list[Value | None]
    outputs: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    domain: str = ""
    name: str = ""
    doc_string: str = ""
    origin: Any = None  # provenance: the TorchScript node whose symbolic emitted this node (None: made by a pass)
    attr_types: dict[str, int] = field(default_factory=dict)  # each attribute's onnx.AttributeProto type

    def __repr__(self) -> str:
        return f"Node({self.domain + '::' if self.domain else ''}{self.op_type}, {self.name!r})"


# The ONNX operators the exporter emits that have graph attributes (``onnx.defs`` adds only SequenceMap, at 17, which
# the exporter does not emit); a custom domain's operator may have any attribute.
GRAPH_ATTRIBUTE_OPS = frozenset({"If", "Loop", "Scan"})


@dataclass(eq=False)
class Graph:
    name: str
    parent: Graph | None = None
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    initializers: list[Value] = field(default_factory=list)

    def subgraphs_of(self, node: Node) -> list[Graph]:
        if not node.domain and node.op_type not in GRAPH_ATTRIBUTE_OPS:
            return []  # every pass asks this of every node: most are answered by the op type alone
        return [a for a in node.attrs.values() if isinstance(a, Graph)] if node.attrs else []

    def all_nodes(self):
        """Every node of this graph and of its nested subgraphs."""
        for node in self.nodes:
            yield node
            for sub in self.subgraphs_of(node):
                yield from sub.all_nodes()


def consumers(graph: Graph) -> dict[int, list[Node]]:
    """Map id(value) -> nodes (in this graph and nested subgraphs) that read it."""
    users: dict[int, list[Node]] = {}
    for node in graph.all_nodes():
        for value in node.inputs:
            if value is not None:
                users.setdefault(id(value), []).append(node)
    return users
