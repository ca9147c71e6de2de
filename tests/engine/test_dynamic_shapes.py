"""``dynamic_shapes`` in every form torch.export takes, for both captures (``exporter/frontends/export/dynamic_shapes.py``):
named dims name the ONNX axes, each model runs on ONNX Runtime at other sizes than the example's; and a failed export
leaves the caller's model and tensors as they were, so the next export in the process works."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch.export import Dim

import exporter
from exporter.errors import CaptureError, CheckerError, DynamicAxesError, UnsupportedOperatorError


def _export(model, args, dynamo: bool, **options) -> onnx.ModelProto:
    data = io.BytesIO()
    exporter.export(model, args, data, dynamo=dynamo, **options)
    return onnx.load_from_string(data.getvalue())


def _dims(values) -> list[list]:
    return [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in values]


def _run(proto: onnx.ModelProto, *inputs: torch.Tensor) -> list[np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs, strict=True)})


class _AddAndSum(torch.nn.Module):
    def forward(self, x, y):
        return x + y, x.sum(1)


_BATCH = Dim("batch")
SPEC_FORMS = {
    "dict of Dims": {"x": {0: _BATCH}, "y": {0: _BATCH}},
    "tuple in argument order": ({0: _BATCH}, {0: _BATCH}),
    "one entry per axis": {"x": (_BATCH, None), "y": [_BATCH, Dim.STATIC]},
    "str names (torch.onnx's form)": {"x": {0: "batch"}, "y": {0: "batch"}},
}


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
@pytest.mark.parametrize("form", SPEC_FORMS)
def test_every_form_names_the_axis_batch_on_inputs_and_outputs(form, dynamo):
    proto = _export(_AddAndSum(), (torch.randn(3, 4), torch.randn(3, 4)), dynamo, dynamic_shapes=SPEC_FORMS[form])
    assert _dims(proto.graph.input) == [["batch", 4], ["batch", 4]]
    assert _dims(proto.graph.output)[0] == ["batch", 4]
    if dynamo:  # a trace's outputs carry what shape inference names them
        assert _dims(proto.graph.output)[1] == ["batch"]
    x, y = torch.randn(5, 4), torch.randn(5, 4)
    for got, want in zip(_run(proto, x, y), _AddAndSum()(x, y), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
@pytest.mark.parametrize("hint", [Dim.AUTO, Dim.DYNAMIC])
def test_unnamed_dims_are_dynamic_and_static_ones_fixed(hint, dynamo):
    proto = _export(_AddAndSum(), (torch.randn(3, 4), torch.randn(3, 4)), dynamo,
                    dynamic_shapes={"x": {0: hint, 1: Dim.STATIC}, "y": {0: hint, 1: None}})
    (x_batch, x_width), (y_batch, _) = _dims(proto.graph.input)
    assert isinstance(x_batch, str) and isinstance(y_batch, str) and x_width == 4
    x, y = torch.randn(6, 4), torch.randn(6, 4)
    np.testing.assert_allclose(_run(proto, x, y)[0], (x + y).numpy(), rtol=1e-6)


class _Doubled(torch.nn.Module):
    def forward(self, x, y):
        return x + torch.cat([y, y]), torch.cat([x, x])


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
def test_a_derived_dim_is_named_by_its_expression(dynamo):
    s = Dim("s")
    proto = _export(_Doubled(), (torch.randn(6, 3), torch.randn(3, 3)), dynamo,
                    dynamic_shapes={"x": {0: 2 * s}, "y": {0: s}})
    assert _dims(proto.graph.input) == [["2*s", 3], ["s", 3]]
    if dynamo:
        assert _dims(proto.graph.output) == [["2*s", 3], ["4*s", 3]]
    x, y = torch.randn(10, 3), torch.randn(5, 3)
    for got, want in zip(_run(proto, x, y), _Doubled()(x, y), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


class _WithPast(torch.nn.Module):
    def forward(self, x, past):
        return x + past[0][0] * past[1][1]


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
def test_nested_inputs_take_a_nested_spec(dynamo):
    x = torch.randn(2, 3)
    past = [(torch.randn(2, 3), torch.randn(2, 3)), (torch.randn(2, 3), torch.randn(2, 3))]
    spec = {"x": {0: "batch"}, "past": [({0: "batch"}, None), (None, {0: "batch"})]}
    proto = _export(_WithPast(), (x, past), dynamo, dynamic_shapes=spec)
    assert all(dims[0] == "batch" for dims in _dims(proto.graph.input))
    x = torch.randn(4, 3)
    past = [(torch.randn(4, 3), torch.randn(4, 3)), (torch.randn(4, 3), torch.randn(4, 3))]
    np.testing.assert_allclose(_run(proto, x, past[0][0], past[1][1])[0], _WithPast()(x, past).numpy(), rtol=1e-6)


class _Variadic(torch.nn.Module):
    def forward(self, *args):
        return args[0] * args[1]


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
def test_a_variadic_forward_takes_a_spec_per_argument_and_dynamic_axes(dynamo):
    args = (torch.randn(2, 3), torch.randn(2, 3))
    by_shapes = _export(_Variadic(), args, dynamo, dynamic_shapes=({0: Dim("b")}, {0: Dim("b")}))
    by_axes = _export(_Variadic(), args, dynamo, input_names=["a", "c"],
                      dynamic_axes={"a": {0: "b"}, "c": {0: "b"}})
    for proto in (by_shapes, by_axes):
        assert [dims[0] for dims in _dims(proto.graph.input)] == ["b", "b"]
        a, c = torch.randn(5, 3), torch.randn(5, 3)
        np.testing.assert_allclose(_run(proto, a, c)[0], (a * c).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dynamo", [True, False], ids=["export", "trace"])
def test_a_dynamic_axes_key_that_names_nothing_is_ignored_with_torch_onnx_warning(dynamo):
    with pytest.warns(UserWarning, match="Provided key nothing for dynamic axes is not a valid input/output name"):
        proto = _export(_AddAndSum(), (torch.randn(3, 4), torch.randn(3, 4)), dynamo, input_names=["x", "y"],
                        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "nothing": {0: "n"}})
    assert _dims(proto.graph.input) == [["batch", 4], ["batch", 4]]


class _Recurrent(torch.nn.Module):
    def __init__(self, layer: type[torch.nn.RNNBase]):
        super().__init__()
        self.layer = layer(4, 5, batch_first=True)

    def forward(self, x):
        return self.layer(x)[0]


@pytest.mark.parametrize("axes", [{0: Dim("batch")}, {1: Dim("seq")}], ids=["batch", "seq"])
@pytest.mark.parametrize("layer", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN], ids=lambda c: c.__name__)
def test_named_dims_of_recurrent_layers(layer, axes):
    """The while_loop forms keep the sequence free but fix the batch (torch 2.13): a batch-only capture takes PyTorch's
    own forms. torch.export's guard ``seq != 1`` narrows the range of ``Dim("seq")`` (passed as Dim.DYNAMIC)."""
    model = _Recurrent(layer).eval()
    proto = _export(model, (torch.randn(2, 6, 4),), True, dynamic_shapes={"x": axes})
    (axis, dim), = axes.items()
    assert _dims(proto.graph.input)[0][axis] == dim.__name__
    x = torch.randn(3, 6, 4) if axis == 0 else torch.randn(2, 9, 4)
    np.testing.assert_allclose(_run(proto, x)[0], model(x).detach().numpy(), rtol=1e-4, atol=1e-6)


