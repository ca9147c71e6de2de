"""The documentation's tracing-vs-scripting examples, exported with our engine and run in ONNX Runtime.

Sources: torch.onnx docs v1.5 ("Tracing vs Scripting", the FAQ's ImplicitCastType, in-place indexed assignment
and tensor lists) and v1.13 ("Tracing vs Scripting"). Each case is compared with PyTorch on the exported inputs
and, where the example is about dynamic behaviour, on a second input the export never saw.
"""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import exporter
from exporter.errors import UnsupportedOperatorError
from exporter.registry import MAX_OPSET, MIN_OPSET

ALL_OPSETS = list(range(MIN_OPSET, MAX_OPSET + 1))


def _export(model, args, opset, **kwargs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    exporter.export(model, args, buffer, opset_version=opset, **{"dynamo": False, **kwargs})
    return onnx.load_from_string(buffer.getvalue())


def _run(model_proto: onnx.ModelProto, inputs: tuple) -> list[np.ndarray]:
    session = ort.InferenceSession(model_proto.SerializeToString(), providers=["CPUExecutionProvider"])
    # not strict: the export drops inputs the model does not read
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs, strict=False)}
    return session.run(None, feeds)


def _expect_same(model, model_proto, inputs: tuple) -> None:
    with torch.no_grad():
        expected = model(*[t.clone() for t in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    actual = _run(model_proto, inputs)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        want = want.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _op_types(model_proto: onnx.ModelProto) -> set[str]:
    """Op types of the graph and of its subgraphs (loop bodies, branches)."""
    found, graphs = set(), [model_proto.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            found.add(node.op_type)
            graphs.extend(attr.g for attr in node.attribute if attr.type == onnx.AttributeProto.GRAPH)
    return found


# -- Tracing vs Scripting -------------------------------------------------------------------------------------
class LoopModel(torch.nn.Module):
    """Docs v1.5: traced, the loop unrolls for the example's loop count."""

    def forward(self, x, y):
        for i in range(y):
            x = x + i
        return x


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_traced_loop_is_unrolled(opset):
    x, count = torch.ones(2, 3, dtype=torch.long), torch.tensor(5, dtype=torch.long)
    proto = _export(LoopModel(), (x, count), opset)
    assert "Loop" not in _op_types(proto)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    # not strict: the loop count the trace baked in is no input any more
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), (x, count), strict=False)}
    got = session.run(None, feeds)[0]
    np.testing.assert_array_equal(got, LoopModel()(x, count).numpy())


class ScriptedLoopModel(torch.nn.Module):
    """Docs v1.13: a loop whose count comes from an input's size, scripted to keep the loop."""

    def forward(self, x, y):
        for i in range(y.size(0)):
            x = x + i
        return x


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_scripted_loop_exports_onnx_loop(opset):
    model = torch.jit.script(ScriptedLoopModel())
    x = torch.ones(2, 3, dtype=torch.long)
    proto = _export(model, (x, torch.zeros(5)), opset, input_names=["x", "y"], dynamic_axes={"y": {0: "count"}})
    assert "Loop" in _op_types(proto)
    _expect_same(model, proto, (x, torch.zeros(5)))
    _expect_same(model, proto, (x, torch.zeros(9)))  # loop count 9, as the docs verify


@torch.jit.script
def _loop(x, y):
    for i in range(int(y)):
        x = x + i
    return x


class LoopModel2(torch.nn.Module):
    """Docs v1.5: mixing tracing and scripting, a scripted function called from a traced module."""

    def forward(self, x, y):
        return _loop(x, y)


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_scripted_function_inside_traced_module(opset):
    x, count = torch.ones(2, 3, dtype=torch.long), torch.tensor(5, dtype=torch.long)
    proto = _export(LoopModel2(), (x, count), opset, input_names=["input_data", "loop_range"])
    assert "Loop" in _op_types(proto)
    outputs = _run(proto, (x, torch.tensor(9, dtype=torch.long)))
    np.testing.assert_array_equal(outputs[0], LoopModel2()(x, torch.tensor(9)).numpy())  # [[37, 37, 37], ...]


