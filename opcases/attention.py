"""Cases for attention and embeddings: scaled_dot_product_attention, nn.MultiheadAttention,
nn.TransformerEncoderLayer, embedding, embedding_bag."""

import torch
import torch.nn.functional as F

from opcases import OpCase


def _qkv(k, batch=2, heads=2, length=4, source=4, size=8):
    return (torch.randn(batch + k, heads, length, size), torch.randn(batch + k, heads, source, size),
            torch.randn(batch + k, heads, source, size))


def _causal_ok_mask(k):
    """A boolean mask where every query attends to at least one key (fully masked rows give NaN)."""
    mask = torch.rand(4, 5) > 0.5
    mask[:, 0] = True
    return mask


class _SelfAttention(torch.nn.Module):
    """nn.MultiheadAttention called as self-attention, which is what PyTorch's fused fast path needs."""

    def __init__(self, batch_first, average=True, with_padding_mask=False):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
        self.average = average
        self.with_padding_mask = with_padding_mask

    def forward(self, x, *padding_mask):
        return self.attention(x, x, x, average_attn_weights=self.average,
                              key_padding_mask=padding_mask[0] if padding_mask else None)


class _CrossAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=4)

    def forward(self, query, key, value):
        return self.attention(query, key, value)


_BAG_WEIGHT = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))  # seeded: the same weights in every process


def _padding_mask(k):
    mask = torch.zeros(2 + k, 5, dtype=torch.bool)
    mask[0, -2:] = True
    return mask


# nn.EmbeddingBag flattens 2-D input and builds its offsets with arange, so the 2-D cases are the static
# form of the offsets path; its dynamic form is exercised by the 1-D "offsets_*" cases (opset 11, Range).
CASES = [
    OpCase("scaled_dot_product_attention", lambda k: _qkv(k), fn=F.scaled_dot_product_attention),
    OpCase("scaled_dot_product_attention", lambda k: _qkv(k, length=5, source=5), sample="causal",
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, is_causal=True)),
    OpCase("scaled_dot_product_attention", lambda k: _qkv(k, length=4 + k, source=4 + k), sample="causal_dynamic_length",
           dynamic_min_opset=11, fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, is_causal=True)),
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k, source=5), _causal_ok_mask(k)), sample="bool_mask",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m)),
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k, source=5), torch.randn(4, 5)), sample="float_mask_scale",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m, scale=0.3)),
    OpCase("scaled_dot_product_attention", lambda k: _qkv(k, size=8 + 4 * k), sample="dynamic_embedding",
           fn=F.scaled_dot_product_attention),
    OpCase("scaled_dot_product_attention", lambda k: tuple(t[:, 0] for t in _qkv(k)), sample="3d",
           fn=F.scaled_dot_product_attention),
    OpCase("multi_head_attention", lambda k: (torch.randn(3, 2 + k, 8),), sample="seq_first",
           module=lambda: _SelfAttention(batch_first=False)),
    OpCase("multi_head_attention", lambda k: (torch.randn(2 + k, 3, 8),), sample="fast_path",
           module=lambda: _SelfAttention(batch_first=True)),
    OpCase("multi_head_attention", lambda k: (torch.randn(2 + k, 3, 8),), sample="fast_path_per_head",
           module=lambda: _SelfAttention(batch_first=True, average=False)),
    OpCase("multi_head_attention", lambda k: (torch.randn(2 + k, 5, 8), _padding_mask(k)), sample="padding_mask",
           min_opset=9, module=lambda: _SelfAttention(batch_first=True)),
    OpCase("multi_head_attention", lambda k: (torch.randn(3, 2 + k, 8), torch.randn(5, 2 + k, 6),
                                              torch.randn(5, 2 + k, 4)), sample="cross_kdim_vdim",
           module=_CrossAttention),
    OpCase("transformer_encoder_layer", lambda k: (torch.randn(3, 2 + k, 8),),
           module=lambda: torch.nn.TransformerEncoderLayer(8, 2, 16)),
    OpCase("transformer_encoder_layer", lambda k: (torch.randn(2 + k, 3, 8),), sample="batch_first_gelu_norm_first",
           min_opset=9, module=lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True,
                                                                       norm_first=True)),
    OpCase("transformer_encoder", lambda k: (torch.randn(2 + k, 3, 8),), sample="two_layers",
           module=lambda: torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                                      enable_nested_tensor=False)),
    OpCase("embedding", lambda k: (torch.randint(0, 10, (2 + k, 3)),), module=lambda: torch.nn.Embedding(10, 4)),
    OpCase("embedding", lambda k: (torch.randint(0, 10, (5 + k,)).int(),), sample="int32_padding_idx",
           module=lambda: torch.nn.Embedding(10, 4, padding_idx=0)),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (2 + k, 3)),), sample="2d_mean",
           dynamic=False, module=lambda: torch.nn.EmbeddingBag(10, 4)),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (2 + k, 3)),), sample="2d_max",
           dynamic=False, module=lambda: torch.nn.EmbeddingBag(10, 4, mode="max")),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (7 + k,)), torch.tensor([0, 2, 2, 5])), sample="offsets_sum",
           dynamic_min_opset=11, module=lambda: torch.nn.EmbeddingBag(10, 4, mode="sum")),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (7 + k,)), torch.tensor([0, 2, 2, 5])), sample="offsets_mean",
           dynamic_min_opset=11, module=lambda: torch.nn.EmbeddingBag(10, 4, mode="mean")),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (7 + k,)), torch.tensor([0, 2, 2, 5])), sample="offsets_max",
           dynamic_min_opset=11, module=lambda: torch.nn.EmbeddingBag(10, 4, mode="max")),
    OpCase("embedding_bag", lambda k: (torch.randint(0, 10, (7,)), torch.tensor([0, 3, 3, 7]), torch.rand(7)),
           sample="include_last_offset_weights",
           fn=lambda i, o, w: F.embedding_bag(i, _BAG_WEIGHT, o, mode="sum", per_sample_weights=w,
                                              include_last_offset=True)),
    # padding_idx: those indices belong to no bag (a bag of padding only is empty); a negative one counts from the end.
    OpCase("embedding_bag", lambda k: (torch.tensor([[2, 2, 2], [1, 2, 3]] + [[4, 2, 5]] * k),), sample="2d_mean_padding",
           dynamic=False,
           module=lambda: torch.nn.EmbeddingBag(10, 4, mode="mean", padding_idx=2)),
    OpCase("embedding_bag", lambda k: (torch.tensor([9, 1, 9, 3, 9, 4, 5] + [9] * k), torch.tensor([0, 2, 4, 5])),
           sample="offsets_max_negative_padding", dynamic_min_opset=11,
           module=lambda: torch.nn.EmbeddingBag(10, 4, mode="max", padding_idx=-1)),
    OpCase("embedding_bag", lambda k: (torch.tensor([0, 1, 0, 3, 0, 4, 5] + [0] * k), torch.tensor([0, 2, 4, 5])),
           sample="offsets_mean_padding", dynamic_min_opset=11,
           module=lambda: torch.nn.EmbeddingBag(10, 4, mode="mean", padding_idx=0)),
]

