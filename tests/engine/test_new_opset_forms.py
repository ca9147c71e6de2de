"""The ops of opsets 23-26 that the export writes, each from its boundary opset and only where it computes what
PyTorch does, through both captures: GroupNormalization-21, RMSNormalization-23, Attention-23, CumProd-26,
BitCast-26. Below the boundary
the decomposed form (or a refusal naming the opset). Values are checked against PyTorch on ONNX Runtime, at the
example's sizes and at others along the dynamic axes."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

import exporter
from exporter.errors import UnsupportedOperatorError


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _export(fn, args, opset, dynamo, axes=None):
    """The exported model's op types, and its outputs on ``args`` (ONNX Runtime) beside PyTorch's."""
    names = [f"x{i}" for i in range(len(args))]
    buffer = io.BytesIO()
    exporter.export(_Fn(fn), tuple(args), buffer, opset_version=opset, dynamo=dynamo, input_names=names,
                    dynamic_axes=axes or {})
    ops = {node.op_type for node in onnx.load_from_string(buffer.getvalue()).graph.node}
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    return ops, session, names


def _check(fn, args, opset, dynamo, other_args=None, axes=None):
    ops, session, names = _export(fn, args, opset, dynamo, axes)
    for feed in [args] + ([other_args] if other_args else []):
        got = session.run(None, {n: a.numpy() for n, a in zip(names, feed, strict=True)})[0]
        with torch.no_grad():
            expected = fn(*feed).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    return ops


def _qkv(batch, q_heads, kv_heads, length, source):
    return [torch.randn(batch, q_heads, length, 8), torch.randn(batch, kv_heads, source, 8),
            torch.randn(batch, kv_heads, source, 8)]


_QKV_AXES = {"x0": {0: "b", 2: "l"}, "x1": {0: "b", 2: "s"}, "x2": {0: "b", 2: "s"}}


@pytest.mark.parametrize("dynamo", [False, True])
def test_group_norm_is_group_normalization_21_scaling_per_channel(dynamo):
    norm = torch.nn.GroupNorm(2, 4)
    torch.nn.init.uniform_(norm.weight, 0.5, 1.5)
    torch.nn.init.uniform_(norm.bias, -1.0, 1.0)
    args, other, axes = [torch.randn(2, 4, 3, 3)], [torch.randn(3, 4, 5, 2)], {"x0": {0: "b", 2: "h", 3: "w"}}
    assert "GroupNormalization" not in _check(norm, args, 20, dynamo, other, axes)
    assert "GroupNormalization" in _check(norm, args, 21, dynamo, other, axes)


@pytest.mark.parametrize("dynamo", [False, True])
def test_rms_norm_is_rms_normalization_from_23(dynamo):
    norm = torch.nn.RMSNorm(8)
    torch.nn.init.uniform_(norm.weight, 0.5, 1.5)
    fn = norm  # a submodule of the exported module: its weight is a parameter, not a traced constant
    args, other = [torch.randn(2, 3, 8)], [torch.randn(4, 5, 8)]
    axes = {"x0": {0: "b", 1: "t"}}
    assert "RMSNormalization" not in _check(fn, args, 22, dynamo, other, axes)
    assert "RMSNormalization" in _check(fn, args, 23, dynamo, other, axes)


@pytest.mark.parametrize("dynamo", [False, True])
def test_attention_from_23_with_a_fully_masked_query_giving_0_as_pytorch(dynamo):
    def fn(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def args(batch, length, source):
        mask = torch.rand(batch, 1, length, source) > 0.4
        mask[:, :, 0] = False  # the first query attends to nothing: PyTorch gives it 0
        return [*_qkv(batch, 2, 2, length, source), mask]

    axes = {**_QKV_AXES, "x3": {0: "b", 2: "l", 3: "s"}}
    first, other = args(2, 3, 5), args(3, 4, 6)
    assert float(fn(*first)[:, :, 0].abs().max()) == 0.0
    assert "Attention" not in _check(fn, first, 22, dynamo, other, axes)
    assert "Attention" in _check(fn, first, 23, dynamo, other, axes)


@pytest.mark.parametrize("dynamo", [False, True])
def test_grouped_query_attention_is_attention_from_23_and_refused_below_naming_it(dynamo):
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True)  # noqa: E731
    first, other = _qkv(2, 6, 2, 4, 4), _qkv(3, 6, 2, 5, 5)
    assert "Attention" in _check(fn, first, 23, dynamo, other, _QKV_AXES)
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 23"):
        _export(fn, first, 22, dynamo)


@pytest.mark.parametrize("dynamo", [False, True])
def test_attention_keeps_the_decomposed_form_where_onnx_runtime_s_attention_differs(dynamo):
    """A float mask holding the type's lowest value: ONNX Runtime 1.31's Attention gives a query masked by it
    everywhere 0, PyTorch (and onnx.reference) the values' mean. And 3-D inputs, which Attention reads otherwise."""
    def masked(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    mask = torch.zeros(3, 5)
    mask[0] = torch.finfo(torch.float32).min
    assert "Attention" not in _check(masked, [*_qkv(2, 2, 2, 3, 5), mask], 26, dynamo)
    flat = [t.flatten(0, 1) for t in _qkv(2, 2, 2, 3, 5)]
    assert "Attention" not in _check(F.scaled_dot_product_attention, flat, 26, dynamo)


@pytest.mark.parametrize("dynamo", [False, True])
def test_cumprod_is_cumprod_26_along_an_axis_of_any_length(dynamo):
    fn = lambda x: torch.cumprod(x, 1)  # noqa: E731
    args, other = [torch.rand(3, 5) + 0.5], [torch.rand(2, 9) + 0.5]
    assert "CumProd" in _check(fn, args, 26, dynamo, other, {"x0": {0: "n", 1: "t"}})
    assert "CumProd" not in _check(fn, args, 25, dynamo)
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 26"):
        _export(fn, args, 25, dynamo, {"x0": {1: "t"}})


def test_silu_stays_mul_sigmoid_at_24_where_swish_is_slower_on_onnx_runtime():
    """Swish-24 runs 1.3-2.3x slower than x * Sigmoid(x) on ONNX Runtime 1.31's CPU provider (which fuses the
    pair), measured: the pair stays."""
    ops = _check(F.silu, [torch.randn(3, 4)], 24, True)
    assert "Swish" not in ops and {"Sigmoid", "Mul"} <= ops


def test_view_dtype_is_bitcast_26_from_torch_export_bit_exact():
    fn = lambda x: x.view(torch.int32)  # noqa: E731
    _, session, names = _export(fn, [torch.randn(3, 4)], 26, True, {"x0": {0: "n"}})
    x = torch.randn(5, 4) * 1e3
    assert np.array_equal(session.run(None, {"x0": x.numpy()})[0], fn(x).numpy())
    with pytest.raises(UnsupportedOperatorError, match="BitCast: needs opset >= 26"):
        _export(fn, [torch.randn(3, 4)], 25, True)
    with pytest.raises(UnsupportedOperatorError, match="different element sizes"):
        _export(lambda x: x.view(torch.int16), [torch.randn(3, 4)], 26, True)


@pytest.mark.parametrize("dynamo", [False, True])
def test_a_random_op_at_22_is_refused_naming_21_where_onnx_runtime_has_no_kernel(dynamo):
    fn = lambda x: torch.rand_like(x) + x  # noqa: E731
    _export(fn, [torch.randn(3)], 21, dynamo)
    with pytest.raises(UnsupportedOperatorError, match="no kernel for RandomUniform.*-22.*export at opset 21"):
        _export(fn, [torch.randn(3)], 22, dynamo)
