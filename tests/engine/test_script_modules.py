"""Scripted modules as PyTorch's exporter takes them: attributes assigned in forward, library modules (nn.LSTM,
nn.GRU) whose scripted code guards its inputs and holds its weights in a list, window functions of run-time length.
Each export runs in ONNX Runtime and is compared with PyTorch."""

from __future__ import annotations

import copy
import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import exporter


def _export(model, args, opset, **kwargs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    exporter.export(model, args, buffer, opset_version=opset, **{"dynamo": False, **kwargs})
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _run(proto: onnx.ModelProto, feeds: list) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    # not strict: the export drops inputs the model does not read
    return session.run(None, {i.name: np.asarray(v) for i, v in zip(session.get_inputs(), feeds, strict=False)})


def _flat(result) -> list[np.ndarray]:
    if isinstance(result, (tuple, list)):
        return [array for item in result for array in _flat(item)]
    return [result.detach().numpy()]


def _expect(actual: list, expected: list, rtol=1e-5, atol=1e-6) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -- attributes assigned in forward ---------------------------------------------------------------------------
class AssignsInLoops(torch.nn.Module):
    """Reads an attribute before assigning it (its export-time value counts), assigns in a loop, a branch inside
    the loop, a submodule's parameter and an int attribute."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.offset = torch.full((4,), 0.5)
        self.steps = 0

    def forward(self, x):
        total = x + self.offset
        self.steps = 2
        for i in range(3):
            self.offset = self.offset * 2.0
            if i == 1:
                self.linear.bias = self.linear.bias + self.offset
        for _ in range(self.steps):
            total = self.linear(total)
        return total, self.offset


@pytest.mark.parametrize("opset", [9, 11, 14, 16])
def test_attributes_assigned_in_forward_start_from_their_values_at_export_time(opset):
    model = torch.jit.script(AssignsInLoops())
    x = torch.randn(2, 4)
    reference = copy.deepcopy(model)
    with torch.no_grad():
        expected = _flat(reference(x))
    proto = _export(model, (x,), opset)
    _expect(_run(proto, [x.numpy()]), expected)


class AssignsInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.window_length = 0

    def forward(self, x, window_length: int):
        self.window_length = window_length
        return x + torch.hann_window(self.window_length, periodic=False, dtype=torch.float)


@pytest.mark.parametrize("opset", [9, 11, 16])
def test_hann_window_of_run_time_length(opset):
    """The length is a graph input: the window follows it, length 1 included (torch gives [1.])."""
    model = torch.jit.script(AssignsInput())
    proto = _export(model, (torch.randn(6), 6), opset, input_names=["x", "n"], dynamic_axes={"x": [0]})
    for length in (6, 9, 1):
        x = torch.randn(length)
        with torch.no_grad():
            expected = _flat(model(x, length))
        _expect(_run(proto, [x.numpy(), np.array(length, dtype=np.int64)]), expected)


class Periodic(torch.nn.Module):
    def forward(self, x, n: int):
        return x * torch.hann_window(n, dtype=torch.float64)


def test_periodic_hann_window_in_double():
    model = torch.jit.script(Periodic())
    proto = _export(model, (torch.randn(7, dtype=torch.float64), 7), 11, input_names=["x", "n"],
                    dynamic_axes={"x": [0]})
    x = torch.randn(12, dtype=torch.float64)
    _expect(_run(proto, [x.numpy(), np.array(12, dtype=np.int64)]), _flat(model(x, 12)), rtol=1e-12, atol=1e-12)


# -- scripted recurrent library modules ----------------------------------------------------------------------
# One class per kind: TorchScript resolves ``isinstance(self.rnn, torch.nn.LSTM)`` only once it has compiled an
# nn.LSTM in the process, so a shared class failed alone, or first in an xdist worker, for GRU.
class _Recurrent(torch.nn.Module):
    def __init__(self, kind, with_state):
        super().__init__()
        self.with_state = with_state
        self.rnn = getattr(torch.nn, kind)(3, 5, num_layers=2, bidirectional=True)


class RecurrentLSTM(_Recurrent):
    def forward(self, x, h0, c0):
        if self.with_state:
            return self.rnn(x, (h0, c0))
        return self.rnn(x)


class RecurrentGRU(_Recurrent):
    def forward(self, x, h0, c0):
        if self.with_state:
            return self.rnn(x, h0)
        return self.rnn(x)


@pytest.mark.parametrize("opset", [9, 14])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("with_state", [True, False])
def test_scripted_recurrent_modules(kind, with_state, opset):
    """nn.LSTM's scripted forward checks its inputs with raises, keeps an optional state tuple and reads its
    weights from a list attribute; the export keeps the computation and names the weights after the state_dict."""
    torch.manual_seed(0)
    model = torch.jit.script({"LSTM": RecurrentLSTM, "GRU": RecurrentGRU}[kind](kind, with_state).eval())
    x, h0, c0 = torch.randn(7, 2, 3), torch.randn(4, 2, 5), torch.randn(4, 2, 5)
    with torch.no_grad():
        expected = _flat(model(x, h0, c0))
    proto = _export(model, (x, h0, c0), opset)
    names = {init.name for init in proto.graph.initializer}
    assert "rnn.weight_ih_l0" in names or any(n.startswith("onnx::") for n in names) or not names
    feeds = [x.numpy()] + ([h0.numpy()] + ([c0.numpy()] if kind == "LSTM" else []) if with_state else [])
    _expect(_run(proto, feeds), expected, rtol=1e-4, atol=1e-5)


# -- exception branches ---------------------------------------------------------------------------------------
@torch.jit.script
def guarded(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if "rank " + str(x.dim()) != "rank 2":  # a check ONNX cannot compute (strings), guarding a raise
        raise ValueError("expected a matrix")
    if x.size() == y.size():
        z = x + y
    else:
        raise RuntimeError("sizes differ")
    return z * 2


@pytest.mark.parametrize("opset", [7, 11, 16])
def test_branches_that_raise_are_dropped(opset):
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    proto = _export(guarded, (x, y), opset)
    assert {node.op_type for node in proto.graph.node} <= {"Add", "Mul", "Constant"}
    _expect(_run(proto, [x.numpy(), y.numpy()]), _flat(guarded(x, y)))


class TracedAroundScripted(torch.nn.Module):
    """A traced model calling scripted code: a scripted LSTM, whose code tests its optional state for None (the
    capture resolves such tests before lowering tuples), and a scripted function with raising branches only."""

    def __init__(self):
        super().__init__()
        self.recurrent = torch.jit.script(RecurrentLSTM("LSTM", with_state=False))

    def forward(self, x, y):
        sequence = guarded(x, y).unsqueeze(1)
        output, _ = self.recurrent(sequence, sequence, sequence)
        return output


@pytest.mark.parametrize("opset", [9, 14])
def test_a_traced_model_calling_scripted_code(opset):
    torch.manual_seed(0)
    model, x, y = TracedAroundScripted().eval(), torch.randn(5, 3), torch.randn(5, 3)
    proto = _export(model, (x, y), opset)
    with torch.no_grad():
        _expect(_run(proto, [x.numpy(), y.numpy()]), _flat(model(x, y)), rtol=1e-4, atol=1e-5)


# -- lists of ints and norm layers at low opsets --------------------------------------------------------------
class IntListAtRunTimePosition(torch.nn.Module):
    def forward(self, x, i: int):
        size = x.size()
        sizes = [size[0], 7, size[1]]
        return x * sizes[i] + sizes[i - 1]


@pytest.mark.parametrize("opset", [9, 11, 14])
def test_int_list_at_a_run_time_position_is_a_gather(opset):
    """Below opset 11 there are no sequences: a list of ints is a 1-d tensor, read with Gather (negative positions
    count from the end)."""
    model = torch.jit.script(IntListAtRunTimePosition())
    proto = _export(model, (torch.randn(2, 3), 1), opset, input_names=["x", "i"], dynamic_axes={"x": [0, 1]})
    for i in (0, 1, 2, -1):
        x = torch.randn(4, 5)
        _expect(_run(proto, [x.numpy(), np.array(i, dtype=np.int64)]), _flat(model(x, i)))


@pytest.mark.parametrize("opset", [9, 14])
@pytest.mark.parametrize("layer", ["InstanceNorm1d", "BatchNorm1d", "GroupNorm"])
def test_scripted_norm_layers_at_low_opsets(layer, opset):
    """Their scripted code checks the batch size in a loop over the size list, then raises: the check goes away
    with its raise (opset 9 has no sequences to run that loop)."""
    module = torch.nn.GroupNorm(1, 3) if layer == "GroupNorm" else getattr(torch.nn, layer)(3, track_running_stats=False)
    model = torch.jit.script(module.eval())
    x = torch.randn(2, 3, 5)
    proto = _export(model, (x,), opset)
    _expect(_run(proto, [x.numpy()]), _flat(model(x)), rtol=1e-4, atol=1e-5)


def test_scripted_batch_norm_in_training_mode_has_typed_outputs():
    """BatchNormalization-14 in training mode has three outputs; the model's output is typed from its input."""
    torch.manual_seed(0)
    model = torch.jit.script(torch.nn.Sequential(torch.nn.BatchNorm2d(3), torch.nn.Conv2d(3, 2, 3)))
    x = torch.randn(4, 3, 6, 6)
    reference = copy.deepcopy(model).train()
    proto = _export(model, (x,), 14, training=exporter.TrainingMode.TRAINING)
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    with torch.no_grad():
        expected = _flat(reference(x))
    _expect(_run(proto, [x.numpy()]), expected, rtol=1e-4, atol=1e-5)


# -- lists carried through loops before Loop-13 -----------------------------------------------------------------
class GrowsAList(torch.nn.Module):
    def forward(self, x, y):
        res = []
        for i in range(x.size(0)):
            res.append(torch.matmul(x[i], y))
            if i == 1:
                res[0] = res[0] * 2
        del res[1]
        return res


@pytest.mark.parametrize("opset", [11, 12, 14])
def test_loop_carrying_a_list_with_a_static_trip_count(opset):
    """Loop-11 carries tensors only: a loop of a trip count known at export time that carries a list is unrolled
    (from opset 13 the Loop carries the sequence; at 13 itself an If returning an unchanged list needs an Identity of a
    sequence, which ONNX has from 14 only)."""
    model = torch.jit.script(GrowsAList())
    x, y = torch.randn(4, 3, 4), torch.randn(4, 5)
    proto = _export(model, (x, y), opset)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, {i.name: v.numpy() for i, v in zip(session.get_inputs(), (x, y), strict=True)})
    _expect(got, _flat(model(x, y)))


