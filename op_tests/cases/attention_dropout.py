"""Cases for scaled_dot_product_attention with dropout (random in PyTorch whatever the module's mode): the
decomposed form with a training-mode Dropout on the weights (opset 12), compared by distribution as the random ops
are (see random.py); with grouped-query heads (opset 23, refused below) the key/value heads are repeated for the
decomposed form. Each output holds a few thousand values. Size variant 1 adds a batch row."""

import torch
import torch.nn.functional as F

from op_tests.harness import OpCase


def _qkv(k, query_heads=4, heads=4):
    generator = torch.Generator().manual_seed(0)
    return (torch.randn(2 + k, query_heads, 16, 16, generator=generator),
            torch.randn(2 + k, heads, 16, 16, generator=generator), torch.randn(2 + k, heads, 16, 16, generator=generator))


CASES = [
    OpCase("scaled_dot_product_attention", _qkv, sample="dropout", min_opset=12, compare="distribution",
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, dropout_p=0.3)),
    OpCase("scaled_dot_product_attention", lambda k: _qkv(k, heads=2), sample="dropout_grouped_heads", min_opset=23,
           compare="distribution",
           fn=lambda q, kk, v: F.scaled_dot_product_attention(q, kk, v, dropout_p=0.2, enable_gqa=True, is_causal=True)),
]