# -- FAQ: implicit scalar casting ------------------------------------------------------------------------------
class ImplicitCastType(torch.jit.ScriptModule):
    @torch.jit.script_method
    def forward(self, x):
        y = x + 2
        return y + 3


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_implicit_cast_type(opset):
    x = torch.tensor([1.0], dtype=torch.float32)
    proto = _export(ImplicitCastType(), x, opset)
    _expect_same(ImplicitCastType(), proto, (x,))


# -- FAQ: in-place indexed assignment --------------------------------------------------------------------------
class InPlaceIndexedAssignment(torch.nn.Module):
    def forward(self, data, new_data):
        data[1] = new_data
        return data


@pytest.mark.parametrize("scripted", [False, True], ids=["traced", "scripted"])
@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_inplace_indexed_assignment(opset, scripted):
    # The docs need opset 11 (ScatterND); a constant row of a known-size dim is a Gather over Concat at any opset.
    model = torch.jit.script(InPlaceIndexedAssignment()) if scripted else InPlaceIndexedAssignment()
    data, new_data = torch.zeros(3, 4), torch.arange(4).to(torch.float32)
    proto = _export(model, (data, new_data), opset)
    _expect_same(model, proto, (torch.zeros(3, 4), new_data))
    _expect_same(model, proto, (torch.randn(3, 4), torch.randn(4)))


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_inplace_assignment_with_dynamic_rows(opset):
    model = torch.jit.script(InPlaceIndexedAssignment())
    proto = _export(model, (torch.zeros(3, 4), torch.arange(4.0)), opset, input_names=["data", "new_data"],
                    dynamic_axes={"data": {0: "rows"}})
    _expect_same(model, proto, (torch.randn(6, 4), torch.randn(4)))


class ReadsAViewAfterItsBaseChanges(torch.nn.Module):
    """Views taken before their base is changed in place, read after it: they share its memory, so they read the new
    values (a view of a view too). The export once read the old ones: a silently wrong cache-write position."""

    def forward(self, x, buffer, rows):
        c = x.clone()
        position = c.reshape(1)
        flipped = c.unsqueeze(0).t()
        c.add_(1)
        written = buffer.index_copy(0, position, rows)
        return written, flipped * 2


@pytest.mark.parametrize("scripted", [False, True], ids=["traced", "scripted"])
@pytest.mark.parametrize("opset", [9, 13, MAX_OPSET])
def test_a_view_taken_before_an_in_place_change_reads_the_new_values(opset, scripted):
    model = torch.jit.script(ReadsAViewAfterItsBaseChanges()) if scripted else ReadsAViewAfterItsBaseChanges()
    args = (torch.tensor(2), torch.zeros(5, 3), torch.ones(1, 3))
    proto = _export(model, args, opset)
    _expect_same(model, proto, args)
    _expect_same(model, proto, (torch.tensor(0), torch.randn(5, 3), torch.randn(1, 3)))


class AssignsIntoATensorItMade(torch.nn.Module):
    """Changes in place tensors it makes from Python data: the trace records those as constants, by reference."""

    def forward(self, x):
        table = torch.tensor([1.0, 2.0, 3.0, 4.0])
        table[1:3] = table[1:3] + 10
        table[0:2].mul_(2)
        offsets = torch.as_tensor([0.5, 0.5, 0.5, 0.5])
        offsets[3] = -1.0
        return x + table + offsets


@pytest.mark.parametrize("opset", [9, 16])
def test_assignment_into_a_tensor_made_from_python_data(opset):
    # The trace's run changed the recorded constants; torch.onnx applies the changes twice ([4, 68, 23, 4]).
    model = AssignsIntoATensorItMade()
    x = torch.randn(4)
    proto = _export(model, (x,), opset)
    _expect_same(model, proto, (x,))
    _expect_same(model, _export(model, (x,), opset), (x,))  # the model itself still makes its tensors afresh


