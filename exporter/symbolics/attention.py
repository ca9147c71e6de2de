"""Attention and embeddings: scaled_dot_product_attention, the fused multi-head-attention and transformer
encoder kernels that PyTorch's fast path records in eval mode, embedding and embedding_bag.

There is no attention op in ONNX opsets 7-16, so attention is written out as MatMul/Softmax/MatMul. Softmax
before opset 13 flattens the input to 2-D around its axis, which for the last axis is exactly a row-wise
softmax, so the same form serves every opset. A boolean mask (True = attend) becomes the additive mask
log(mask): 0 where attended, -inf where not, which needs neither Where (opset 9) nor a finite stand-in for -inf.

A query whose every key is masked differs between PyTorch's kernels: scaled_dot_product_attention (and
``aten::_safe_softmax``) gives that row weights of 0, so its output is 0, while nn.MultiheadAttention's kernels
give NaN as a plain softmax over -inf does. Each export follows its kernel (``safe_softmax``).

From opset 23 scaled_dot_product_attention is ONNX's Attention where that op states the call exactly: 4-D inputs,
no mask, ``is_causal`` (top-left aligned in both), or a boolean mask (True = attend in both); grouped-query heads
(``enable_gqa``) too. ONNX Runtime's and onnx.reference's Attention both give a fully masked query 0, as PyTorch
does (measured with ONNX Runtime 1.31.1). A float mask stays decomposed: ONNX Runtime's Attention takes a mask
value equal to the type's lowest (transformers' mask value) for -inf, so a query whose every key holds it gets 0
where PyTorch (and onnx.reference) average the values. So do 3-D inputs (Attention reads 3-D as heads packed in the
last axis), dropout (a training-mode Dropout's keep mask on the weights, from opset 12; grouped heads repeated for
it) and types other than float, float16 and double.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from exporter import dtypes
from exporter.dtypes import BOOL, INT64
from exporter.lowering.activations import safe_softmax
from exporter.lowering.comparison import equal
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    reduce_op,
    require_opset,
    require_rank,
    reshape,
    scalar_like,
    slice_op,
    squeeze,
    torch_dtype_arg,
    unsqueeze,
)
from exporter.lowering.normalization import standardize
from exporter.lowering.reductions import vector_norm
from exporter.lowering.shape import arange_indices, position_compare_type
from exporter.registry import parse_args, symbolic, unsupported


# -- scaled dot-product attention ------------------------------------------------------------------------------
def attend(g, query, key, value, additive_mask=None, scale=None, safe=False, dropout_p=0.0):
    """softmax(query @ key^T * scale + mask) @ value over the last two axes, and the attention weights; with
    ``safe``, a query whose every score is -inf (every key masked) gets weights of 0 (``safe_softmax``); with
    ``dropout_p``, the weights go through a training-mode Dropout first, as PyTorch's math kernel does."""
    key_rank = require_rank(g, key)  # query and key may differ in rank: their batch dims broadcast
    key_t = g.op("Transpose", key, perm_i=list(range(key_rank - 2)) + [key_rank - 1, key_rank - 2])
    scores = g.op("MatMul", query, key_t)
    scores = g.op("Mul", scores, _scale(g, query, scale))
    if additive_mask is not None:
        scores = g.op("Add", scores, additive_mask)
    rank = max(require_rank(g, query), key_rank)
    if safe:
        weights = safe_softmax(g, g.set_type(scores, dtype=g.dtype(query), shape=(None,) * rank), rank - 1)
    else:
        weights = g.op("Softmax", scores, axis_i=rank - 1)
    if dropout_p > 0:
        weights = _dropout(g, weights, dropout_p)
    return g.op("MatMul", weights, value), weights


_DROPOUT_TRAINING_MODE_OPSET = 12


def _dropout(g, weights, p: float):
    """PyTorch's ``dropout(weights, p, train=True)``: each weight kept with probability 1 - p and scaled by
    1 / (1 - p); p = 1 drops every weight (zeros, not 0 / 0). The keep mask is the second output of a training-mode
    Dropout (opset 12; the random ops' RandomUniformLike has no ONNX Runtime kernel from 22): ONNX Runtime 1.31's
    basic graph optimizations delete a Dropout whose mask is unread between Softmax and MatMul, whatever its
    ``training_mode`` (measured: attention weights came back undropped), so the mask is read and applied."""
    require_opset(g, _DROPOUT_TRAINING_MODE_OPSET, "attention dropout (Dropout's training_mode)")
    if p >= 1:
        return g.op("Mul", weights, scalar_like(g, 0.0, weights))
    _, keep = g.op("Dropout", weights, g.const(p, g.dtype(weights)), g.const(True), outputs=2)
    keep.dtype, keep.shape = BOOL, g.shape(weights)
    out = g.op("Mul", g.op("Mul", weights, cast(g, keep, g.dtype(weights))), scalar_like(g, 1.0 / (1.0 - p), weights))
    out.dtype, out.shape = g.dtype(weights), g.shape(weights)
    return out