def test_loop_carrying_a_list_with_a_run_time_trip_count_needs_opset_13():
    model = torch.jit.script(GrowsAList())
    with pytest.raises(exporter.errors.UnsupportedOperatorError, match="needs opset >= 13"):
        _export(model, (torch.randn(4, 3, 4), torch.randn(4, 5)), 11, input_names=["x", "y"],
                dynamic_axes={"x": [0]})


# -- scripted Python-level operations -------------------------------------------------------------------------
class ItemAndPrint(torch.nn.Module):
    def forward(self, x, y, i: int):
        first = x[:, 0]
        print(f"first column: {first}")  # dropped: a side effect only
        _unused: list[float] = first.tolist()
        position = int(y[i].item())
        if x.device != torch.device("cpu"):  # an ONNX model has no device: all devices are equal
            return first
        return first * position + x.data.sum()


@pytest.mark.parametrize("opset", [9, 14])
def test_item_print_device_and_data(opset):
    model = torch.jit.script(ItemAndPrint())
    x, y = torch.randn(3, 4), torch.tensor([0, 5, 2, 7])
    proto = _export(model, (x, y, 1), opset, input_names=["x", "y", "i"])
    for i in (1, 3):
        _expect(_run(proto, [x.numpy(), y.numpy(), np.array(i, dtype=np.int64)]), _flat(model(x, y, i)))


