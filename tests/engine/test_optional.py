"""``Optional[Tensor]`` in scripted models: ONNX optionals (opset 15+; If and Loop pass them on from 16).

Each export runs in ONNX Runtime, which returns None for an empty optional output, and is compared with PyTorch
run on the same inputs; below the opset that can express a case, the error names that opset."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import Tensor

from exporter.errors import (
    ExportArgumentError,
    SymbolicValueError,
    UnsupportedOperatorError,
)
from tests.engine.test_script_modules import _export


def _session(proto: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def _same(got, want) -> None:
    """ONNX Runtime's result against PyTorch's: None for None, else equal arrays of the same type and shape."""
    if want is None:
        assert got is None, f"expected None, ONNX Runtime gave {got!r}"
        return
    assert got is not None, f"expected {want!r}, ONNX Runtime gave None"
    want = want.detach().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _optional_float(dim: str) -> onnx.TypeProto:
    return onnx.helper.make_optional_type_proto(onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, (dim,)))


# -- None and a tensor meeting at an If or a Loop --------------------------------------------------------------
class NoneUnlessLong(torch.nn.Module):
    def forward(self, x) -> Tensor | None:
        y: Tensor | None = None
        if x.size(0) > 1:
            y = x
        return y


class NoneIfLong(torch.nn.Module):
    def forward(self, x) -> Tensor | None:
        y: Tensor | None = x
        if x.size(0) > 1:
            y = None
        return y


class SetByIterations(torch.nn.Module):
    def forward(self, x) -> Tensor | None:
        y: Tensor | None = None
        for _ in range(x.size(0)):
            y = x
        return y


class ClearedByIterations(torch.nn.Module):
    def forward(self, x) -> Tensor | None:
        y: Tensor | None = x
        for _ in range(x.size(0)):
            y = None
        return y


class GrownWhenSet(torch.nn.Module):
    """A carried optional read inside the body (refined by ``is None``), set on the first iteration."""

    def forward(self, x) -> Tensor | None:
        y: Tensor | None = None
        for i in range(x.size(0)):
            if y is None:
                y = x * 2
            else:
                y = y + x[i]
        return y


@pytest.mark.parametrize("module", [NoneUnlessLong, NoneIfLong, SetByIterations, ClearedByIterations, GrownWhenSet])
def test_none_or_tensor_decided_at_run_time(module):
    """The result is None for some sizes and a tensor for others: an optional output, typed like PyTorch's
    exporter types it (element float of the dynamic size), None in ONNX Runtime exactly where PyTorch gives None.
    (ClearedByIterations exported as a tensor before, giving NaN where PyTorch gives None.)"""
    model = torch.jit.script(module())
    proto = _export(model, (torch.ones(3),), 16, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    if module is not GrownWhenSet:
        assert proto.graph.output[0].type == _optional_float("n")
    else:
        assert proto.graph.output[0].type.HasField("optional_type")
    for node in proto.graph.node:
        if node.op_type == "If":
            for branch in node.attribute:
                assert branch.g.output[0].type == _optional_float("n")
    session = _session(proto)
    for size in (0, 1, 2, 5):
        x = torch.arange(size, dtype=torch.float32) + 1
        (got,) = session.run(None, {"x": x.numpy()})
        _same(got, module()(x))


@pytest.mark.parametrize("module", [NoneUnlessLong, SetByIterations, ClearedByIterations])
def test_none_takes_the_element_type_of_the_tensor(module):
    """A None's empty optional learns its element type (here int64) from the other branch or the iterations; float,
    the type of a None nothing fills, would make ONNX Runtime reject the If or the Loop."""
    model = torch.jit.script(module())
    proto = _export(model, (torch.ones(3, dtype=torch.int64),), 16, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert proto.graph.output[0].type.optional_type.elem_type.tensor_type.elem_type == onnx.TensorProto.INT64
    session = _session(proto)
    for size in (0, 1, 4):
        x = torch.arange(size, dtype=torch.int64)
        (got,) = session.run(None, {"x": x.numpy()})
        _same(got, module()(x))


@pytest.mark.parametrize("opset", [9, 14, 15])
@pytest.mark.parametrize("module", [NoneUnlessLong, NoneIfLong, SetByIterations, ClearedByIterations])
def test_none_through_if_or_loop_needs_opset_16(module, opset):
    """If and Loop take optionals from opset 16 (If-16, Loop-16): below, the error names 16. ClearedByIterations
    at these opsets exported before as a loop carrying a tensor, NaN where PyTorch gives None."""
    model = torch.jit.script(module())
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 16") as caught:
        _export(model, (torch.ones(3),), opset, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    assert caught.value.min_opset == 16


# -- None as a graph output -------------------------------------------------------------------------------------
class WithNones(torch.nn.Module):
    def forward(self, x):
        return (x + 1, (x, None, (x * 2, None)))


@pytest.mark.parametrize("opset", [15, 16])
def test_none_outputs_are_empty_optionals(opset):
    """A None the model returns is an output of its own, an empty optional ONNX Runtime returns as None, in the
    position PyTorch's flattened outputs give it."""
    model = torch.jit.script(WithNones())
    x = torch.randn(3, 4)
    proto = _export(model, (x,), opset)
    assert [o.type.HasField("optional_type") for o in proto.graph.output] == [False, False, True, False, True]
    got = _session(proto).run(None, {proto.graph.input[0].name: x.numpy()})
    want = [x + 1, x, None, x * 2, None]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g, w)