def _scale(g, query, scale):
    """``scale`` or 1/sqrt(embedding size), computed in-graph when that size is dynamic."""
    if scale is not None:
        return scalar_like(g, scale, query)
    size = dim_size(g, query, -1)
    if isinstance(size, int):
        return scalar_like(g, 1.0 / math.sqrt(size), query)
    return g.op("Reciprocal", g.op("Sqrt", cast(g, size, g.dtype(query))))


def additive_mask(g, mask, like, attend_where_true=True):
    """A float mask to add to the scores: float masks as they are, boolean ones as 0 / -inf. A mask the static
    export computed (or the scores' own ``like``) may be a constant torch tensor, whose ``dtype`` is torch's: ONNX
    types come from ``g.dtype``."""
    if g.dtype(mask) != BOOL:
        return cast(g, mask, g.dtype(like))
    keep = mask if attend_where_true else g.op("Not", mask)
    return g.op("Log", cast(g, keep, g.dtype(like)))


def causal_mask(g, query, key):
    """The boolean lower-triangular (L, S) mask of is_causal: position i attends to positions j <= i."""
    length, source = dim_size(g, query, -2), dim_size(g, key, -2)
    if isinstance(length, int) and isinstance(source, int):
        return g.const(np.tril(np.ones((length, source), dtype=np.bool_)))
    require_opset(g, 11, "is_causal with dynamic sequence lengths")
    rows = unsqueeze(g, _arange(g, length), [1])
    columns = unsqueeze(g, _arange(g, source), [0])
    return g.op("Not", g.op("Greater", columns, rows))


def _arange(g, size):
    return g.op("Range", g.const(0), cast(g, size, INT64), g.const(1))


@symbolic("aten::scaled_dot_product_attention")
@parse_args("v", "v", "v", "v", "f", "b", "v", "b")
def scaled_dot_product_attention(g, query, key, value, attn_mask, dropout_p, is_causal, scale=None, enable_gqa=False):
    """The decomposed form. Dropout (random in PyTorch whatever the module's mode) is a training-mode Dropout on the
    weights, compared by distribution as every random op."""
    if enable_gqa and _head_count(g, query) != _head_count(g, key):
        raise unsupported(g.op_kind, g.opset, "grouped-query attention (enable_gqa with fewer key/value heads than "
                                              "query heads) needs opset >= 23, ONNX's Attention")
    mask = causal_mask(g, query, key) if is_causal else attn_mask
    added = additive_mask(g, mask, query) if mask is not None else None
    out, _ = attend(g, query, key, value, added, constant_value(scale), safe=True, dropout_p=dropout_p)
    return out


@symbolic("aten::scaled_dot_product_attention", since=23)
@parse_args("v", "v", "v", "v", "f", "b", "v", "b")
def scaled_dot_product_attention_op(g, query, key, value, attn_mask, dropout_p, is_causal, scale=None,
                                    enable_gqa=False):
    """Attention-23 where it states the call exactly (see the module docstring), else the decomposed form."""
    if dropout_p > 0 or not _attention_states(g, query, key, value, attn_mask):
        if enable_gqa:
            key, value = (_repeat_heads(g, x, _head_count(g, query)) for x in (key, value))
        return scaled_dot_product_attention.__wrapped__(g, query, key, value, attn_mask, dropout_p, is_causal, scale,
                                                        False)
    scale = constant_value(scale)
    attrs = {"is_causal_i": int(bool(is_causal)), **({} if scale is None else {"scale_f": float(scale)})}
    masks = [_mask_rows_of_query(g, attn_mask, query)] if attn_mask is not None and not is_causal else []
    out = g.op("Attention", query, key, value, *masks, **attrs)
    dims = g.dims(query) or [None] * 4
    out.dtype, out.shape = g.dtype(query), (*dims[:3], (g.dims(value) or [None] * 4)[3])
    return out


