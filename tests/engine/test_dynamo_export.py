"""``export(..., dynamo=True)``: torch.export capture through the same op library, at any opset 7-20.

Each test exports a real model, runs it in ONNX Runtime and compares with PyTorch; the refusals leave no file."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision

import exporter
from exporter.contract import DYNAMIC_AXES_WARNINGS
from exporter.errors import CaptureError, ExportArgumentError, UnsupportedOperatorError


def _run(model_bytes: bytes, feeds: dict) -> list[np.ndarray]:
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {name: value.numpy() for name, value in feeds.items()})


def _export(model, args, opset, **options) -> tuple[exporter.ONNXProgram, bytes]:
    buffer = io.BytesIO()
    result = exporter.export_program(model, args, buffer, opset_version=opset, dynamo=True, **options)
    return result, buffer.getvalue()


def _opset_of(model_bytes: bytes) -> int:
    model = onnx.load_from_string(model_bytes)
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("opset", [9, 11, 14, 16, 18, 20])
def test_resnet18_at_the_opset_asked(opset):
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 64, 64)
    result, written = _export(model, (x,), opset)
    assert _opset_of(written) == opset
    (actual,) = _run(written, {"x": x})
    np.testing.assert_allclose(actual, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
    assert result.capture.capture == "export"


class _Flatten(torch.nn.Module):
    def forward(self, x, y):
        z = x.view(x.shape[0], -1) @ y
        return torch.nn.functional.layer_norm(z, z.shape[-1:]), x.new_zeros(x.shape[0])


@pytest.mark.parametrize("opset", [9, 13, 17, 20])
def test_dynamic_axes_become_dynamic_shapes(opset):
    model = _Flatten()
    x, y = torch.randn(3, 4, 5), torch.randn(20, 6)
    _, written = _export(model, (x, y), opset, dynamic_axes={"x": {0: "batch"}})
    outputs = onnx.load_from_string(written).graph.output
    assert [d.dim_param or d.dim_value for d in outputs[0].type.tensor_type.shape.dim] == ["batch", 6]
    assert [d.dim_param for d in outputs[1].type.tensor_type.shape.dim] == ["batch"]
    bigger = torch.randn(7, 4, 5)
    actual = _run(written, {"x": bigger, "y": y})
    for got, want in zip(actual, model(bigger, y), strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_in_torch_export_form():
    model = _Flatten()
    batch = torch.export.Dim("batch")
    x, y = torch.randn(3, 4, 5), torch.randn(20, 6)
    _, written = _export(model, (x, y), 18, dynamic_shapes={"x": {0: batch}, "y": None})
    first = onnx.load_from_string(written).graph.input[0]
    assert first.type.tensor_type.shape.dim[0].dim_param  # named after torch.export's symbol
    got, _ = _run(written, {"x": torch.randn(2, 4, 5), "y": y})
    assert got.shape == (2, 6)


class _FixedBatch(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(2, 3)  # broadcasting fixes x's first axis to 2


class _Regroup(torch.nn.Module):
    def forward(self, x):
        return x.reshape(2, -1) * 2


def test_a_size_computed_from_a_dynamic_axis_stays_computed():
    _, written = _export(_Regroup(), (torch.randn(2, 3),), 18, dynamic_axes={"x": [0]})
    (got,) = _run(written, {"x": torch.arange(12.0).reshape(4, 3)})
    np.testing.assert_array_equal(got, _Regroup()(torch.arange(12.0).reshape(4, 3)).numpy())


def test_size_reads_of_a_dynamic_program_need_no_decomposition():
    # sym_size is converted by the FX driver through aten::size's symbolic: counted as missing one, it sent every
    # dynamic program through four more (whole-program) decomposition passes that changed nothing.
    from exporter.frontends.export.capture import _ops_without_symbolics, at_opset, capture_program

    captured = capture_program(_Flatten(), (torch.randn(3, 4, 5), torch.randn(20, 6)),
                               ({0: torch.export.Dim.DYNAMIC}, None))
    program = at_opset(captured, 18).program
    assert torch.ops.aten.sym_size.int in {node.target for node in program.graph.nodes}
    assert _ops_without_symbolics(program, 18) == set()


def test_a_batch_of_one_on_a_dynamic_axis_leaves_no_literal_one_in_the_program():
    # Captured with its example batch of 1, ViT's MultiheadAttention in-projection held the literal batch 1 in one view
    # (size-oblivious tracing keeps every other view symbolic), and ONNX Runtime refused any other batch.
    torch.manual_seed(0)
    model = torchvision.models.vit_b_32()
    model.heads = torch.nn.Linear(768, 10)  # torchvision zero-initializes the head: its outputs would all be 0
    model.eval()
    _, written = _export(model, (torch.randn(1, 3, 224, 224),), 18, input_names=["x"],
                         dynamic_axes={"x": {0: "batch"}})
    for batch in (1, 3):
        x = torch.randn(batch, 3, 224, 224)
        (got,) = _run(written, {"x": x})
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)


class _BranchOnLength(torch.nn.Module):
    """Computes differently for one new token than for several: a decode step's kind of branch."""

    def forward(self, tokens):
        if tokens.shape[1] > 1:
            return tokens * 2
        return tokens * 3


