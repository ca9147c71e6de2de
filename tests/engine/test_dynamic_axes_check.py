"""Declared dynamic axes are honoured or refused, never silently baked (``export(check_dynamic_axes=True)``).

A trace that froze a declared dynamic size into its graph is refused, naming the input, the axis and the op
(``exporter/frontends/torchscript/traced_sizes.py``); a torch.export program whose guards fix a size computed from a dynamic dim is
refused naming the guard, and one whose guards only exclude some sizes is warned of
(``exporter/frontends/export/guards.py``). Honest models export as before, with no warning."""

from __future__ import annotations

import io
import math
import random
import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch

import exporter
import exporter.frontends.torchscript.traced_sizes as traced_sizes
from exporter.contract import DYNAMIC_AXES_WARNINGS
from exporter.errors import DynamicAxesError, UnsupportedOperatorError


def _export(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    exporter.export_program(model, args, buffer, **{"dynamo": False, **options})  # ours: no torch.onnx deprecation
    return buffer.getvalue()


def _run(model_bytes: bytes, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {name: value.numpy() for name, value in feeds.items()})


SEQUENCE = {"x": {0: "batch", 1: "sequence"}}


# -- the TorchScript capture --------------------------------------------------------------------------------------
class _ScaledByLength(torch.nn.Module):
    def forward(self, x):
        n = int(x.shape[1])  # a Python number: the trace keeps the example's
        return x * n + torch.full((x.shape[1],), float(x.shape[1]))


class _SumOverLoop(torch.nn.Module):  # no TracerWarning: range() takes the size silently
    def forward(self, x):
        total = x[:, 0]
        for i in range(1, x.shape[1]):
            total = total + x[:, i]
        return total


class _BranchOnLength(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] > 4:
            return x * 2
        return x + 1


class _Split(torch.nn.Module):
    def forward(self, x):
        return x.split(2, 1)  # as many outputs as pieces: the trace fixes the count


class _SqrtScale(torch.nn.Module):
    def forward(self, x):
        return x / math.sqrt(x.shape[-1])


@pytest.mark.parametrize("model, op, line", [
    (_ScaledByLength(), "aten::mul", "n = int"),
    (_SumOverLoop(), "aten::", "total = total + x"),
    (_BranchOnLength(), "aten::add", "return x + 1"),
    (_Split(), "prim::ListUnpack", None),
    (_SqrtScale(), "aten::div", "math.sqrt"),
], ids=["int_of_size", "range_loop", "branch", "split_count", "sqrt_of_size"])
def test_a_trace_that_froze_a_dynamic_size_is_refused_naming_input_axis_and_op(tmp_path, model, op, line):
    path = tmp_path / "model.onnx"
    with pytest.raises(DynamicAxesError) as refused:
        exporter.export(model, (torch.randn(2, 4),), str(path), input_names=["x"], dynamic_axes=SEQUENCE, dynamo=False)
    message = str(refused.value)
    assert "sequence (axis 1 of input 'x') traced at 4 and again at 8" in message
    assert "batch" not in message.split(", the graphs differ")[0]  # the batch is honoured: not blamed
    assert op in message
    assert __file__ in message or op == "prim::ListUnpack"  # the model's line
    assert "check_dynamic_axes=False" in message
    assert not path.exists()


def test_the_refusal_names_the_line_of_the_op_that_froze_it():
    with pytest.raises(DynamicAxesError) as refused:
        _export(_ScaledByLength(), (torch.randn(2, 4),), input_names=["x"], dynamic_axes=SEQUENCE)
    line = next(number for number, text in enumerate(open(__file__).read().splitlines(), 1)
                if "return x * n + torch.full" in text)
    assert f"{__file__}:{line}" in str(refused.value)
    assert "a constant 4 where the other has 8" in str(refused.value)


def test_check_dynamic_axes_false_writes_the_trace_as_torch_onnx_does():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        written = _export(_ScaledByLength(), (torch.randn(2, 4),), input_names=["x"], dynamic_axes=SEQUENCE,
                          check_dynamic_axes=False)
    x = torch.randn(2, 6)
    (got,) = _run(written, {"x": x})
    assert not np.allclose(got, _ScaledByLength()(x).numpy())  # the example's 4, as refused above


def test_a_size_only_the_static_axes_hold_is_not_refused():
    # The same models with only the batch dynamic: the sizes they freeze are of axes the caller keeps static.
    for model in (_ScaledByLength(), _SumOverLoop(), _BranchOnLength()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            _export(model, (torch.randn(2, 4),), input_names=["x"], dynamic_axes={"x": {0: "batch"}})


def test_an_op_the_library_cannot_convert_is_reported_before_a_frozen_size():
    # fractional_max_pool2d has no symbolic; its output size, from output_ratio, is also frozen by the trace.
    model = type("Pool", (torch.nn.Module,), {"forward": lambda self, x: torch.nn.functional.fractional_max_pool2d(
        x, 2, output_ratio=(0.5, 0.5), _random_samples=torch.full((1, 2, 2), 0.5))})()
    with pytest.raises(UnsupportedOperatorError, match="fractional_max_pool2d"):
        _export(model, (torch.randn(1, 2, 8, 8),), input_names=["x"], dynamic_axes={"x": [2, 3]})


class _Honest(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm1d(4)

    def forward(self, x, y):
        h = self.norm(self.conv(x))  # (batch, 4, length)
        return h.transpose(1, 2) @ y, h.reshape(h.shape[0], -1).softmax(-1)


@pytest.mark.parametrize("capture", ["trace", "export"])
def test_an_honest_dynamic_model_exports_with_no_warning(capture):
    torch.manual_seed(0)
    model = _Honest().eval()
    x, y = torch.randn(1, 3, 5), torch.randn(1, 4, 6)  # a batch of 1, as zoo examples are
    axes = {"x": {0: "batch", 2: "length"}, "y": {0: "batch", 2: "width"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=DYNAMIC_AXES_WARNINGS)  # torch.onnx's own, for dynamic_axes
        written = _export(model, (x, y), input_names=["x", "y"], dynamic_axes=axes, dynamo=capture == "export")
    x, y = torch.randn(3, 3, 9), torch.randn(3, 4, 2)
    got = _run(written, {"x": x, "y": y})
    for actual, expected in zip(got, model(x, y), strict=True):
        np.testing.assert_allclose(actual, expected.detach().numpy(), rtol=1e-5, atol=1e-5)


class _LayerDrop(torch.nn.Module):
    """Skips its layer at random on the Python side, as transformers' layer drop does in training."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)

    def forward(self, x):
        if random.random() < 0.5:
            x = self.layer(x)
        return x * torch.rand(1)


def test_a_model_that_draws_random_numbers_is_not_refused_and_the_generators_are_left_as_one_trace_leaves_them():
    model = _LayerDrop().train()
    x = torch.randn(3, 5, 4)
    axes = {"x": {0: "batch", 1: "sequence"}}
    states = []
    for check in (False, True):
        random.seed(7)
        torch.manual_seed(7)
        _export(model, (x,), input_names=["x"], dynamic_axes=axes, training=exporter.TrainingMode.TRAINING,
                check_dynamic_axes=check)
        states.append((random.random(), torch.rand(1).item()))
    assert states[0] == states[1]


def test_a_constant_broadcast_into_copy_is_not_refused():
    # The tracer records the row expanded to the traced size of the view; the converter's copy_ broadcasts it to the
    # run-time shape instead.
    def assign(x):
        x = x.clone()
        x[:, x.size(0):] = torch.tensor([1.0, 2.0, 3.0])
        return x

    model = type("Assign", (torch.nn.Module,), {"forward": lambda self, x: assign(x)})()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        written = _export(model, (torch.randn(2, 5, 3),), input_names=["x"], dynamic_axes={"x": [0, 1]})
    x = torch.randn(4, 10, 3)
    (got,) = _run(written, {"x": x})
    np.testing.assert_array_equal(got, assign(x).numpy())


class _ArangeIntoOut(torch.nn.Module):
    def forward(self, start, end):
        return torch.arange(start.size(0), end, out=torch.tensor([1.0]))


def test_a_constant_only_written_through_out_is_not_refused():
    # The tracer records the out= tensor by reference, holding what arange wrote at each traced size; only its type
    # is read (PyTorch's legacy suite: test_arange_start_out, which torch.onnx exports right at other sizes too).
    end = torch.tensor(8.5)
    written = _export(_ArangeIntoOut(), (torch.randn(2, 3, 4), end), input_names=["x", "y"],
                      dynamic_axes={"x": [0, 1, 2]})
    x = torch.randn(5, 3, 4)
    (got,) = _run(written, {"x": x, "y": end})
    np.testing.assert_array_equal(got, _ArangeIntoOut()(x, end).numpy())


def test_a_capture_exported_many_times_is_traced_again_once(monkeypatch):
    calls = []
    original = traced_sizes._traced
    monkeypatch.setattr(traced_sizes, "_traced", lambda *a: calls.append(a) or original(*a))
    model, x = _Honest().eval(), (torch.randn(2, 3, 5), torch.randn(2, 4, 6))
    captured = exporter.prepare_capture(model, x)
    for opset in (13, 18):
        result = exporter.export_program(model, x, io.BytesIO(), opset_version=opset, input_names=["x", "y"],
                                 dynamic_axes={"x": {2: "length"}}, captured=captured, dynamo=False)
    assert len(calls) == 1
    assert "dynamic axes check" not in result.stage_seconds  # the verdict the first export kept


def test_the_model_and_its_buffers_are_left_as_they_were():
    model = _Honest().train()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    _export(model, (torch.randn(2, 3, 5), torch.randn(2, 4, 6)), input_names=["x", "y"],
            dynamic_axes={"x": {0: "batch", 2: "length"}, "y": {0: "batch"}}, training=exporter.TrainingMode.TRAINING)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, before[name]), name


# -- the torch.export capture -------------------------------------------------------------------------------------
class _CheckedBlocks(torch.nn.Module):
    def forward(self, x):
        torch._check((1 + x.shape[1] // 4) == 3)  # the model accepts 8 to 11 only
        return x * 2


class _BranchOnBlocks(torch.nn.Module):
    def forward(self, x):
        if 1 + x.shape[1] // 4 == 3:  # three blocks: another branch at other lengths
            return x * 2
        return x + 1


class _PadToBlocks(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] % 4 != 0:
            x = torch.nn.functional.pad(x, (0, 4 - x.shape[1] % 4))
        return x.reshape(x.shape[0], -1, 4).sum(-1)


class _Regroup(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], -1, 2)  # an even length, or PyTorch refuses it too


def test_a_guard_fixing_a_value_computed_from_a_dynamic_size_is_refused_naming_it(tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(DynamicAxesError) as refused:
        exporter.export(_BranchOnBlocks(), (torch.randn(2, 8),), str(path), input_names=["x"],
                        dynamic_axes=SEQUENCE, dynamo=True)
    message = str(refused.value)
    assert "axis 1 of input 'x' (sequence)" in message
    assert "(1 + (x.shape[1] // 4)) == 3" in message
    assert "at sizes 8 to 11" in message
    assert not path.exists()


def test_the_refused_guard_is_a_warning_with_check_dynamic_axes_false():
    with pytest.warns(UserWarning, match=r"x\.shape\[1\] // 4"):
        _export(_BranchOnBlocks(), (torch.randn(2, 8),), input_names=["x"], dynamic_axes=SEQUENCE, dynamo=True,
                check_dynamic_axes=False)


def test_a_checked_size_the_model_itself_refuses_elsewhere_is_a_warning():
    with pytest.warns(UserWarning, match=r"axis 1 of input 'x' \(sequence\).*\(1 \+ \(x\.shape\[1\] // 4\)\) == 3 "
                                         r"at .*test_dynamic_axes_check.py:\d+, that is at sizes 8 to 11 \(the model "
                                         r"itself refuses 12\)"):
        _export(_CheckedBlocks(), (torch.randn(2, 8),), input_names=["x"], dynamic_axes=SEQUENCE, dynamo=True)


@pytest.mark.parametrize("length, excluded", [(8, "not at 2, 3, 5"), (7, "not at 4, 8, 12")])
def test_a_guard_excluding_some_sizes_the_model_takes_is_a_warning(length, excluded):
    with pytest.warns(UserWarning, match=rf"axis 1 of input 'x' \(sequence\).*x\.shape\[1\] % 4.*{excluded}"):
        _export(_PadToBlocks(), (torch.randn(2, length),), input_names=["x"], dynamic_axes=SEQUENCE, dynamo=True)


def test_an_ops_own_condition_on_a_size_is_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=DYNAMIC_AXES_WARNINGS)  # torch.onnx's own, for dynamic_axes
        _export(_Regroup(), (torch.randn(2, 6),), input_names=["x"], dynamic_axes=SEQUENCE, dynamo=True)