class XorsIntoATensorItMade(torch.nn.Module):
    """``^=`` is in place too, though TorchScript names it like a dunder (``aten::__ixor__``); applied twice, it
    would undo itself."""

    def forward(self, x):
        flags = torch.tensor([1, 0, 1, 0])
        flags ^= torch.tensor([0, 0, 1, 1])
        return x + flags


def test_augmented_bitwise_assignment_into_a_tensor_made_from_python_data():
    model = XorsIntoATensorItMade()
    x = torch.arange(4)
    _expect_same(model, _export(model, (x,), 13), (x,))


class _Doubles(torch.nn.Module):
    def forward(self, x):
        return x * 2


class AssignsIntoATensorItMadeBesideAScriptedPart(AssignsIntoATensorItMade):
    """A scripted submodule: the capture traces through torch.jit.trace, which mirrors the module."""

    def __init__(self):
        super().__init__()
        self.doubles = torch.jit.script(_Doubles())

    def forward(self, x):
        return self.doubles(super().forward(x))


def test_assignment_into_a_tensor_made_from_python_data_beside_a_scripted_submodule():
    model = AssignsIntoATensorItMadeBesideAScriptedPart()
    x = torch.randn(4)
    _expect_same(model, _export(model, (x,), 13), (x,))


def test_the_retrace_keeps_warnings_and_source_lines_at_the_models_own_lines():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _export(AssignsIntoATensorItMade(), (torch.randn(4),), 13)
    tracer = [(str(w.message).split(" results")[0], w.filename) for w in caught
              if issubclass(w.category, torch.jit.TracerWarning)]
    assert sorted(tracer) == [("torch.as_tensor", __file__), ("torch.tensor", __file__)]  # once each, not twice
    buffer = io.BytesIO()
    exporter.export(AssignsIntoATensorItMade(), (torch.randn(4),), buffer, opset_version=13, verbose=True, dynamo=False)
    lines = {node.doc_string for node in onnx.load_from_string(buffer.getvalue()).graph.node}
    assert lines and all(line.startswith(f"{__file__}(") for line in lines), lines  # not the mode's frame


class AssignsThroughAsTensor(torch.nn.Module):
    """``torch.as_tensor`` of a tensor is that tensor: the assignment changes the input, as it does in PyTorch."""

    def forward(self, x):
        alias = torch.as_tensor(x)
        alias[0] = 5.0
        return x * 2


def test_as_tensor_of_a_tensor_still_aliases_it():
    model = AssignsThroughAsTensor()
    proto = _export(model, (torch.zeros(3),), 13)
    _expect_same(model, proto, (torch.randn(3),))