# -- a failed export leaves nothing behind ---------------------------------------------------------------------------
class _Fixed(torch.nn.Module):
    def forward(self, x):
        return x.reshape(6, 4) * 2  # the code fixes the first axis


class _FixedRecurrent(_Recurrent):
    def __init__(self):
        super().__init__(torch.nn.LSTM)

    def forward(self, x):
        return super().forward(x).reshape(2, 6, 5)  # the repro: the code fixes the LSTM's sequence


class _BranchOnBlocks(torch.nn.Module):
    def forward(self, x):
        if 1 + x.shape[0] // 4 == 3:  # three blocks: another branch at other lengths (the export front end's guards refuse it)
            return x * 2
        return x + 1


class _GridSample(torch.nn.Module):
    def forward(self, x):
        grid = torch.zeros(x.shape[0], 2, 2, 2)
        return torch.nn.functional.grid_sample(x.reshape(-1, 1, 2, 2), grid, align_corners=False)


class _Relu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.linear(x))


def _invalid_relu(g, x):
    """A symbolic for relu that emits an op ONNX does not have: the checker refuses the model."""
    return g.op("NoSuchOp", x)


FAILURES = {
    "capture error": (_Fixed, dict(dynamic_shapes={"x": {0: Dim("seq")}}), CaptureError),
    "recurrent capture error": (_FixedRecurrent, dict(dynamic_shapes={"x": {1: Dim("seq")}}), CaptureError),
    "guard refusal": (_BranchOnBlocks, dict(dynamic_axes={"x": {0: "n"}}, input_names=["x"]), DynamicAxesError),
    "conversion error": (_GridSample, dict(opset_version=15, dynamic_shapes={"x": {0: Dim("n")}}),
                         UnsupportedOperatorError),
    "argument error": (_Relu, dict(dynamic_shapes={"x": {0: Dim("n")}}, dynamic_axes={"x": [0]}),
                       exporter.errors.ExportArgumentError),
    "checker error": (_Relu, dict(dynamic_shapes={"x": {0: Dim("n")}}, opset_version=18), CheckerError),
}


