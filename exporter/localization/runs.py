"""The two runs :func:`exporter.verify` compares: the captured TorchScript graph with every compared value as an
extra output (and, to arbitrate float32 rounding, each producing node again in float64), and ONNX Runtime with every
intermediate value as an extra graph output."""

from __future__ import annotations

from typing import overload

import numpy as np
import onnx
import torch

from exporter.ort_session import make_session


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


def float64_values(graph: torch._C.Graph, inputs: list[torch.Tensor], wanted: list[torch._C.Value]) -> dict[int, np.ndarray]:
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


@overload
def to_numpy(tensor: torch.Tensor) -> np.ndarray: ...
@overload
def to_numpy(tensor: list) -> list: ...
def to_numpy(tensor: torch.Tensor | list) -> np.ndarray | list:
    """The tensor's values; a quantized tensor's integers (what the exported QuantizeLinear computes); a list input's
    items."""
    if isinstance(tensor, list):
        return [to_numpy(item) for item in tensor]
    if tensor.is_quantized:
        return tensor.int_repr().numpy()
    return tensor.detach().cpu().resolve_conj().resolve_neg().numpy()


def run_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray], extra: dict[str, int]) -> dict[str, np.ndarray]:
    """ONNX Runtime's value of every graph output and of each name in ``extra`` (name -> ONNX element type)."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    for name, elem_type in extra.items():
        if name not in present:
            exposed.graph.output.append(onnx.helper.make_tensor_value_info(name, elem_type, None))
    session = make_session(exposed.SerializeToString(), "cpu")
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))
