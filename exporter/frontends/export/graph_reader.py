"""A torch.export capture's graph as :func:`exporter.verify` reads it (see ``exporter.localization.captured``): the
exported program's graph module run by ``torch.fx.Interpreter``, taking each wanted node's result as it is produced,
and each wanted producer run again on its float inputs cast to float64. A value is an FX node (each node is one
value; one result of an op with several is its getitem node), and its own key."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np
import torch
from torch.export.graph_signature import InputKind, OutputKind

from exporter.frontends.base import Captured
from exporter.frontends.export.capture import state_tensor
from exporter.frontends.export.facts import op_kind, producer_of, schema_arguments
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

_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class FxGraph(CapturedGraph):
    """``capture.program``'s graph run on ``inputs``: the model's tensor inputs in order, then the capture's
    parameters and buffers (``capture.params``), as the ONNX model's graph inputs and initializers hold them."""

    def __init__(self, capture: Captured, inputs: list[torch.Tensor]):
        program = capture.program
        self.module: torch.fx.GraphModule = program.graph_module
        self.graph: torch.fx.Graph = self.module.graph
        user = iter(inputs[:len(capture.user_inputs)])
        state = {name: tensor for (name, _), tensor in zip(capture.params, inputs[len(capture.user_inputs):],
                                                           strict=True)}
        placeholders = [node for node in self.graph.nodes if node.op == "placeholder"]
        self.arguments: dict[torch.fx.Node, Any] = {}
        for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True):
            if spec.kind == InputKind.USER_INPUT:
                example = node.meta.get("val")  # a number torch.export specialized stays the example's
                self.arguments[node] = next(user) if isinstance(example, torch.Tensor) else example
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                self.arguments[node] = state[spec.target]
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                self.arguments[node] = state_tensor(program, spec.target)
            else:  # an effect token: orders side effects, holds nothing
                self.arguments[node] = torch.tensor([])
        self._constants = {node for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True)
                           if spec.kind == InputKind.CONSTANT_TENSOR}
        output_node = next(node for node in self.graph.nodes if node.op == "output")
        self._user_outputs = [index for index, spec in enumerate(program.graph_signature.output_specs)
                              if spec.kind == OutputKind.USER_OUTPUT]
        self._outputs = {output_node.args[0][index] for index in self._user_outputs}

    def key(self, value: torch.fx.Node) -> Hashable:
        return value

    def comparable(self, value: torch.fx.Node) -> bool:
        return value.graph is self.graph and isinstance(value.meta.get("val"), torch.Tensor)

    def input_array(self, value: torch.fx.Node) -> np.ndarray | list:
        return to_numpy(self.arguments[value])

    def kind(self, value: torch.fx.Node) -> str:
        producer = producer_of(value)
        return op_kind(producer) if producer.op == "call_function" else f"{producer.op}:{producer.target}"

    def is_quantized(self, value: torch.fx.Node) -> bool:
        example = value.meta.get("val")
        return isinstance(example, torch.Tensor) and example.is_quantized

    def owners(self, value: torch.fx.Node) -> list[Any]:
        producer = producer_of(value)
        return [value] if producer is value else [value, producer]

    def ranked_values(self) -> list[Any]:
        ranked = [node.args[0] for node in self._calls() if op_kind(node) in RANKING]
        return [value for value in ranked if isinstance(value, torch.fx.Node) and self.comparable(value)]

    def ranking(self, value: torch.fx.Node) -> tuple[Hashable, int] | None:
        producer = producer_of(value)
        example = value.meta.get("val")
        if (producer.op != "call_function" or op_kind(producer) not in RANKING
                or not isinstance(example, torch.Tensor) or example.dtype != torch.int64):
            return None
        names = [argument.name for argument in producer.target._schema.arguments]  # type: ignore[union-attr]
        ranked, dim = producer.args[0], schema_arguments(producer)[names.index("dim")]
        return (ranked, dim) if isinstance(ranked, torch.fx.Node) and isinstance(dim, int) else None

    def run(self, wanted: list[Any]) -> tuple[dict[Hashable, np.ndarray], list[np.ndarray]]:
        recorder = _Recorder(self.module, set(wanted), set())
        outputs = recorder.run_all(self.arguments)
        return recorder.values, [to_numpy(outputs[index]) for index in self._user_outputs]

    def float64_values(self, values: list[Any]) -> dict[Hashable, np.ndarray]:
        rerun = {value for value in values if isinstance(producer_of(value).target, torch._ops.OpOverload)}
        recorder = _Recorder(self.module, set(), rerun)
        recorder.run_all(self.arguments)
        return recorder.values

    def selections(self) -> Selections:
        placeholders = [node for node in self.graph.nodes if node.op == "placeholder"]
        return selections(placeholders, [self._step(node) for node in self._calls()])

    def successors(self, value: torch.fx.Node) -> list[Any]:
        return [user for user in value.users if user.op == "call_function"]

    def is_output(self, value: torch.fx.Node) -> bool:
        return value in self._outputs

    def _calls(self) -> list[torch.fx.Node]:
        return [node for node in self.graph.nodes if node.op == "call_function"]

    def _step(self, node: torch.fx.Node) -> Step:
        """The selection analysis's view of ``node``: its data reads by schema position (shape-only ones left out)."""
        kind = op_kind(node)
        if isinstance(node.target, torch._ops.OpOverload):
            skipped = SHAPE_ONLY_ARGUMENTS.get(kind, ())
            data = [read for k, argument in enumerate(schema_arguments(node)) if k not in skipped
                    for read in _nodes_in(argument)]
        else:  # a Python operator on sizes, a getitem, cond / while_loop (whose operands hold every outer read)
            data = list(node.all_input_nodes)
        frontier = [read for read in node.all_input_nodes if isinstance(read.meta.get("val"), torch.Tensor)
                    and read.op in ("placeholder", "call_function") and read not in self._constants]
        example = node.meta.get("val")
        results = example if isinstance(example, (tuple, list)) else [example]
        return Step(kind, [(read, _class_of(read.meta.get("val"))) for read in data],
                    [(node, _class_of(result)) for result in results], frontier)