@pytest.mark.parametrize("failure", FAILURES)
def test_a_failed_export_leaves_nothing_behind(failure):
    make, options, error = FAILURES[failure]
    model = make().train()
    hooks = (len(model._forward_hooks), len(model._forward_pre_hooks))
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    x = torch.randn(2, 6, 4) if isinstance(model, _Recurrent) else torch.randn(8, 4)
    before = x.clone()
    if failure == "checker error":
        exporter.register_custom_op_symbolic("aten::relu", _invalid_relu, 18)
    try:
        with pytest.raises(error):
            exporter.export(model, (x,), io.BytesIO(), dynamo=True, **options)
    finally:
        if failure == "checker error":
            exporter.unregister_custom_op_symbolic("aten::relu", 18)
    assert not [key for key in vars(x) if key.startswith("_dynamo")]
    assert torch.equal(x, before) and model.training and (len(model._forward_hooks),
                                                           len(model._forward_pre_hooks)) == hooks
    assert all(torch.equal(tensor, state[name]) for name, tensor in model.state_dict().items())
    # the next exports of the same tensors, static and dynamic, with either capture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        static = _export(torch.nn.Linear(4, 2), (x,), True)
        dynamic = _export(torch.nn.Linear(4, 2), (x,), True, dynamic_shapes={"input": {0: Dim("n")}})
        traced = _export(torch.nn.Linear(4, 2), (x,), False, dynamic_shapes={"input": {0: Dim("n")}})
    assert all(isinstance(d, int) for d in _dims(static.graph.input)[0])
    assert _dims(dynamic.graph.input)[0][0] == "n" and _dims(traced.graph.input)[0][0] == "n"


class _Refined(torch.nn.Module):
    def forward(self, x, y):
        if x.shape[0] >= 6 and y.shape[0] <= 16:  # torch.export refines the ranges of dx and dy
            return x * 2.0, y + 1
        return x, y


def test_one_dim_per_axis_of_a_one_dimensional_input():
    proto = _export(_Refined(), (torch.randn(16), torch.randn(12)), True,
                    dynamic_shapes={"x": (Dim("dx"),), "y": (Dim("dy"),)})
    assert _dims(proto.graph.input) == [["dx"], ["dy"]]


def test_axes_of_one_size_take_the_first_name_with_torch_onnx_warning():
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match="The axis name: other will not be used, since it shares the same shape "
                                         "constraints with another axis: batch"):
        proto = _export(_AddAndSum(), (x, x.clone()), True, dynamic_shapes={"x": {0: "batch"}, "y": {0: "other"}})
    assert _dims(proto.graph.input) == [["batch", 4], ["batch", 4]]