def test_a_size_one_example_is_captured_as_given_where_the_wider_one_takes_another_branch():
    # The example widened to 2 tokens takes the other branch, and torch.export keeps no check of it that ONNX could
    # state: that program, exported, computed tokens * 2 for the caller's own example. It does not reproduce the
    # example, so the capture is of the example as given, and the bound torch.export puts on the axis is a warning.
    tokens = torch.randn(2, 1)
    with pytest.warns(UserWarning, match=r"branches on or checks axis 1 of input 'tokens' \(new\)"):
        _, written = _export(_BranchOnLength(), (tokens,), 18, input_names=["tokens"],
                             dynamic_axes={"tokens": {1: "new"}})
    (got,) = _run(written, {"tokens": tokens})
    np.testing.assert_allclose(got, (tokens * 3).numpy())


class _DecodeLike(torch.nn.Module):
    """A mask as long as the cache and the new tokens together, padded when shorter, as transformers' mask code does:
    with the new tokens widened from 1 to 2 and the mask not, the capture takes the padding branch, which for real
    inputs pads by 0."""

    def forward(self, tokens, mask, past):
        total = past.shape[1] + tokens.shape[1]
        if mask.shape[1] < total:
            mask = torch.nn.functional.pad(mask, (0, total - mask.shape[1]))
        return torch.cat([past, tokens], dim=1) * mask