@pytest.mark.parametrize("opset", [11, 14])
def test_none_output_needs_opset_15(opset):
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 15") as caught:
        _export(torch.jit.script(WithNones()), (torch.randn(3, 4),), opset)
    assert caught.value.min_opset == 15


# -- Optional[Tensor] inputs ------------------------------------------------------------------------------------
class FirstGiven(torch.nn.Module):
    # Tensor defaults are what this case exports (read once, at scripting), not a shared mutable default.
    def forward(self, x: Tensor | None = torch.ones(2, 3), y: Tensor | None = torch.zeros(2, 3)):  # noqa: B008
        if x is not None:
            return x * 3
        elif y is not None:
            return y - 1
        else:
            return torch.full((2, 3), -1.0)


def test_optional_inputs_may_be_left_out():
    """At opset 15+ an Optional[Tensor] parameter is an optional input: leaving it out in ONNX Runtime means
    None (not the parameter's default, which ONNX cannot hold), and `is None` is decided at run time."""
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    model = torch.jit.script(FirstGiven())
    proto = _export(model, (x, y), 15, input_names=["x", "y"])
    assert all(i.type.HasField("optional_type") for i in proto.graph.input)
    session = _session(proto)
    for feeds, (a, b) in (({"x": x, "y": y}, (x, y)), ({"y": y}, (None, y)), ({"x": x}, (x, None)), ({}, (None, None))):
        (got,) = session.run(None, {name: t.numpy() for name, t in feeds.items()})
        _same(got, model(a, b))


class TupleOfOptionals(torch.nn.Module):
    def forward(self, x, y: tuple[Tensor | None, Tensor | None]):
        first, second = y
        if first is not None:
            return x + first
        if second is not None:
            return x * second
        return x


def test_tuple_of_optional_inputs():
    x, a, b = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    model = torch.jit.script(TupleOfOptionals())
    proto = _export(model, (x, (a, b)), 16)
    names = [i.name for i in proto.graph.input]
    assert [i.type.HasField("optional_type") for i in proto.graph.input] == [False, True, True]
    session = _session(proto)
    for first, second in ((a, b), (None, b), (None, None)):
        optionals = zip(names[1:], (first, second), strict=True)
        feeds = {names[0]: x.numpy(), **{n: t.numpy() for n, t in optionals if t is not None}}
        (got,) = session.run(None, feeds)
        _same(got, model(x, (first, second)))


class PassesOn(torch.nn.Module):
    """A branch returning the optional input itself (an Identity of an optional, Identity-16)."""

    def forward(self, x, y: Tensor | None) -> Tensor | None:
        z: Tensor | None = None
        if x.sum() > 0:
            z = y
        return z