class ToList(torch.nn.Module):
    def forward(self, x):
        values: list[int] = (x * 2).tolist()
        return values


def test_tolist_of_a_1d_tensor_is_the_tensor():
    model = torch.jit.script(ToList())
    x = torch.tensor([3, 1, 4])
    (got,) = _run(_export(model, (x,), 14), [x.numpy()])
    np.testing.assert_array_equal(got, np.array(model(x)))


# -- results a raising or returning branch never sets (prim::Uninitialized) ----------------------------------------
class TupleOrRaise(torch.nn.Module):
    def forward(self, t):
        if float(t.sum()) < -100:
            raise Exception("too negative")
        else:
            return t * 2, torch.zeros(5)


@pytest.mark.parametrize("opset", [9, 11, 16])
def test_if_with_a_raising_branch_returning_a_tuple(opset):
    """The raising branch's two placeholders take the other branch's types and shapes (If-1 needs the same
    shapes); the condition keeps the input."""
    model = torch.jit.script(TupleOrRaise())
    x = torch.randn(3)
    proto = _export(model, (x,), opset)
    assert len(proto.graph.input) == 1
    _expect(_run(proto, [x.numpy()]), _flat(model(x)))


class EarlyReturnInt(torch.nn.Module):
    def forward(self, y):
        if y.shape[1] < 5:
            if y.size(0) == 1:
                y = y + 4
            else:
                return y
        return y