class CountsItsCalls(torch.nn.Module):
    """Changes its state in place on every call: a buffer it accumulates into, a plain tensor attribute it writes
    into, and a counter it returns. The export is one call from the state the model has when exported."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(4))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.table = torch.tensor([1.0, 2.0, 3.0, 4.0])

    def forward(self, x):
        self.total += x
        self.table[1:3] += 10
        self.calls += 1
        return self.total * 2 + self.table, self.calls


def _state(model: torch.nn.Module) -> dict[str, list]:
    return {name: value.tolist() for name, value in {**dict(model.named_buffers()), "table": model.table}.items()}


@pytest.mark.parametrize("scripted", [False, True], ids=["traced", "scripted"])
def test_a_model_that_changes_its_state_in_place_exports_one_call_from_its_state_and_is_left_unchanged(scripted):
    # The run that captures the model changed its state; torch.onnx exports the changed state and applies the change
    # again (the table's [1, 22, 23, 4] where one call gives [1, 12, 13, 4]) and leaves the model changed.
    make = (lambda: torch.jit.script(CountsItsCalls())) if scripted else CountsItsCalls
    model, x = make(), torch.randn(4)
    before = _state(model)
    proto = _export(model, (x,), 13)
    assert _state(model) == before
    _expect_same(make(), proto, (x,))
    _expect_same(make(), proto, (torch.randn(4),))


class AddsIntoItsArgument(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2, x


@pytest.mark.parametrize("scripted", [False, True], ids=["traced", "scripted"])
def test_an_argument_the_forward_changes_in_place_is_left_as_the_caller_gave_it(scripted):
    model = torch.jit.script(AddsIntoItsArgument()) if scripted else AddsIntoItsArgument()
    x = torch.randn(3)
    given = x.clone()
    proto = _export(model, (x,), 13)
    assert torch.equal(x, given)  # torch.onnx leaves it changed
    _expect_same(model, proto, (x,))


class SetsItsArgument(torch.nn.Module):
    def forward(self, x, y):
        return x.set_(y) * 2  # x takes y's storage and shape


def test_an_argument_the_forward_resizes_in_place_gets_its_shape_and_values_back():
    x, y = torch.randn(2, 3), torch.randn(4, 6)
    given = x.clone()
    proto = _export(SetsItsArgument(), (x, y), 13)
    assert x.shape == given.shape and torch.equal(x, given)
    np.testing.assert_allclose(_run(proto, (y,))[0], (y * 2).numpy())  # x is not read: no input of the export


def test_a_training_export_leaves_batchnorm_running_statistics_as_they_were():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    before = {name: value.clone() for name, value in model.named_buffers()}
    _export(model, (torch.randn(2, 3, 8, 8),), 14, training=exporter.TrainingMode.TRAINING)
    for name, value in model.named_buffers():
        assert torch.equal(value, before[name]), name


class SliceAssignment(torch.nn.Module):
    def forward(self, data, block):
        data[:, 1:3] = block
        data[0, ::2] = 7.0
        return data * 2


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_slice_assignment_traced(opset):
    model = SliceAssignment()
    proto = _export(model, (torch.zeros(3, 5), torch.ones(3, 2)), opset)
    _expect_same(model, proto, (torch.randn(3, 5), torch.randn(3, 2)))


class LoopAssignment(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        for i in range(x.size(0)):
            out[i] = x[i] * i
        return out


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_assignment_inside_scripted_loop(opset):
    model = torch.jit.script(LoopAssignment())
    x = torch.randn(4, 3)
    proto = _export(model, (x,), opset)
    _expect_same(model, proto, (x,))


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_assignment_inside_scripted_loop_dynamic(opset):
    model = torch.jit.script(LoopAssignment())

    def export():
        return _export(model, (torch.randn(4, 3),), opset, input_names=["x"], dynamic_axes={"x": {0: "n"}})

    if opset < 10:
        # The written row is the loop index and the row count is unknown: cutting the tensor around a run-time
        # position needs Slice with input bounds (opset 10).
        with pytest.raises(UnsupportedOperatorError, match="needs opset >= 10"):
            export()
        return
    proto = export()
    _expect_same(model, proto, (torch.randn(6, 3),))


# -- FAQ: tensor lists -----------------------------------------------------------------------------------------
class ListLoopModel(torch.nn.Module):
    """Docs v1.5 (``res = res.append(...)`` there is a typo; ``append`` returns None in TorchScript)."""

    def forward(self, x):
        res = []
        res1 = []
        arr = x.split(2, 0)
        res2 = torch.zeros(3, 4, dtype=torch.long)
        for i in range(len(arr)):
            res.append(arr[i].sum(0, False))
            res1.append(arr[-1 - i].sum(0, False))
            res2 += 1
        return torch.stack(res), torch.stack(res1), res2


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_list_built_in_loop(opset):
    """The docs' example (v1.5, opset 11). Loop-11 carries tensors only (sequence types joined Loop's carried values
    at Loop-13): below 13 the appended-then-stacked lists are the Loop's scan outputs."""
    model = torch.jit.script(ListLoopModel())
    inputs = torch.randn(16)
    proto = _export(model, (inputs,), opset)
    sequence_ops = {"SequenceInsert", "ConcatFromSequence"}
    if opset < 13:
        assert "Loop" in _op_types(proto) and not sequence_ops & _op_types(proto)
    else:
        assert {"Loop"} | sequence_ops <= _op_types(proto)
    _expect_same(model, proto, (inputs,))