@pytest.mark.parametrize("opset", [9, 18])
def test_a_wider_example_that_reproduces_the_given_one_is_kept(opset):
    tokens, mask, past = torch.randn(2, 1), torch.ones(2, 6), torch.randn(2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no bound to warn of: the program's ranges are the wider example's
        warnings.filterwarnings("ignore", message=DYNAMIC_AXES_WARNINGS)  # torch.onnx's own, for dynamic_axes
        _, written = _export(_DecodeLike(), (tokens, mask, past), opset, input_names=["tokens", "mask", "past"],
                             dynamic_axes={"tokens": {1: "new"}, "mask": {1: "total"}, "past": {1: "past"}})
    for new, cached in ((1, 5), (1, 8), (3, 4)):
        feeds = {"tokens": torch.randn(2, new), "mask": torch.rand(2, new + cached), "past": torch.randn(2, cached)}
        (got,) = _run(written, feeds)
        np.testing.assert_allclose(got, _DecodeLike()(**feeds).numpy(), rtol=1e-6)


def test_an_axis_the_code_fixes_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(CaptureError, match="specialized"):
        exporter.export(_FixedBatch(), (torch.randn(2, 3),), str(path), dynamo=True, dynamic_axes={"x": [0]})
    assert not path.exists()


class _DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


def test_what_torch_export_cannot_capture_is_a_capture_error_with_its_reason(tmp_path):
    path = tmp_path / "model.onnx"
    with pytest.raises(CaptureError, match="torch.export could not capture"):
        exporter.export(_DataDependent(), (torch.randn(3),), str(path), dynamo=True)
    assert not path.exists()


class _Float32GroupedMatmul(torch.nn.Module):
    def forward(self, a, b, offsets):
        return torch._grouped_mm(a, b, offs=offsets)  # torch.export's fake kernel takes bfloat16 only


def test_a_kernel_that_refuses_the_capture_is_one_error_and_no_log(capfd):
    # torch logs the refusing kernel's traceback as an error before torch.export raises: the CaptureError says it.
    args = (torch.randn(6, 4), torch.randn(2, 4, 3), torch.tensor([2, 6], dtype=torch.int32))
    with pytest.raises(CaptureError, match="Expected inputs of BF16 type"):
        exporter.export(_Float32GroupedMatmul(), args, io.BytesIO(), dynamo=True)
    assert "Traceback" not in capfd.readouterr().err


def test_argument_errors():
    model = torch.nn.Linear(3, 2)
    x = torch.randn(1, 3)
    with pytest.raises(ExportArgumentError, match="dynamo must be"):
        exporter.export(model, (x,), io.BytesIO(), dynamo="yes")
    with pytest.raises(ExportArgumentError, match="nn.Module"):
        exporter.export(torch.jit.script(model), (x,), io.BytesIO(), dynamo=True)
    with pytest.raises(ExportArgumentError, match="needs dynamo=False"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True, export_modules_as_functions=True)
    with pytest.raises(ExportArgumentError, match="needs dynamo=False"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True,
                        operator_export_type=exporter.OperatorExportTypes.ONNX_FALLTHROUGH)
    with pytest.raises(ExportArgumentError, match="not both"):
        exporter.export(model, (x,), io.BytesIO(), dynamo=True, dynamic_axes={"input": [0]},
                        dynamic_shapes={"input": {0: torch.export.Dim.DYNAMIC}})


class _GridSample(torch.nn.Module):
    def forward(self, x, grid):
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


def test_an_op_below_its_opset_names_the_opset_that_works():
    args = (torch.randn(1, 2, 4, 4), torch.rand(1, 3, 3, 2) * 2 - 1)
    with pytest.raises(UnsupportedOperatorError, match="grid_sampler.*16"):
        _export(_GridSample(), args, 15)
    _, written = _export(_GridSample(), args, 16)
    np.testing.assert_allclose(_run(written, {"x": args[0], "grid": args[1]})[0], _GridSample()(*args).numpy(),
                               rtol=1e-5, atol=1e-5)


def test_no_torchscript_call_and_no_torchscript_warning(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a dynamo=True export called TorchScript")

    for name in ("trace", "script", "_get_trace_graph", "trace_module"):
        monkeypatch.setattr(torch.jit, name, refuse)
    monkeypatch.setattr(torch._C, "_create_graph_by_tracing", refuse)
    model = torchvision.models.mobilenet_v3_small().eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _export(model, (torch.randn(1, 3, 64, 64),), 17)
    shown = [str(w.message) for w in caught if "torchscript" in str(w.message).lower() or "torch.jit" in
             str(w.message)]
    assert not shown


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("opset", [14, 18])
def test_fully_masked_attention_rows_are_zero_as_in_pytorch(opset):
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False
    _, written = _export(_Attention(), (q, k, v, mask), opset)
    (got,) = _run(written, {"q": q, "k": k, "v": v, "mask": mask})
    want = _Attention()(q, k, v, mask).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_one_capture_serves_several_opsets():
    model = torchvision.models.squeezenet1_1().eval()
    x = torch.randn(1, 3, 64, 64)
    captured = exporter.prepare_capture(model, (x,), dynamo=True)
    for opset in (11, 18):
        shared = io.BytesIO()
        exporter.export(model, (x,), shared, opset_version=opset, captured=captured, dynamo=False)
        _, own = _export(model, (x,), opset)
        assert shared.getvalue() == own


class _Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.tanh(self.conv(x))


def test_provenance_names_the_aten_op_module_and_source_line():
    result, _ = _export(_Scaled(), (torch.randn(1, 3, 8, 8),), 18)
    origins = {node.op_type: result.provenance.node(node.name) for node in result.model_proto.graph.node}
    assert (origins["Conv"].kind, origins["Conv"].scope) == ("aten::conv2d", "conv")
    assert origins["Tanh"].kind == "aten::tanh"
    assert origins["Tanh"].source.startswith(__file__ + ":")


class _Keywords(torch.nn.Module):
    def forward(self, x, *, scale):
        return x * scale


def test_keyword_arguments():
    x, scale = torch.randn(2, 3), torch.randn(3)
    _, written = _export(_Keywords(), (x,), 18, kwargs={"scale": scale})
    np.testing.assert_allclose(_run(written, {"x": x, "scale": scale})[0], (x * scale).numpy(), rtol=1e-6)


# -- control flow: torch.cond -> If, torch.while_loop -> Loop ----------------------------------------------------------
class _Branches(torch.nn.Module):
    """torch.cond on a data-dependent predicate; a branch reads a parameter and returns reductions and a copy of an
    operand (torch.cond refuses a branch that returns an operand itself)."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor([0.5, -2.0, 3.0]))

    def forward(self, x, y):
        def positive(x, y):
            return (x * self.scale + y).sin(), x.sum(dim=1), y.clone()

        def negative(x, y):
            return (x - y).cos(), y.amax(dim=1), x.clone()

        return torch.cond(x.sum() > 0, positive, negative, (x, y))


class _Doubling(torch.nn.Module):
    """torch.while_loop whose bound is an input; its body holds a torch.cond (a subgraph inside a subgraph)."""

    def forward(self, x, limit):
        def keep_going(step, acc):
            return step < limit.sum()

        def body(step, acc):
            grown = torch.cond(acc.sum() > 100.0, lambda a: a - 1.0, lambda a: a * 2.0 + 1.0, (acc,))
            return step + 1, grown

        return torch.while_loop(keep_going, body, (torch.zeros((), dtype=torch.int64), x))


def _check_feeds(model, result, written, feeds_list):
    for feeds in feeds_list:
        actual = _run(written, dict(zip(result.input_names, feeds, strict=False)))  # parameters may follow
        expected = model(*feeds)
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected, strict=True):
            np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("opset", [9, 13, 20])
def test_torch_cond_becomes_an_if_that_takes_either_branch(opset, dynamic):
    torch.manual_seed(0)
    model = _Branches()
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    axes = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None
    result, written = _export(model, (x, y), opset, dynamic_axes=axes)
    assert [node.op_type for node in onnx.load_from_string(written).graph.node].count("If") == 1
    rows = 4 if dynamic else 2
    _check_feeds(model, result, written, [(torch.ones(rows, 3), torch.randn(rows, 3)),
                                          (-torch.ones(rows, 3), torch.randn(rows, 3))])


@pytest.mark.parametrize("opset", [9, 13, 20])
def test_torch_while_loop_becomes_a_loop_with_the_condition_in_its_body(opset):
    model = _Doubling()
    result, written = _export(model, (torch.randn(3), torch.tensor([3])), opset)
    graph = onnx.load_from_string(written).graph
    loop = next(node for node in graph.node if node.op_type == "Loop")
    assert loop.input[0] == ""  # no trip count: the condition alone ends it
    body = next(attribute.g for attribute in loop.attribute if attribute.name == "body")
    assert [node.op_type for node in body.node].count("If") == 1
    _check_feeds(model, result, written, [(torch.randn(3), torch.tensor([7])), (torch.randn(3), torch.tensor([0])),
                                          (torch.full((3,), 60.0), torch.tensor([4]))])


_RECURRENT = {
    "lstm": (lambda **options: torch.nn.LSTM(4, 5, **options), "LSTM"),
    "gru": (lambda **options: torch.nn.GRU(4, 5, **options), "GRU"),
    "rnn_tanh": (lambda **options: torch.nn.RNN(4, 5, **options), "RNN"),
    "rnn_relu": (lambda **options: torch.nn.RNN(4, 5, nonlinearity="relu", **options), "RNN"),
}


@pytest.mark.parametrize("kind", list(_RECURRENT))
@pytest.mark.parametrize("opset", [9, 14, 20])
def test_recurrent_layers_stay_whole_with_a_dynamic_sequence(kind, opset):
    torch.manual_seed(0)
    build, onnx_op = _RECURRENT[kind]
    model = build(num_layers=2, bidirectional=True).eval()
    result, written = _export(model, (torch.randn(6, 2, 4),), opset, input_names=["x"],
                              dynamic_axes={"x": {0: "sequence", 1: "batch"}})
    assert [node.op_type for node in onnx.load_from_string(written).graph.node].count(onnx_op) == 2  # one per layer
    for shape in ((6, 2, 4), (11, 3, 4), (1, 1, 4)):
        x = torch.randn(shape)
        expected = torch.utils._pytree.tree_leaves(model(x))  # LSTM: (output, (h, c))
        actual = _run(written, {"x": x})
        assert len(actual) == len(expected)
        for got, want in zip(actual, expected, strict=True):
            np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", list(_RECURRENT))
@pytest.mark.parametrize("batch_first", [False, True], ids=["sequence_first", "batch_first"])
def test_a_batch_of_three_stays_dynamic(kind, batch_first):
    # A batch of 3 equals GRU's gate count: splitting the gates inside the traced loop made torch.export fix it.
    torch.manual_seed(0)
    build, _ = _RECURRENT[kind]
    model = build(bidirectional=True, batch_first=batch_first).eval()
    example = torch.randn(3, 2, 4) if batch_first else torch.randn(2, 3, 4)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        _, written = _export(model, (example,), 18, input_names=["x"], dynamic_axes={"x": {0: "a", 1: "b"}})
    # PyTorch's own module refreshing its weight list is nothing the caller can act on: not shown.
    assert not [str(warning.message) for warning in shown if "_flat_weights" in str(warning.message)]
    x = torch.randn(5, 7, 4)
    expected = torch.utils._pytree.tree_leaves(model(x))
    for got, want in zip(_run(written, {"x": x}), expected, strict=True):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-4, atol=1e-5)


class _RunningSum(torch.nn.Module):
    """``torch.ops.higher_order.scan``: a carried running sum of the rows of ``x``, and each step's row scaled by an
    additional input (read from outside the body) stacked."""

    def forward(self, x, bias):
        def step(total, row, scale):
            return [total + row, row * scale]

        final, rows = torch.ops.higher_order.scan(step, [torch.zeros_like(x[0])], [x], additional_inputs=[bias * 2])
        return final, rows


@pytest.mark.parametrize("opset", [9, 20])
def test_torch_scan_becomes_an_onnx_scan_over_the_first_axis(opset):
    model = _RunningSum()
    rows = torch.export.Dim("rows")
    result, written = _export(model, (torch.randn(3, 4), torch.randn(4)), opset,
                              dynamic_shapes={"x": {0: rows}, "bias": None})
    assert [node.op_type for node in onnx.load_from_string(written).graph.node].count("Scan") == 1
    _check_feeds(model, result, written, [(torch.randn(5, 4), torch.randn(4)), (torch.randn(1, 4), torch.randn(4))])


class _ComplexArithmetic(torch.nn.Module):
    """Complex inputs, weights, constants and outputs (held as real views with a trailing axis of 2, as torch.onnx
    holds them): sums, products with a complex number, a complex tensor and a real one, and a magnitude."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.complex(torch.randn(3), torch.randn(3)))

    def forward(self, x, scale):
        shifted = x + torch.complex(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([-1.0, 0.5, 2.0]))
        product = (shifted * self.weight) * (2 - 3j) - x * scale
        return product, product.abs()


@pytest.mark.parametrize("opset", [13, 20])
def test_complex_tensors_are_exported_as_their_real_views(opset):
    model = _ComplexArithmetic()
    x = torch.complex(torch.randn(2, 3), torch.randn(2, 3))
    program, written = _export(model, (x, torch.randn(2, 3)), opset)
    assert [i.type.tensor_type.elem_type for i in onnx.load_from_string(written).graph.input] == [onnx.TensorProto.FLOAT] * 2
    for feeds in [(x, torch.randn(2, 3)), (torch.complex(torch.randn(2, 3), torch.randn(2, 3)), torch.randn(2, 3))]:
        product, magnitude = model(*feeds)
        got = program(*feeds)  # the program converts a complex argument into its real view
        np.testing.assert_allclose(got[0].numpy(), torch.view_as_real(product).detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1].numpy(), magnitude.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_an_op_on_complex_tensors_with_no_real_view_form_is_refused():
    with pytest.raises(UnsupportedOperatorError, match="aten::exp on complex tensors"):
        _export(_Unary(torch.exp), (torch.complex(torch.randn(3), torch.randn(3)),), 20)


class _Unary(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class _Float4Weights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        # bytes 0x21, 0xA7: two 4-bit floats each, the first in the low bits: 0.5, 1.0, then 6.0, -1.0
        self.register_buffer("packed", torch.tensor([0x21, 0xA7], dtype=torch.uint8).view(torch.float4_e2m1fn_x2))

    def forward(self, x):
        return self.packed, x + 1


def test_float4_weights_are_float4e2m1_with_each_4_bit_float_counted():
    import onnx.reference

    program = exporter.export(_Float4Weights(), (torch.randn(2),), dynamo=True, opset_version=23)
    output = program.model_proto.graph.output[0]
    assert output.type.tensor_type.elem_type == onnx.TensorProto.FLOAT4E2M1
    assert [d.dim_value for d in output.type.tensor_type.shape.dim] == [4]
    packed, _ = onnx.reference.ReferenceEvaluator(program.model_proto).run(None, {"x": np.zeros(2, np.float32)})
    assert packed.astype(np.float32).tolist() == [0.5, 1.0, 6.0, -1.0]