class EarlyReturnList(torch.nn.Module):
    def forward(self, x):
        y = [x[i] * 2 for i in range(x.size(0))]
        if x.size(1) < 5:
            if x.size(0) == 3:
                y.append(x[0])
            else:
                return y
        return y


@pytest.mark.parametrize("opset", [11, 14, 16])
def test_early_return_keeps_the_int32_type(opset):
    """Scripted graphs record no dtypes: the placeholder of the early return takes the int32 of the other branch
    (it was float32, and the output with it)."""
    model = torch.jit.script(EarlyReturnInt())
    proto = _export(model, (torch.ones(3, 4, dtype=torch.int32),), opset, input_names=["y"],
                    dynamic_axes={"y": [0, 1]})
    for shape in ((3, 4), (1, 4), (6, 7)):
        y = torch.ones(shape, dtype=torch.int32)
        _expect(_run(proto, [y.numpy()]), _flat(model(y)))


@pytest.mark.parametrize("opset", [14, 16])
def test_early_return_of_a_list(opset):
    model = torch.jit.script(EarlyReturnList())
    proto = _export(model, (torch.randn(3, 4),), opset, input_names=["x"], dynamic_axes={"x": [0, 1]})
    for shape in ((3, 4), (2, 4), (3, 6)):
        x = torch.randn(shape)
        (got,) = _run(proto, [x.numpy()])
        _expect(list(got), _flat(model(x)))


# -- element types of scripted arithmetic ----------------------------------------------------------------------
class TensorOfNumbers(torch.nn.Module):
    def forward(self, x):
        return torch.tensor([float(x[0]), x.size(0) * 0.5]), torch.tensor(x.size(0)), torch.tensor([x.size(0), 2])


@pytest.mark.parametrize("opset", [9, 14])
def test_torch_tensor_of_scripted_numbers_infers_the_type_torch_does(opset):
    """Floats give the default float type (they went through int64 and were truncated: [0.7] became [0]); ints
    int64."""
    model = torch.jit.script(TensorOfNumbers())
    x = torch.tensor([0.7, 2.0, 3.0])
    proto = _export(model, (x,), opset, input_names=["x"], dynamic_axes={"x": [0]})
    _expect(_run(proto, [x.numpy()]), _flat(model(x)))


class InPlaceHalf(torch.nn.Module):
    def forward(self, x, y):
        return x.add_(y), x.mul_(y)


@pytest.mark.parametrize("scripted", [False, True])
def test_in_place_arithmetic_keeps_the_type_of_self(scripted):
    """half.add_(float) is half (the functional add promotes to float)."""
    model = torch.jit.script(InPlaceHalf()) if scripted else InPlaceHalf()
    x, y = torch.randn(2, 3, dtype=torch.half), torch.randn(2, 3)
    proto = _export(model, (x.clone(), y), 14)
    assert [o.type.tensor_type.elem_type for o in proto.graph.output] == [onnx.TensorProto.FLOAT16] * 2
    got = _run(proto, [x.numpy(), y.numpy()])
    expected = _flat(model(x.clone(), y))
    _expect(got, expected, rtol=1e-2, atol=1e-2)


class ConcatenatedInLoop(torch.nn.Module):
    def forward(self, x):
        outputs = []
        for i in range(x.size(0)):
            outputs += [x[i] * i]
        return torch.stack(outputs).transpose(0, 1)


@pytest.mark.parametrize("opset", [11, 12])
def test_list_grown_by_plus_equals_then_stacked_is_a_scan_output(opset):
    """``lst += [x]`` grows a list like ``lst.append(x)``: at opsets 11-12 the stacked list is the Loop's scan
    output, also when the trip count is only known at run time (Loop-1 needs a carried value besides)."""
    model = torch.jit.script(ConcatenatedInLoop())
    proto = _export(model, (torch.randn(3, 4),), opset, input_names=["x"], dynamic_axes={"x": [0]})
    assert "Loop" in {node.op_type for node in proto.graph.node}
    for rows in (3, 5):
        x = torch.randn(rows, 4)
        _expect(_run(proto, [x.numpy()]), _flat(model(x)))


