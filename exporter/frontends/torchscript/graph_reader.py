"""The captured TorchScript graph as :func:`exporter.verify` reads it (see ``exporter.localization.captured``): run with
every compared value as an extra output, each producing node run again in float64, and its nodes described for the
selection analysis. Values are ``torch._C.Value`` s, keyed by ``unique()``."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import torch

from exporter.frontends.torchscript.facts import blocks_of, inputs_of
from exporter.localization.captured import CapturedGraph
from exporter.localization.runs import to_numpy
from exporter.localization.selections import (
    FLOAT,
    INTEGRAL,
    OTHER,
    RANKING,
    SHAPE_ONLY_ARGUMENTS,
    Selections,
    Step,
    selections,
)

_QUANTIZED_SCALAR_TYPES = frozenset({"QUInt8", "QInt8", "QInt32"})
_INTEGRAL_SCALAR_TYPES = ("Long", "Int", "Short", "Char", "Byte", "Bool")


class TorchScriptGraph(CapturedGraph):
    """A TorchScript capture's graph run on ``inputs``: its graph inputs in order (the model's, then parameters)."""

    def __init__(self, graph: torch._C.Graph, inputs: list):
        self.graph = graph
        self.inputs = inputs
        self._input_index = {v.unique(): k for k, v in enumerate(graph.inputs())}

    def key(self, value: torch._C.Value) -> Hashable:
        return value.unique()

    def comparable(self, value: torch._C.Value) -> bool:
        return value.type().kind() == "TensorType" and value.node().owningBlock() == self.graph.block()

    def input_array(self, value: torch._C.Value) -> np.ndarray | list:
        return to_numpy(self.inputs[self._input_index[value.unique()]])

    def kind(self, value: torch._C.Value) -> str:
        return value.node().kind()

    def is_quantized(self, value: torch._C.Value) -> bool:
        return value.type().scalarType() in _QUANTIZED_SCALAR_TYPES

    def owners(self, value: torch._C.Value) -> list[Any]:
        owner = value.node()
        if owner.kind() in ("prim::ListUnpack", "prim::TupleUnpack"):  # an element of a multi-output op's list
            return [owner, owner.input().node()]
        return [owner]

    def ranked_values(self) -> list[Any]:
        ranked = [node.inputsAt(0) for node in self.graph.nodes() if node.kind() in RANKING]
        return [value for value in ranked if value.type().kind() == "TensorType"]

    def ranking(self, value: torch._C.Value) -> tuple[Hashable, int] | None:
        node = value.node()
        if node.kind() not in RANKING or value.type().scalarType() != "Long":
            return None
        dim = constant_argument(node, "dim")
        return None if dim is None else (node.inputsAt(0).unique(), dim)

    def run(self, wanted: list[Any]) -> tuple[dict[Hashable, np.ndarray], list[np.ndarray]]:
        return torch_values(self.graph, self.inputs, wanted)

    def float64_values(self, values: list[Any]) -> dict[Hashable, np.ndarray]:
        simple = [value for value in values if not blocks_of(value.node())]
        return float64_values(self.graph, self.inputs, simple) if simple else {}

    def selections(self) -> Selections:
        return selections([v.unique() for v in self.graph.inputs()], [_step(node, self.graph.block())
                                                                      for node in self.graph.nodes()])

    def successors(self, value: torch._C.Value) -> list[Any]:
        top = self.graph.block()
        return [out for use in value.uses() if use.user.owningBlock() == top for out in use.user.outputs()]

    def is_output(self, value: torch._C.Value) -> bool:
        return any(value.unique() == output.unique() for output in self.graph.outputs())


# -- the selection analysis's view of a node ----------------------------------------------------------------------
def _class_of(value: torch._C.Value) -> str:
    if value.type().kind() != "TensorType" or value.type().scalarType() is None:
        return OTHER
    return INTEGRAL if value.type().scalarType() in _INTEGRAL_SCALAR_TYPES else FLOAT


def _step(node: torch._C.Node, top: torch._C.Block) -> Step:
    reads = node_reads(node)
    skipped = SHAPE_ONLY_ARGUMENTS.get(node.kind(), ())
    frontier = [v.unique() for v in reads if v.type().kind() == "TensorType" and v.node().owningBlock() == top
                and v.node().kind() != "prim::Constant"]
    return Step(node.kind(), [(v.unique(), _class_of(v)) for k, v in enumerate(reads) if k not in skipped],
                [(v.unique(), _class_of(v)) for v in node.outputs()], frontier)


def node_reads(node: torch._C.Node) -> list[torch._C.Value]:
    """A TorchScript node's inputs and the outer values its blocks read."""
    reads = inputs_of(node)
    for block in blocks_of(node):
        for inner in block.nodes():
            reads.extend(node_reads(inner))
        reads.extend(block.returnNode().inputs())
    return reads