def _repeat_heads(g, x, query_heads):
    """``x.repeat_interleave(query_heads // heads, dim=-3)``, as PyTorch's enable_gqa shares each key/value head with
    a group of query heads: [B, H, S, E] -> [B, H, G, S, E] (Expand) -> [B, H * G, S, E]. Attention-23 states this
    itself; here it is the decomposed form's (dropout, a float mask)."""
    heads = _head_count(g, x)
    if heads == query_heads:
        return x
    if not isinstance(heads, int) or not isinstance(query_heads, int) or require_rank(g, x) != 4:
        raise unsupported(g.op_kind, g.opset, "grouped-query attention in the decomposed form needs 4-D inputs with "
                                              "head counts known at export time")
    grouped = g.op("Expand", unsqueeze(g, x, [2]), g.const([1, 1, query_heads // heads, 1, 1], torch.int64))
    out = reshape(g, grouped, [0, query_heads, dim_size(g, x, 2), dim_size(g, x, 3)])
    out.dtype = g.dtype(x)
    return out


def _mask_rows_of_query(g, mask, query):
    """``mask`` with one row per query: ONNX Runtime 1.31's Attention refuses a mask whose second-last dim is not the
    query length ("inconsistent q_sequence_length"), where PyTorch broadcasts one row (transformers' decode-step and
    padding masks are [batch, 1, 1, S]), so the rows are expanded unless the export knows they are already there."""
    rows, length = (g.dims(mask) or [None, None])[-2], dim_size(g, query, 2)
    if isinstance(length, int) and rows == length:
        return mask
    rank = require_rank(g, mask)
    target = [g.const([1] * (rank - 2), torch.int64), reshape(g, cast(g, length, INT64), [1]), g.const([1], torch.int64)]
    out = g.op("Expand", mask, g.op("Concat", *target, axis_i=0))
    out.dtype = g.dtype(mask)
    return out


_ATTENTION_TYPES = (dtypes.FLOAT, dtypes.DOUBLE, dtypes.FLOAT16)


def _attention_states(g, query, key, value, attn_mask) -> bool:
    """Whether Attention-23 computes what PyTorch does for these operands: 4-D query, key and value of one type it
    takes, and no mask or a boolean one of rank 2 to 4 (numpy broadcasting to [batch, heads, L, S])."""
    if any(g.rank(x) != 4 or g.dtype(x) != g.dtype(query) for x in (query, key, value)):
        return False
    if g.dtype(query) not in _ATTENTION_TYPES:
        return False
    return attn_mask is None or (g.dtype(attn_mask) == BOOL and g.rank(attn_mask) in (2, 3, 4))


@symbolic("aten::_safe_softmax")
@parse_args("v", "i", "v")
def _safe_softmax(g, self, dim, dtype=None):
    requested = torch_dtype_arg(dtype)
    if requested is not None:
        self = cast(g, self, dtypes.onnx_from_torch(requested))
    return safe_softmax(g, self, dim)


def _head_count(g, x):
    dims = g.dims(x)
    return dims[-3] if dims is not None and len(dims) >= 3 else None


# -- PyTorch's fused fast paths (eval mode, no grad) -----------------------------------------------------------
def _linear(g, x, weight, bias):
    out = g.op("MatMul", x, g.op("Transpose", weight, perm_i=[1, 0]))
    return g.op("Add", out, bias) if bias is not None else out


def _rows(g, x, start, stop):
    return slice_op(g, x, [0], [start], [stop])


def multi_head_attention(g, query, key, value, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                         mask=None, mask_type=None):
    """Batch-first multi-head attention with packed in-projection weights; returns (output, per-head weights)."""
    head_dim = embed_dim // num_heads

    def heads(x, index):
        rows = (index * embed_dim, (index + 1) * embed_dim)
        projected = _linear(g, x, _rows(g, qkv_weight, *rows), _rows(g, qkv_bias, *rows))
        split = reshape(g, projected, [0, 0, num_heads, head_dim])
        return g.set_type(g.op("Transpose", split, perm_i=[0, 2, 1, 3]), shape=(None, num_heads, None, head_dim))

    added = None
    if mask is not None:
        # MHA's boolean masks mark the positions to ignore; a key-padding mask (type 1) is (batch, source).
        added = additive_mask(g, mask, query, attend_where_true=False)
        if mask_type == 1:
            added = unsqueeze(g, added, [1, 2])
    attended, weights = attend(g, heads(query, 0), heads(key, 1), heads(value, 2), added, 1.0 / math.sqrt(head_dim))
    merged = reshape(g, g.op("Transpose", attended, perm_i=[0, 2, 1, 3]), [0, 0, embed_dim])
    return _linear(g, merged, proj_weight, proj_bias), weights


@symbolic("aten::_native_multi_head_attention")
@parse_args("v", "v", "v", "i", "i", "v", "v", "v", "v", "v", "b", "b", "v")
def native_multi_head_attention(g, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                                proj_bias, mask=None, need_weights=True, average_attn_weights=True, mask_type=None):
    out, weights = multi_head_attention(g, query, key, value, embed_dim, num_head, qkv_weight, qkv_bias,
                                        proj_weight, proj_bias, mask, constant_value(mask_type))
    if average_attn_weights:
        weights = reduce_op(g, "ReduceMean", weights, [1], False)
    return out, weights


@symbolic("aten::_transformer_encoder_layer_fwd")
@parse_args("v", "i", "i", "v", "v", "v", "v", "b", "b", "f", "v", "v", "v", "v", "v", "v", "v", "v", "v", "v")
def transformer_encoder_layer(g, src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                              norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                              ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    """nn.TransformerEncoderLayer's fused eval kernel: self-attention and feed-forward blocks with residuals."""
    if use_gelu:
        require_opset(g, 9, "the exact GELU activation (Erf)")

    def norm(x, weight, bias):
        normalized, _, _ = standardize(g, x, [require_rank(g, src) - 1], eps)
        return g.op("Add", g.op("Mul", normalized, weight), bias)

    def self_attention(x):
        out, _ = multi_head_attention(g, x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                      proj_bias, mask, constant_value(mask_type))
        return out

    def feed_forward(x):
        hidden = _linear(g, x, ffn_weight_1, ffn_bias_1)
        hidden = _gelu(g, hidden) if use_gelu else g.op("Relu", hidden)
        return _linear(g, hidden, ffn_weight_2, ffn_bias_2)

    x = src
    if norm_first:
        x = g.op("Add", x, self_attention(norm(x, norm_weight_1, norm_bias_1)))
        return g.op("Add", x, feed_forward(norm(x, norm_weight_2, norm_bias_2)))
    x = norm(g.op("Add", x, self_attention(x)), norm_weight_1, norm_bias_1)
    return norm(g.op("Add", x, feed_forward(x)), norm_weight_2, norm_bias_2)


def _gelu(g, x):
    """x * (1 + erf(x / sqrt(2))) / 2, the exact GELU."""
    erf = g.op("Erf", g.op("Mul", x, scalar_like(g, 1 / math.sqrt(2), x)))
    return g.op("Mul", g.op("Mul", x, scalar_like(g, 0.5, x)), g.op("Add", erf, scalar_like(g, 1.0, x)))


# -- embeddings ----------------------------------------------------------------------------------------------------
@symbolic("aten::embedding")
def embedding(g, weight, indices, padding_idx=None, scale_grad_by_freq=None, sparse=None):
    """Rows of ``weight``; padding_idx only affects gradients, so inference ignores it."""
    return g.op("Gather", weight, indices, axis_i=0)


_BAG_REDUCTIONS = {0: "ReduceSum", 1: "ReduceMean", 2: "ReduceMax"}


@symbolic("aten::embedding_bag")
def embedding_bag(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Bags of fixed size (2-D indices, no offsets) reduce one axis; 1-D indices with offsets build a
    bag-membership matrix and reduce through it. An index equal to ``padding_idx`` belongs to no bag: it is not
    summed, counted or maxed. None means no padding; a negative padding_idx counts from the end of ``weight``."""
    mode = int(constant_value(mode))
    padding = None if padding_idx is None or constant_value(padding_idx) is None else int(constant_value(padding_idx))
    rows = g.op("Gather", weight, indices, axis_i=0)
    if per_sample_weights is not None:
        weights = cast(g, per_sample_weights, rows.dtype)
        rows = g.op("Mul", rows, unsqueeze(g, weights, [require_rank(g, weights)]))
    kept = None if padding is None else g.op("Not", equal(g, indices, _padding_row(g, weight, padding)))
    if require_rank(g, indices) == 2 and kept is None:
        output = reduce_op(g, _BAG_REDUCTIONS[mode], rows, [1], False)
    elif require_rank(g, indices) == 2:
        output = _reduce_bags(g, rows, cast(g, kept, rows.dtype), mode)
    else:
        membership = _bag_membership(g, indices, offsets, bool(constant_value(include_last_offset)))
        if kept is not None:
            membership = g.op("And", membership, unsqueeze(g, kept, [0]))
        output = _reduce_bags(g, unsqueeze(g, rows, [0]), cast(g, membership, rows.dtype), mode)
    # The auxiliary outputs (offset2bag, bag sizes, max indices) serve the backward pass only.
    empty = g.const(np.zeros((0,), dtype=np.int64))
    return output, empty, empty, empty


def _padding_row(g, weight, padding: int):
    if padding >= 0:
        return g.const(np.array(padding, dtype=np.int64))
    rows = dim_size(g, weight, 0)
    if isinstance(rows, int):
        return g.const(np.array(rows + padding, dtype=np.int64))
    return g.op("Add", rows, g.const(np.array(padding, dtype=np.int64)))


def _bag_membership(g, indices, offsets, include_last_offset):
    """[B, N] booleans: bag b holds the index positions i with offsets[b] <= i < offsets[b + 1]."""
    count = dim_size(g, indices, 0)
    if not isinstance(count, int):
        require_opset(g, 11, "embedding_bag with a dynamic index count")
    compare_type = position_compare_type(g)
    positions = cast(g, g.const(np.arange(count)) if isinstance(count, int) else _arange(g, count), compare_type)
    offsets = cast(g, offsets, compare_type)
    starts = _rows(g, offsets, 0, -1) if include_last_offset else offsets
    ends = _rows(g, offsets, 1, 2**62)
    if not include_last_offset:
        ends = g.op("Concat", ends, cast(g, reshape(g, cast(g, count, INT64), [1]), compare_type), axis_i=0)
    after_start = g.op("Not", g.op("Less", unsqueeze(g, positions, [0]), unsqueeze(g, starts, [1])))
    before_end = g.op("Less", unsqueeze(g, positions, [0]), unsqueeze(g, ends, [1]))
    return g.op("And", after_start, before_end)


def _reduce_bags(g, rows, weights, mode):
    """Reduce ``rows`` [B or 1, N, D] into bags [B, D], row n counting in bag b with weight weights[b, n] (0 or 1)."""
    if mode == 2:
        # Rows outside the bag are pushed to half the lowest finite value (absorbing any real entry) before
        # the max; an empty bag then holds that finite value and is zeroed, giving 0 as PyTorch does.
        lowest = g.const(np.array(np.finfo(dtypes.numpy_from_onnx(rows.dtype)).min / 2), rows.dtype)
        outside = g.op("Mul", g.op("Sub", scalar_like(g, 1.0, weights), unsqueeze(g, weights, [2])), lowest)
        best = reduce_op(g, "ReduceMax", g.op("Add", rows, outside), [1], False)
        nonempty = unsqueeze(g, reduce_op(g, "ReduceMax", weights, [1], False), [1])
        return g.op("Mul", best, nonempty)
    total = squeeze(g, g.op("MatMul", unsqueeze(g, weights, [1]), rows), [1])  # [B, 1, N] @ [B|1, N, D]
    if mode == 0:
        return total
    # An empty bag's mean is 0: divide its zero total by 1 instead of 0.
    sizes = reduce_op(g, "ReduceSum", weights, [1], False)
    empty = g.op("Sub", scalar_like(g, 1.0, sizes), reduce_op(g, "ReduceMax", weights, [1], False))
    return g.op("Div", total, unsqueeze(g, g.op("Add", sizes, empty), [1]))


@symbolic("aten::embedding_renorm_", "aten::embedding_renorm", since=9)
@parse_args("v", "v", "f", "f")
def embedding_renorm_(g, self, indices, max_norm, norm_type):
    """embedding_renorm_(weight, indices, max_norm, norm_type): the weight with every row that ``indices`` name
    and whose norm exceeds max_norm scaled by max_norm / (norm + 1e-7); other rows unchanged (Where: opset 9).
    A float16 weight is scaled in float32, as PyTorch computes its norms and scales."""
    dtype = g.dtype(self)
    if dtypes.opmath_type(dtype) != dtype:
        return cast(g, embedding_renorm_(g, cast(g, self, dtypes.opmath_type(dtype)), indices, max_norm, norm_type),
                    dtype)
    norms = vector_norm(g, self, norm_type, [1], True, None)  # [rows, 1]
    rows = unsqueeze(g, arange_indices(g, dim_size(g, self, 0)), [1])
    named = equal(g, rows, unsqueeze(g, reshape(g, cast(g, indices, INT64), [-1]), [0]))  # [rows, indices]
    named = reduce_op(g, "ReduceMax", cast(g, named, INT64), [1], keepdims=True)
    too_long = g.op("And", cast(g, named, BOOL), g.op("Greater", norms, scalar_like(g, max_norm, norms)))
    scale = g.op("Div", scalar_like(g, max_norm, norms), g.op("Add", norms, scalar_like(g, 1e-7, norms)))
    return g.op("Mul", self, g.op("Where", too_long, scale, scalar_like(g, 1.0, norms)))