class ZerosOfASliceOfTheShape(torch.nn.Module):
    def forward(self, x):
        return x.new_zeros(x.shape[1 : x.size(2)])


@pytest.mark.parametrize("opset", [11, 14])
def test_new_zeros_of_a_shape_slice_of_run_time_length(opset):
    """The size list is a slice of the shape whose end is computed at run time: its length, the result's rank, is
    unknown (it failed with a TypeError)."""
    model = torch.jit.script(ZerosOfASliceOfTheShape())
    proto = _export(model, (torch.rand(1, 2, 3, 4),), opset, input_names=["x"], dynamic_axes={"x": [0, 1, 2, 3]})
    for shape in ((1, 2, 3, 4), (2, 3, 4, 5)):
        x = torch.rand(shape)
        _expect(_run(proto, [x.numpy()]), _flat(model(x)))


# -- keyword arguments and defaults of scripted models ----------------------------------------------------------
class WithDefaults(torch.nn.Module):
    # The tensor default is what this case exports (read once, at scripting), not a shared mutable default.
    def forward(self, x, scale: torch.Tensor | None = None, shift: torch.Tensor = torch.ones(2, 3)):  # noqa: B008
        if scale is not None:
            x = x * scale
        return x + shift


def test_keyword_arguments_and_defaults_of_a_script_module():
    """Bound as PyTorch's exporter binds them: after the positional arguments, each parameter takes its keyword
    argument, else its default; a None argument is a constant of the graph."""
    model = torch.jit.script(WithDefaults())
    x, scale, shift = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    proto = _export(model, (x, {"shift": shift}), 14)
    assert len(proto.graph.input) == 2  # x, shift (scale is None)
    _expect(_run(proto, [x.numpy(), shift.numpy()]), _flat(model(x, shift=shift)))
    proto = _export(model, (x, {"scale": scale}), 14)
    assert len(proto.graph.input) == 3  # x, scale, the default shift
    _expect(_run(proto, [x.numpy(), scale.numpy(), torch.ones(2, 3).numpy()]), _flat(model(x, scale)))
    with pytest.raises(exporter.errors.ExportArgumentError, match="name no parameter"):
        _export(model, (x, {"offset": shift}), 14)


def test_module_whose_state_holds_packed_parameters():
    """A quantized Linear's state_dict holds a (weight, bias) tuple next to tensors: lifting attributes names
    tensors from the state_dict and must pass over such entries (it raised AttributeError)."""
    model = torch.ao.nn.quantized.Linear(4, 8)
    weight = torch.quantize_per_tensor(torch.arange(32, dtype=torch.float).view(8, 4), 0.5, 0, torch.qint8)
    model.set_weight_bias(weight, torch.arange(8, dtype=torch.float))
    x = torch.quantize_per_tensor(torch.linspace(-2, 2, 12).view(3, 4), 0.25, 128, torch.quint8)
    proto = _export(model, (x,), 13)
    assert any(node.op_type in ("QLinearMatMul", "MatMul", "Gemm") for node in proto.graph.node)


class _TupleThenTensor(torch.nn.Module):
    def forward(self, pair: tuple[torch.Tensor, torch.Tensor], c: torch.Tensor):
        return pair[0] + pair[1].sum(), c / 2


def test_a_tensor_after_a_tuple_argument_keeps_its_own_recorded_type():
    """Graph inputs are typed per argument: a tuple argument (one graph input until tuples are lowered) does not
    shift the example types onto the arguments after it (``c`` was recorded as the tuple's second tensor, Float[2, 3])."""
    model = torch.jit.script(_TupleThenTensor())
    a, b, c = torch.randn(4), torch.randn(2, 3), torch.arange(35).reshape(5, 7)
    captured = exporter.prepare_capture(model, ((a, b), c))
    last = list(captured.graph.inputs())[-1].type()
    assert (last.scalarType(), last.sizes()) == ("Long", [5, 7])
    buffer = io.BytesIO()
    exporter.export(model, ((a, b), c), buffer, opset_version=14, dynamo=False)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    feeds = dict(zip([i.name for i in session.get_inputs()], [a.numpy(), b.numpy(), c.numpy()], strict=True))
    np.testing.assert_allclose(session.run(None, feeds)[1], (c / 2).numpy())