def _nodes_in(argument: Any) -> list[torch.fx.Node]:
    if isinstance(argument, torch.fx.Node):
        return [argument]
    if isinstance(argument, (list, tuple)):
        return [node for item in argument for node in _nodes_in(item)]
    return []


def _class_of(example: Any) -> str:
    if not isinstance(example, torch.Tensor):
        return OTHER
    return FLOAT if example.dtype.is_floating_point or example.dtype.is_complex else INTEGRAL


def _as_float64(argument: Any) -> Any:
    if isinstance(argument, torch.Tensor) and argument.dtype in _FLOAT_DTYPES:
        return argument.double()
    return argument


class _Recorder(torch.fx.Interpreter):
    """Runs a graph module, keeping a copy of each ``wanted`` node's result as it is produced and, for each
    ``float64`` node, its producer's result computed again from its float inputs cast to float64."""

    def __init__(self, module: torch.fx.GraphModule, wanted: set[torch.fx.Node], float64: set[torch.fx.Node]):
        super().__init__(module)
        self.wanted = wanted
        self.float64_by_producer: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        for value in float64:
            self.float64_by_producer.setdefault(producer_of(value), []).append(value)
        self.values: dict[Hashable, np.ndarray] = {}

    def run_all(self, arguments: dict[torch.fx.Node, Any]) -> tuple:
        placeholders = [node for node in self.graph.nodes if node.op == "placeholder"]
        with torch.no_grad():
            return tuple(self.run(*[arguments[node] for node in placeholders], enable_io_processing=False))

    def run_node(self, node: torch.fx.Node) -> Any:
        result = super().run_node(node)
        if node in self.wanted:
            self.values[node] = to_numpy(result.clone())
        if node in self.float64_by_producer:
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            args = torch.fx.node.map_aggregate(args, _as_float64)
            kwargs = torch.fx.node.map_aggregate(kwargs, _as_float64)
            exact = node.target(*args, **kwargs)  # type: ignore[operator]  # an OpOverload: float64_values' filter
            for value in self.float64_by_producer[node]:
                item = exact if value is node else exact[value.args[1]]  # a getitem of the producer's results
                self.values[value] = to_numpy(item)
        return result