def test_branch_passing_an_optional_input_on():
    x, y = torch.ones(2), torch.randn(2)
    model = torch.jit.script(PassesOn())
    proto = _export(model, (x, y), 16, input_names=["x", "y"])
    session = _session(proto)
    for xs, ys in ((x, y), (-x, y), (x, None), (-x, None)):
        feeds = {"x": xs.numpy(), **({"y": ys.numpy()} if ys is not None else {})}
        (got,) = session.run(None, feeds)
        _same(got, model(xs, ys))
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 16"):
        _export(model, (x, y), 15, input_names=["x", "y"])


class LinearMaybeBiased(torch.nn.Module):
    def forward(self, x, w, b: Tensor | None):
        return torch.nn.functional.linear(x, w, b)


def test_optional_input_read_as_it_is_stays_a_tensor_input():
    """An Optional[Tensor] input that an op reads as it is (linear's ``Tensor? bias``) is a tensor input taken as
    given, at opset 15+ too: linear's symbolic reads a tensor."""
    x, w, b = torch.randn(2, 3), torch.randn(4, 3), torch.randn(4)
    model = torch.jit.script(LinearMaybeBiased())
    proto = _export(model, (x, w, b), 16, input_names=["x", "w", "b"])
    assert not any(i.type.HasField("optional_type") for i in proto.graph.input)
    (got,) = _session(proto).run(None, {"x": x.numpy(), "w": w.numpy(), "b": b.numpy()})
    _same(got, model(x, w, b))


class BiasDroppedWhenPositive(torch.nn.Module):
    def forward(self, x, w, b):
        bias: Tensor | None = b
        if x.sum() > 0:
            bias = None
        return torch.nn.functional.linear(x, w, bias)


def test_op_reading_a_value_that_may_be_none_is_refused():
    """An op that would read a tensor-or-None value (decided at run time) as a tensor is refused, not exported
    as if the tensor were always there."""
    model = torch.jit.script(BiasDroppedWhenPositive())
    with pytest.raises(SymbolicValueError, match="may be None at run time"):
        _export(model, (torch.randn(2, 3), torch.randn(4, 3), torch.randn(4)), 16)


class Scaled(torch.nn.Module):
    def forward(self, x, scale: Tensor | None = None):
        if scale is not None:
            return x * scale
        return x


@pytest.mark.parametrize("opset", [11, 16])
def test_none_arguments_of_a_scripted_model(opset):
    """A None given is refused with PyTorch's exporter's message (a ValueError); left out, a parameter defaulting
    to None is a constant of the graph."""
    model = torch.jit.script(Scaled())
    x = torch.randn(2, 3)
    for args in ((x, None), (x, {"scale": None})):
        with pytest.raises(ExportArgumentError, match="args contained 1 None's after flattening") as caught:
            _export(model, args, opset)
        assert isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match="args contained 1 None's after flattening"):
        _export(torch.jit.script(TupleOfOptionals()), (x, (None, x)), opset)
    proto = _export(model, (x,), opset)
    assert len(proto.graph.input) == 1
    (got,) = _session(proto).run(None, {proto.graph.input[0].name: x.numpy()})
    _same(got, model(x))


class RaisesUnlessPositive(torch.nn.Module):
    def forward(self, x, y: Tensor | None) -> Tensor | None:
        if x.sum() > 0:
            z = y
        else:
            raise RuntimeError("negative")
        return z


def test_raising_branch_beside_an_optional():
    """The placeholder for what a raising branch never sets (zeros of the other branch's shape) is wrapped like any
    tensor beside an optional: the If's branches agree on optional(float[2])."""
    x, y = torch.ones(2), torch.randn(2)
    model = torch.jit.script(RaisesUnlessPositive())
    proto = _export(model, (x, y), 16, input_names=["x", "y"])
    expected = onnx.helper.make_optional_type_proto(onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, (2,)))
    assert proto.graph.output[0].type == expected
    session = _session(proto)
    for ys in (y, None):
        feeds = {"x": x.numpy(), **({"y": ys.numpy()} if ys is not None else {})}
        (got,) = session.run(None, feeds)
        _same(got, model(x, ys))