# nn.Embedding(max_norm=...) renormalizes the rows it looks up first (embedding_renorm_, Where: opset 9).
CASES += [
    OpCase("embedding_renorm_", lambda k: (torch.tensor([2, 1, 2] + [6] * k),), sample="max_norm", min_opset=9,
           module=lambda: torch.nn.Embedding(7, 5, max_norm=0.2)),
    OpCase("embedding_renorm_", lambda k: (torch.tensor([[4, 3], [4, 2]] + [[0, 1]] * k),), sample="l1", min_opset=9,
           module=lambda: torch.nn.Embedding(7, 5, max_norm=0.5, norm_type=1.0)),
]

# A 3-D query against 4-D keys and values: the batch dims broadcast (OpInfo scaled_dot_product_attention sample 16).
CASES += [
    OpCase("scaled_dot_product_attention", lambda k: (torch.randn(4, 3 + k, 8), torch.randn(2, 4, 6, 8),
                                                      torch.randn(2, 4, 6, 8)),
           sample="query_rank_3", fn=F.scaled_dot_product_attention),
]


def _fully_masked_row_mask(k, batch=2):
    """A [batch, 1, L, S] boolean mask with the first query of every batch masked from every key: PyTorch gives that
    query 0, and so must the export (Attention-23 from opset 23, the safe softmax below it)."""
    mask = torch.rand(batch + k, 1, 4, 5, generator=torch.Generator().manual_seed(k)) > 0.4
    mask[:, :, 0] = False
    mask[:, :, 1:, 0] = True
    return mask


# Attention-23's forms (opset 23): the decomposed one below. Grouped-query heads need Attention: below 23 refused.
CASES += [
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k, source=5), _fully_masked_row_mask(k)),
           sample="bool_mask_4d_fully_masked_row",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m)),
    OpCase("scaled_dot_product_attention", lambda k: (torch.randn(2 + k, 6, 3 + k, 8), *_qkv(k, source=5 + k)[1:]),
           sample="grouped_heads", min_opset=23,
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, enable_gqa=True)),
    OpCase("scaled_dot_product_attention", lambda k: (torch.randn(2 + k, 6, 5, 8), *_qkv(k, length=5, source=5)[1:]),
           sample="grouped_heads_causal_scale", min_opset=23,
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, is_causal=True, scale=0.2, enable_gqa=True)),
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k, source=5), torch.rand(4, 5) > 0.3),
           sample="enable_gqa_equal_heads_mask",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m, enable_gqa=True)),
]

# A key-padding mask of one row, [batch, 1, 1, S], broadcast over the queries as transformers passes it (ONNX
# Runtime's Attention takes only a mask with a row per query: the export expands it).
CASES += [
    OpCase("scaled_dot_product_attention",
           lambda k: (*_qkv(k, source=5 + k), torch.arange(5 + k).expand(2 + k, 1, 1, 5 + k) < 4 + k),
           sample="bool_key_padding_mask_one_row",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m)),
]

# Dropout (random in PyTorch whatever the module's mode): the decomposed form with a training-mode Dropout on the
# weights (opset 12), compared by distribution as the random ops are (see random.py); with grouped-query heads (opset
# 23, refused below) the key/value heads are repeated for the decomposed form. Each output holds a few thousand
# values. Size variant 1 adds a batch row.


def _dropout_qkv(k, query_heads=4, heads=4):
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(2 + k, query_heads, 16, 16, generator=generator),
            torch.randn(2 + k, heads, 16, 16, generator=generator), torch.randn(2 + k, heads, 16, 16, generator=generator))


CASES += [
    OpCase("scaled_dot_product_attention", _dropout_qkv, sample="dropout", min_opset=12, compare="distribution",
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, dropout_p=0.3)),
    OpCase("scaled_dot_product_attention", lambda k: _dropout_qkv(k, heads=2), sample="dropout_grouped_heads",
           min_opset=23, compare="distribution",
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, dropout_p=0.2, enable_gqa=True, is_causal=True)),
]
