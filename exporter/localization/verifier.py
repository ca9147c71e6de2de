"""The verifier behind :func:`exporter.verify`: pairs each ONNX value with the PyTorch value it computes, compares
them in graph order, checks each value out of tolerance on PyTorch's own inputs (its local subgraph), and judges a
model before its data-dependent selections. Comparisons use the harness's per-operator tolerances. The PyTorch side
is the captured graph, read through ``exporter.localization.captured`` whichever front end captured it."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np
import onnx
import torch

from exporter.frontends.base import Captured
from exporter.local_functions import free_names
from exporter.localization.captured import CapturedGraph
from exporter.localization.findings import Agreement, Divergence, Repro, SelectionCheck, VerifyResult
from exporter.localization.repro import for_reference, judge, numpy_helper_value_info, write_backend_test
from exporter.localization.runs import run_onnx, to_numpy
from exporter.numerics import ARBITER_AGREEMENT, ARBITRATION_WORDS, compare_arrays, judge_by_float64, scale_of
from exporter.ort_session import make_session
from exporter.program import ONNXProgram
from exporter.provenance import Origin
from exporter.tolerances import DEFAULT_ATOL, DEFAULT_FAMILY, DEFAULT_RTOL, family_of, tolerance_for

# A local subgraph is walked back at most this many nodes (a node kind that hides its inputs behind many
# unpaired values would otherwise pull in the whole graph).
_MAX_SUBGRAPH_NODES = 64


# -- tolerance ------------------------------------------------------------------------------------------------
def _op_tolerance(kind: str, dtype: np.dtype) -> Callable[[float], tuple[float, float]]:
    """The harness's per-operator tolerance for an op by its TorchScript name (``aten::_convolution``, and a
    torch.export op's ``aten::conv2d`` -> the conv family)."""
    name = kind.partition("::")[2].strip("_")
    # OpInfo names put many ops under nn.functional (linear, layer_norm): try that spelling where the bare one
    # falls back to the default family.
    op = name if family_of(name) != DEFAULT_FAMILY else f"nn.functional.{name}"
    return tolerance_for(str(dtype), op).at


def _model_tolerance(scale: float) -> tuple[float, float]:
    """The default tolerance of a model's outputs, the zoo's for an entry that gives none."""
    return DEFAULT_RTOL, DEFAULT_ATOL


def _one_step(scale: float) -> tuple[float, float]:
    """Quantized values, compared as their integers: at most one step apart. PyTorch's kernels requantize with a
    fixed-point multiplier where ONNX's QuantizeLinear divides in float32, so a value on a rounding boundary may
    land one step to either side."""
    return 0.0, 1.0


def _agreement(name: str, origin: Origin | None, expected: np.ndarray, actual: np.ndarray, tolerance) -> Agreement:
    if tolerance is _one_step:
        expected, actual = expected.astype(np.float64), np.asarray(actual).astype(np.float64)
    verdict = compare_arrays([expected], [actual], tolerance)
    rtol, atol = tolerance(scale_of([expected]))
    return Agreement(name, origin, verdict.ok, verdict.max_abs, verdict.max_rel, scale_of([expected]), rtol, atol,
                     verdict.message)


def captured_graph(capture: Captured, inputs: list) -> CapturedGraph:
    """The graph ``capture`` holds, to be run on ``inputs``: the graph's inputs in order, the model's then its
    parameters (a torch.export capture: the model's tensor inputs, then ``capture.params``)."""
    return capture.front_end.graph_reader(capture, inputs)