def constant_argument(node: torch._C.Node, argument: str) -> Any:
    """The constant value of ``node``'s argument named ``argument`` (by its schema), or None."""
    try:
        schema = node.schema()
        names = [a.name for a in (torch._C.parse_schema(schema) if isinstance(schema, str) else schema).arguments]
        value = node.inputsAt(names.index(argument))
    except (ValueError, RuntimeError):
        return None
    return value.toIValue() if value.node().kind() == "prim::Constant" else None


# -- the runs -----------------------------------------------------------------------------------------------------
def torch_values(graph: torch._C.Graph, inputs: list[torch.Tensor], wanted: list[torch._C.Value]):
    """Run ``graph`` on ``inputs`` with the ``wanted`` top-level values as extra outputs: ({value.unique(): array},
    the graph's own outputs).

    Each value is cloned right where it is produced, so an in-place op later in the graph cannot change it.
    """
    copy = graph.copy()
    by_unique = {}
    for original, copied in zip(graph.inputs(), copy.inputs(), strict=True):
        by_unique[original.unique()] = copied
    for original_node, copied_node in zip(graph.nodes(), copy.nodes(), strict=True):
        for original, copied in zip(original_node.outputs(), copied_node.outputs(), strict=True):
            by_unique[original.unique()] = copied
    none = copy.insertConstant(None)  # type: ignore[attr-defined]  # bound in torch, missing from its stubs
    none.node().moveBefore(copy.nodes().__next__())
    clones = []
    for value in wanted:
        copied = by_unique[value.unique()]
        clone = copy.create("aten::clone", [copied, none], 1)
        clone.output().setType(copied.type())
        clone.insertAfter(none.node() if copied.node().kind() == "prim::Param" else copied.node())
        clones.append(clone.output())
    outputs = _run_returning(copy, list(copy.outputs()) + clones, inputs, "exporter_verify")
    count = len(outputs) - len(wanted)
    return ({value.unique(): to_numpy(tensor) for value, tensor in zip(wanted, outputs[count:], strict=True)},
            [to_numpy(tensor) for tensor in outputs[:count]])


def float64_values(graph: torch._C.Graph, inputs: list[torch.Tensor], wanted: list[torch._C.Value]) -> dict[Hashable, np.ndarray]:
    """PyTorch's float64 result of the nodes producing ``wanted``, each computed from its own float inputs cast to
    float64 (its other inputs, sizes and indices, as the graph computes them): {value.unique(): array}.

    Each producer is cloned right after itself in a copy of ``graph`` with ``aten::to(double)`` on its float tensor
    inputs, and the clone's result becomes an extra output: one run of the graph arbitrates every value at once.
    """
    copy = graph.copy()
    by_unique = {}
    for original_node, copied_node in zip(graph.nodes(), copy.nodes(), strict=True):
        for original, copied in zip(original_node.outputs(), copied_node.outputs(), strict=True):
            by_unique[original.unique()] = copied
    first = copy.nodes().__next__()
    constants = {}
    for constant in (torch.float64, False, None):
        constants[repr(constant)] = copy.insertConstant(constant)  # type: ignore[attr-defined]  # not in torch's stubs
        constants[repr(constant)].node().moveBefore(first)
    results = []
    for value in wanted:
        copied = by_unique[value.unique()]
        node = copied.node()
        casts = {}
        for read in node.inputs():
            if read.type().kind() == "TensorType" and read.type().scalarType() in ("Float", "Half", "BFloat16"):
                cast = copy.create("aten::to", [read, constants["torch.float64"], constants["False"],
                                                constants["False"], constants["None"]], 1)
                cast.output().setType(read.type().with_dtype(torch.float64))
                cast.insertBefore(node)
                casts[read.unique()] = cast.output()
        # createClone calls the mapping before the loop moves on; the default binds this node's casts explicitly.
        clone = copy.createClone(  # type: ignore[attr-defined]  # bound in torch, missing from its stubs
            node, lambda read, casts=casts: casts.get(read.unique(), read))
        clone.insertAfter(node)
        for out in clone.outputs():
            if out.type().kind() == "TensorType" and out.type().scalarType() == "Float":
                out.setType(out.type().with_dtype(torch.float64))
        results.append(clone.outputsAt(list(node.outputs()).index(copied)))
    outputs = _run_returning(copy, results, inputs, "exporter_verify_float64")
    return {value.unique(): to_numpy(tensor) for value, tensor in zip(wanted, outputs, strict=True)}


def _run_returning(graph: torch._C.Graph, results: list, inputs: list[torch.Tensor], name: str) -> tuple:
    """Run ``graph`` on ``inputs`` with ``results`` (its values) as its outputs, replacing its own: a graph
    function returns one value, so they are returned as one tuple."""
    while len(list(graph.outputs())):
        graph.eraseOutput(0)
    packed = graph.create("prim::TupleConstruct", results, 1)
    packed.output().setType(torch._C.TupleType([v.type() for v in results]))
    graph.appendNode(packed)
    graph.registerOutput(packed.output())
    function = torch._C._create_function_from_graph(name, graph)
    with torch.no_grad():
        return function(*inputs)