class AppendThenStack(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        rows = []
        for i in range(x.size(0)):
            rows.append(x[i] * i)
        return torch.stack(rows, self.dim)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_appended_list_stacked_after_the_loop_is_a_scan_output_at_opset_11(dim):
    model = torch.jit.script(AppendThenStack(dim))
    proto = _export(model, (torch.randn(4, 3),), 11, input_names=["x"], dynamic_axes={"x": [0]})
    loop = next(n for n in proto.graph.node if n.op_type == "Loop")
    assert len(loop.input) == 2 and len(loop.output) == 1  # nothing carried: one scan output
    x = torch.randn(6, 3)
    np.testing.assert_allclose(_run(proto, (x,))[0], model(x).numpy(), rtol=1e-6)


def test_a_scripted_int_argument_where_a_constant_is_needed_is_a_clear_error():
    class StackOn(torch.nn.Module):
        def forward(self, x, dim: int):
            return torch.stack([x, x], dim)

    with pytest.raises(exporter.errors.SymbolicValueError, match="aten::stack: .*must be known at export time"):
        _export(torch.jit.script(StackOn()), (torch.randn(2), 0), 14)


class AppendedListAlsoMeasured(torch.nn.Module):
    def forward(self, x):
        rows = []
        for i in range(x.size(0)):
            rows.append(x[i])
        return torch.stack(rows), len(rows)


def test_a_list_read_other_than_by_stack_is_a_split_scan_output_at_opset_11():
    """Loop-11 carries no sequences: a list the loop grows by one append per iteration is its scan output, split back
    into a sequence after it (SplitToSequence) where something other than stack reads the list, here len(), when the
    items' shape is known. The trip count is computed at run time; a static one unrolls the loop
    (tests/engine/test_script_modules.py)."""
    model = torch.jit.script(AppendedListAlsoMeasured())
    proto = _export(model, (torch.randn(4, 3),), 11, input_names=["x"], dynamic_axes={"x": [0]})
    assert {"Loop", "SplitToSequence", "SequenceLength"} <= _op_types(proto)
    for rows in (6, 1):
        x = torch.randn(rows, 3)
        stacked, count = _run(proto, (x,))
        np.testing.assert_array_equal(stacked, x.numpy())
        assert count == rows
    x = torch.randn(4, 3)
    stacked, count = _run(_export(model, (x,), 11), (x,))
    np.testing.assert_array_equal(stacked, x.numpy())
    assert count == 4


class AppendedGrowingPrefixes(torch.nn.Module):
    def forward(self, x):
        rows = []
        for i in range(x.size(0)):
            rows.append(x[: i + 1])
        return rows


def test_a_list_of_items_that_may_differ_in_shape_needs_opset_13():
    """A scan output needs every item of one shape, which a list of growing prefixes is not: opset 13 (Loop carrying
    the sequence) is named, and there the list comes out right."""
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 13"):
        _export(torch.jit.script(AppendedGrowingPrefixes()), (torch.randn(4, 3),), 11, input_names=["x"],
                dynamic_axes={"x": [0]})
    model = torch.jit.script(AppendedGrowingPrefixes())
    proto = _export(model, (torch.randn(4, 3),), 13, input_names=["x"], dynamic_axes={"x": [0]})
    x = torch.randn(5, 3)
    (items,) = _run(proto, (x,))
    assert len(items) == 5
    for got, want in zip(items, model(x), strict=True):
        np.testing.assert_array_equal(got, want.numpy())


# -- control flow beyond the docs ------------------------------------------------------------------------------
class DataDependentIf(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            y = x * 2
        else:
            y = x - 1
        return y


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_data_dependent_if(opset):
    model = torch.jit.script(DataDependentIf())
    proto = _export(model, (torch.ones(2, 3),), opset)
    assert "If" in _op_types(proto)
    _expect_same(model, proto, (torch.ones(2, 3),))
    _expect_same(model, proto, (-torch.ones(2, 3),))


class RankDependentIf(torch.nn.Module):
    def forward(self, x):
        if x.dim() == 2:
            return x + 1
        return x - 1


@pytest.mark.parametrize("opset", [7, 16])
def test_if_known_at_export_keeps_only_the_taken_branch(opset):
    model = torch.jit.script(RankDependentIf())
    proto = _export(model, (torch.ones(2, 3),), opset)
    assert "If" not in _op_types(proto)
    _expect_same(model, proto, (torch.randn(2, 3),))


class WhileLoop(torch.nn.Module):
    def forward(self, x):
        steps = 0
        while bool(x.sum() < 100.0) and steps < 50:
            x = x * 2
            steps += 1
        return x, torch.tensor(steps)


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_while_loop(opset):
    model = torch.jit.script(WhileLoop())
    proto = _export(model, (torch.ones(3),), opset)
    assert "Loop" in _op_types(proto)
    _expect_same(model, proto, (torch.ones(3),))
    _expect_same(model, proto, (torch.full((3,), 7.0),))


class NumberArithmetic(torch.nn.Module):
    def forward(self, x):
        n = x.size(0)
        half = n // 2
        total = 0
        for i in range(1, n, 2):
            total += min(i, half) * 3 - max(i - 4, 0)
        if x is None:
            total = -1
        return x * total


@pytest.mark.parametrize("opset", ALL_OPSETS)
def test_number_arithmetic_in_scripted_loop(opset):
    model = torch.jit.script(NumberArithmetic())
    proto = _export(model, (torch.ones(7),), opset, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    _expect_same(model, proto, (torch.ones(7),))
    _expect_same(model, proto, (torch.ones(12),))


# -- list item assignment and scalar arguments ----------------------------------------------------------------
class ListItemAssignment(torch.nn.Module):
    def forward(self, x, n):
        items = [x, x * 2, x * 3]
        items[1] = x + 10
        items[int(n)] = x - 5
        return torch.stack(items)


@pytest.mark.parametrize("opset", [10, 11, 13, 16])
def test_list_item_assignment_at_run_time_position(opset):
    model = torch.jit.script(ListItemAssignment())
    x = torch.randn(3, 4)
    if opset < 11:
        with pytest.raises(UnsupportedOperatorError, match="needs opset >= 11"):
            _export(model, (x, torch.tensor(-1)), opset)
        return
    proto = _export(model, (x, torch.tensor(-1)), opset)
    assert {"SequenceErase", "SequenceInsert"} <= _op_types(proto)
    for position in (-3, -1, 0, 2):
        _expect_same(model, proto, (x, torch.tensor(position)))


class ScalarArgument(torch.nn.Module):
    def forward(self, x, scale: int):
        items = [x, x]
        items[scale % 2] = x * scale
        return torch.cat(items)


@pytest.mark.parametrize("opset", [11, 14])
def test_scalar_argument_of_a_script_module_is_an_int64_input(opset):
    """A scripted model's int argument stays a graph input (0-d int64), as torch.onnx keeps it."""
    model = torch.jit.script(ScalarArgument())
    x = torch.randn(2, 3)
    proto = _export(model, (x, 3), opset)
    initializers = {init.name for init in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in initializers]
    assert [i.type.tensor_type.elem_type for i in inputs] == [onnx.TensorProto.FLOAT, onnx.TensorProto.INT64]
    for scale in (3, 4):
        actual = _run(proto, (x, torch.tensor(scale)))
        np.testing.assert_allclose(actual[0], model(x, scale).numpy(), rtol=1e-6)


@torch.jit.script
def _upsampled_rows(x):
    rows = torch.zeros(0, 4, 4)
    for i in range(x.size(0)):
        # Scripted F.interpolate tests its mode with `in`: aten::__contains__ on constants, folded at export.
        row = torch.nn.functional.interpolate(x[i][None, None], size=(4, 4), mode="bilinear", align_corners=False)
        rows = torch.cat((rows, row[0]))
    return rows


class PasteMasksLike(torch.nn.Module):
    """torchvision's Mask R-CNN when traced: a scripted loop grows a tensor from an empty start, then is indexed."""

    def forward(self, x):
        return _upsampled_rows(x)[:, None] * 2


@pytest.mark.parametrize("opset", [11, 16])
def test_scripted_loop_growing_a_tensor_keeps_its_rank(opset):
    x = torch.rand(3, 2, 2)
    proto = _export(PasteMasksLike(), (x,), opset, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert "Loop" in _op_types(proto)
    _expect_same(PasteMasksLike(), proto, (torch.rand(5, 2, 2),))


# -- list arguments of a scripted model ------------------------------------------------------------------------
class _ListArguments(torch.nn.Module):
    def forward(self, a, xs: list[torch.Tensor], k: int, sizes: list[int]):
        return torch.nn.functional.pad(a + xs[0] * xs[1] + k, sizes)


@pytest.mark.parametrize("opset", [11, 16])
def test_scripted_list_arguments_are_one_sequence_input_each(opset):
    """As in PyTorch's exporter, a scripted list argument is one graph input, an ONNX sequence (of 0-d int64 tensors
    for a list[int]), fed as a list: the list may have another length at run time (here 3 tensors, 4 pad sizes)."""
    model = torch.jit.script(_ListArguments())
    args = (torch.randn(2, 3), [torch.randn(2, 3), torch.randn(2, 3)], 4, [1, 2])
    proto = _export(model, args, opset)
    assert [i.name for i in proto.graph.input] == ["a", "xs", "k", "sizes"]
    assert [i.type.WhichOneof("value") for i in proto.graph.input] == [
        "tensor_type", "sequence_type", "tensor_type", "sequence_type"]
    assert proto.graph.input[3].type.sequence_type.elem_type.tensor_type.elem_type == onnx.TensorProto.INT64
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    xs = [torch.randn(2, 3) for _ in range(3)]
    for sizes in ([0, 3], [1, 0, 2, 1]):
        feeds = {"a": args[0].numpy(), "xs": [x.numpy() for x in xs], "k": np.array(4),
                 "sizes": [np.array(s) for s in sizes]}
        expected = model(args[0], xs, 4, sizes).numpy()
        got = session.run(None, feeds)[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_scripted_list_arguments_below_opset_11_are_one_input_per_element():
    """Below opset 11 ONNX has no sequences: a scripted list argument is flattened into one graph input per element,
    each bound to its own element (the list's length is the example's)."""
    class Scaled(torch.nn.Module):
        def forward(self, a, xs: list[torch.Tensor], k: int):
            return a + xs[0] * xs[1] + k

    model = torch.jit.script(Scaled())
    args = (torch.randn(2, 3), [torch.randn(2, 3), torch.randn(2, 3)], 4)
    proto = _export(model, args, 10)
    assert [i.name for i in proto.graph.input] == ["a", "xs_0", "xs_1", "k"]
    xs = [torch.randn(2, 3), torch.randn(2, 3)]
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"a": args[0].numpy(), "xs_0": xs[0].numpy(), "xs_1": xs[1].numpy(), "k": np.array(3)})[0]
    np.testing.assert_allclose(got, model(args[0], xs, 3).numpy(), rtol=1e-6)


def test_scripted_padding_list_below_opset_11_pads_by_gather_and_concat():
    """Pad takes its sizes as an input from opset 11; at 9-10 a list of run-time sizes (one 0-d input each) pads by
    the kept positions gathered and blocks of zeros concatenated, negative sizes cropping; below 9 the error names 9."""
    model = torch.jit.script(_ListArguments())
    args = (torch.randn(2, 3), [torch.randn(2, 3), torch.randn(2, 3)], 4, [1, 2])
    with pytest.raises(UnsupportedOperatorError, match="The sizes of the padding must be constant.*needs opset >= 9"):
        _export(model, args, 8)
    proto = _export(model, args, 10)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    a, xs = torch.randn(2, 3), [torch.randn(2, 3), torch.randn(2, 3)]
    for sizes in ([1, 2], [0, 3], [-1, 2], [2, -2]):
        feeds = {"a": a.numpy(), "xs_0": xs[0].numpy(), "xs_1": xs[1].numpy(), "k": np.array(4),
                 "sizes_0": np.array(sizes[0]), "sizes_1": np.array(sizes[1])}
        np.testing.assert_allclose(session.run(None, feeds)[0], model(a, xs, 4, sizes).numpy(), rtol=1e-6)