# -- the verifier -----------------------------------------------------------------------------------------------
class Verifier:
    def __init__(self, result: ONNXProgram, inputs: list[torch.Tensor], output_tolerance, repro_dir, max_local):
        self.result = result
        self.model = result.model_proto
        assert result.provenance is not None, "verify needs the provenance an export records (provenance.RECORD)"
        self.provenance = result.provenance
        assert result.capture is not None, "verify needs the program of an export (it holds its capture)"
        self.graph = captured_graph(result.capture, inputs)
        self.output_tolerance = output_tolerance
        self.repro_dir = repro_dir
        self.max_local = max_local
        graph = self.model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.position = {id(node): k for k, node in enumerate(graph.node)}
        self.feeds: dict[str, Any] = {}  # arrays, and a list input's items as a list
        for graph_input in graph.input:
            if graph_input.name in self.initializers:
                continue
            self.feeds[graph_input.name] = self.graph.input_array(self.provenance.values[graph_input.name][0])

    # which ONNX values are paired with a PyTorch value (a value of the captured graph)
    def _pairs(self) -> dict[str, Any]:
        pairs: dict[str, Any] = {}
        taken: set = set()
        for node in self.model.graph.node:
            if node.op_type == "Constant" and not node.domain:
                continue  # a folded value: nothing of ONNX Runtime's to compare
            for name in node.output:
                entry = self.provenance.values.get(name)
                if entry is None or entry[1] is None:
                    continue
                value = entry[0]
                if not self.graph.comparable(value):
                    continue
                if self.graph.key(value) not in taken:
                    taken.add(self.graph.key(value))
                    pairs[name] = value
        return pairs

    def run(self, eager: Any, judge_selection: bool = False) -> VerifyResult:
        from exporter.frontends.base import flatten_outputs

        pairs = self._pairs()
        # The data a top-k or sort ranks, to tell an exact tie broken otherwise from a wrong selection.
        wanted = list(pairs.values()) + self.graph.ranked_values()
        self.torch, captured_outputs = self.graph.run(wanted)
        types: dict[str, int] = {}
        for name in pairs:
            elem_type = self.provenance.values[name][1]
            assert elem_type is not None  # _pairs takes only values of a known element type
            types[name] = elem_type
        types.update(self._other_types(pairs))
        self.onnx = run_onnx(self.model, self.feeds, types)
        self.expected = {name: self.torch[self.graph.key(value)] for name, value in pairs.items()}
        self.pairs = pairs

        expected_outputs = [to_numpy(t) for t in flatten_outputs(eager)]
        actual_outputs = [self.onnx[o.name] for o in self.model.graph.output]
        tolerance = self.output_tolerance or _model_tolerance
        outputs = compare_arrays(expected_outputs, actual_outputs, tolerance)
        capture = compare_arrays(expected_outputs, captured_outputs, tolerance)

        in_model = {name: self._in_model(name) for name in pairs}
        first = next((a for a in in_model.values() if not a.ok), None)
        divergence, checks, arbitrated = None, 0, []
        for name, agreement in in_model.items():
            if agreement.ok:
                continue
            if checks == self.max_local:
                break
            checks += 1
            local = self._local_check(name)
            if local is not None and local.ok and ARBITRATION_WORDS in local.message:
                arbitrated.append(name)
            if local is not None and not local.ok:
                subgraph, boundary = self._subgraph(name)
                divergence = self._divergence(name, subgraph, boundary, in_model)
                break
        localized = divergence is not None or checks < self.max_local or all(a.ok for a in in_model.values())
        selection = self._judge_selection(in_model) if judge_selection else None
        return VerifyResult(outputs.ok and divergence is None, outputs, capture, len(in_model), first, divergence,
                            checks, localized, self.result, selection, arbitrated)

    # judging before the selections
    def _judge_selection(self, in_model: dict[str, Agreement]) -> SelectionCheck:
        """See :class:`SelectionCheck`. Values are visited in graph order; the first failing one is recorded."""
        found = self.graph.selections()
        post, frontier = found.post, found.frontier
        paired = {self.graph.key(value) for value in self.pairs.values()}
        model_tolerance = self.output_tolerance or _model_tolerance
        check = SelectionCheck(True, dict(collections.Counter(found.decisions)), 0, 0, 0.0, 0.0, 0, 0, 0,
                               sum(1 for key in frontier if key not in paired and key not in self.torch))

        def fail(agreement: Agreement, stage: str) -> SelectionCheck:
            check.ok, check.failure, check.stage = False, agreement, stage
            if stage != "frontier":
                subgraph, boundary = self._subgraph(agreement.value, closed=stage == "selection")
                check.divergence = self._divergence(agreement.value, subgraph, boundary, in_model)
            return check

        for name, agreement in in_model.items():
            key = self.graph.key(self.pairs[name])
            if key in post:
                check.post_selection += 1
                if agreement.ok:
                    continue
                check.local_checks += 1
                local = self._local_check(name, closed=True)
                if local is None:
                    check.tie_broken += 1
                elif not local.ok:
                    return fail(local, "selection")
                else:
                    check.float64_arbitrated += ARBITRATION_WORDS in local.message
                continue
            check.pre_selection += 1
            if not agreement.ok:
                check.local_checks += 1
                local = self._local_check(name)
                if local is not None and not local.ok:
                    return fail(local, "pre-selection")
                check.float64_arbitrated += local is not None and ARBITRATION_WORDS in local.message
            if key in frontier:
                check.frontier += 1
                judged = _agreement(name, self.provenance.value(name), self.expected[name], self.onnx[name],
                                    model_tolerance)
                check.frontier_max_abs = max(check.frontier_max_abs, judged.max_abs)
                check.frontier_max_rel = max(check.frontier_max_rel, judged.max_rel)
                scaled = judged.max_abs / judged.scale if judged.scale else 0.0
                check.frontier_max_scaled = max(check.frontier_max_scaled, scaled)
                if not judged.ok:
                    # Every node up to here agrees on PyTorch's own inputs: rounding grown along the graph (a deep
                    # backbone), which the harness accepts for a model's outputs within ARBITER_AGREEMENT of the scale.
                    if judged.scale and scaled <= ARBITER_AGREEMENT and "max abs error" in judged.message:
                        check.frontier_rounding += 1
                        continue
                    return fail(judged, "frontier")
        return check

    def _arbitrated(self, name: str, local: Agreement, actual: np.ndarray) -> Agreement:
        """A float32 local disagreement re-judged against PyTorch's float64 result of the same node on the same
        inputs (``exporter.numerics.judge_by_float64``, as the harness's arbitration does for a model's outputs): ONNX Runtime's result
        passes when it deviates from float64 at most twice as much as PyTorch's own float32 result (plus atol)."""
        value = self.pairs[name]
        try:
            exact = self.graph.float64_values([value]).get(self.graph.key(value))
        except Exception as error:  # the node does not run in float64 (an op without a double kernel)
            local.message += f"; no float64 arbitration: {type(error).__name__}: {str(error)[:200]}"
            return local
        if exact is None:  # a control-flow op: its bodies are not re-run
            return local
        decision = judge_by_float64([self.expected[name]], [actual], [exact], local.atol)
        arbitrated = Agreement(**{**asdict(local), "origin": local.origin})
        arbitrated.ok = decision.ok
        arbitrated.message = f"{local.message}; {decision.comparison}" if local.message else decision.comparison
        return arbitrated

    def _local_check(self, name: str, closed: bool = False) -> Agreement | None:
        """The local check of ``name`` (see :meth:`_subgraph` for ``closed``, used after a selection, where the
        full run's other values follow ONNX Runtime's own selections). None for top-k/sort indices that order
        exactly equal elements otherwise than PyTorch: the same values picked, an equally right answer."""
        subgraph, boundary = self._subgraph(name, closed=closed)
        local, _, actual = self._run_local(name, subgraph, boundary)
        if actual is not None and not local.ok and self.expected[name].dtype == np.float32:
            local = self._arbitrated(name, local, actual)
        if local.ok or actual is None:
            return local
        ranking = self.graph.ranking(self.pairs[name])
        if ranking is not None and ranking[0] in self.torch and actual.shape == self.expected[name].shape:
            data, dim = self.torch[ranking[0]], ranking[1]
            if data.ndim == actual.ndim:
                try:
                    same = np.array_equal(np.take_along_axis(data, actual, dim),
                                          np.take_along_axis(data, self.expected[name], dim))
                except (IndexError, ValueError):
                    same = False
                if same:
                    return None
        return local

    def _other_types(self, pairs: dict) -> dict[str, int]:
        """Element types of unpaired values ONNX Runtime should also expose (a local subgraph may read them)."""
        inferred = onnx.shape_inference.infer_shapes(self.model, strict_mode=False)
        types = {}
        for info in list(inferred.graph.value_info):
            if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type and info.name not in pairs:
                types[info.name] = info.type.tensor_type.elem_type
        return types

    def _in_model(self, name: str) -> Agreement:
        expected = self.expected[name]
        return _agreement(name, self.provenance.value(name), expected, self.onnx[name], self._tolerance(name))

    # local subgraphs
    def _subgraph(self, name: str, closed: bool = False) -> tuple[list[onnx.NodeProto], list[str]]:
        """The ONNX nodes computing ``name`` from paired values, graph inputs and values of other captured nodes
        (its boundary), in graph order, and that boundary. ``closed``: only paired values and graph inputs bound it
        (values no PyTorch tensor stands for are recomputed, not taken from the full run)."""
        owners = self.graph.owners(self.pairs[name])
        nodes: dict[int, onnx.NodeProto] = {}
        boundary: list[str] = []
        pending = [self.producer[name]]
        while pending:
            node = pending.pop()
            if id(node) in nodes:
                continue
            nodes[id(node)] = node
            for read in free_names(node):
                if not read or read in self.initializers or read in boundary:
                    continue
                producer = self.producer.get(read)
                if producer is None or read in self.pairs:
                    boundary.append(read)  # a graph input, an outer-scope value, or a compared value
                    continue
                from_other = self.provenance.nodes.get(producer.name) not in (None, *owners)
                if (not closed and producer.op_type != "Constant" and (from_other or len(nodes) >= _MAX_SUBGRAPH_NODES)
                        and read in self.onnx):
                    boundary.append(read)
                    continue
                pending.append(producer)
        return sorted(nodes.values(), key=lambda n: self.position[id(n)]), boundary

    def _boundary_value(self, name: str) -> np.ndarray:
        """PyTorch's value of a boundary name where it has one, else ONNX Runtime's (a value no captured tensor
        stands for, such as a shape, taken as computed in the full run)."""
        if name in self.expected:
            return self.expected[name]
        if name in self.feeds:
            return self.feeds[name]
        return self.onnx[name]

    def _local_model(self, name: str, subgraph: list, boundary: list[str]) -> onnx.ModelProto:
        used = {read for node in subgraph for read in free_names(node)}
        inputs = [numpy_helper_value_info(b, self._boundary_value(b)) for b in boundary]
        output = numpy_helper_value_info(name, self.expected[name])
        graph = onnx.helper.make_graph(
            subgraph, "diverging_subgraph", inputs, [output],
            initializer=[t for n, t in self.initializers.items() if n in used])
        local = onnx.helper.make_model(graph, opset_imports=list(self.model.opset_import), ir_version=self.model.ir_version)
        local.functions.extend(self.model.functions)
        return local

    def _run_local(self, name: str, subgraph: list, boundary: list[str]):
        """The local check: ONNX Runtime's result of the subgraph on PyTorch's inputs (agreement, model, result)."""
        local = self._local_model(name, subgraph, boundary)
        feeds = {b: self._boundary_value(b) for b in boundary}
        expected = self.expected[name]
        origin = self.provenance.value(name)
        try:
            actual = make_session(local.SerializeToString(), "cpu").run([name], feeds)[0]
        except Exception as error:  # the subgraph alone fails to load or run: that is a local failure too
            text = f"ONNX Runtime cannot run the subgraph: {type(error).__name__}: {error}"
            return Agreement(name, origin, False, float("nan"), float("nan"), 0.0, 0.0, 0.0, text), local, None
        return _agreement(name, origin, expected, actual, self._tolerance(name)), local, actual

    def _tolerance(self, name: str):
        if self.graph.is_quantized(self.pairs[name]):
            return _one_step
        return _op_tolerance(self.graph.kind(self.pairs[name]), self.expected[name].dtype)

    def _divergence(self, name: str, subgraph: list, boundary: list[str], in_model: dict) -> Divergence:
        from onnx.reference import ReferenceEvaluator

        ort, local, actual = self._run_local(name, subgraph, boundary)
        feeds = {b: self._boundary_value(b) for b in boundary}
        expected, origin = self.expected[name], self.provenance.value(name)
        try:
            results = ReferenceEvaluator(for_reference(local)).run([name], feeds)
            assert isinstance(results, list)  # a dict only with intermediate=True
            computed = np.asarray(results[0])
        except Exception as error:
            repro = Repro(ort, None, "undecided",
                          f"the ONNX reference evaluator cannot run the subgraph: {type(error).__name__}: {error}")
        else:
            ref = _agreement(name, origin, expected, computed, self._tolerance(name))
            both = _agreement(name, origin, computed, actual, self._tolerance(name)) if actual is not None else None
            repro = judge(ort, ref, both)
        if self.repro_dir:
            repro.directory = write_backend_test(self.repro_dir, local, list(feeds.items()), expected)
        producer = self.producer[name]
        return Divergence(
            value=name, node=producer.name, origin=self.provenance.node(producer.name),
            nodes=[(n.name, n.op_type, self.provenance.node(n.name)) for n in subgraph],
            in_model=in_model[name], local=ort,
            inputs=[in_model[b] for b in boundary if b in in_model],
            growth=[in_model[n] for n in self._path_to_output(name)],
            repro=repro,
        )

    def _path_to_output(self, name: str) -> list[str]:
        """Compared values on a shortest path (in the captured graph's uses) from ``name`` to a model output, ``name``
        first."""
        key = self.graph.key
        onnx_of = {key(value): n for n, value in self.pairs.items()}
        start = self.pairs[name]
        previous: dict[Any, Any] = {key(start): None}
        queue = collections.deque([start])
        end = None
        while queue:
            value = queue.popleft()
            if self.graph.is_output(value):
                end = value
                break
            for successor in self.graph.successors(value):
                if key(successor) not in previous:
                    previous[key(successor)] = key(value)
                    queue.append(successor)
        path: list[str] = []
        step = key(end if end is not None else start)
        while step is not None:
            if step in onnx_of:
                path.append(onnx_of[step])
            step = previous[step]
        return path[::-1]
