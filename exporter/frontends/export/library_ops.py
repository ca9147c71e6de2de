"""Decompositions of ops that are not ATen's, for a torch.export program at an opset where the op library has no
symbolic for them:

- a custom op a library registers with ``torch.library.custom_op`` (its Python implementation, as
  ``torch.library`` holds it) is traced through that implementation, where it can be traced;
- ``onnx::RotaryEmbedding`` and ``onnx::Attention`` (``torch.onnx.ops``), whose ONNX ops need opset 23, are computed
  below it by our own PyTorch code for the ONNX operators' definitions (the implementations torch.onnx registers for
  them are torch.onnx's code, which the engine does not run).
"""

from __future__ import annotations

import math

import torch

from exporter import dtypes


def library_implementation(op: torch._ops.OpOverload):
    """The Python implementation ``torch.library.custom_op`` registered for ``op`` (None for another kind of op, or
    an op of the namespaces whose ops the engine converts itself)."""
    namespace = op.namespace
    if namespace in ("aten", "prims", "prim", "onnx", "onnx_symbolic"):
        return None
    from torch._library import custom_ops

    definition = getattr(custom_ops, "OPDEFS", {}).get(op._schema.name)
    if definition is None:
        return None
    backends = getattr(definition, "_backend_fns", {})
    return backends.get("cpu") or backends.get(None) or getattr(definition, "_init_fn", None)


def onnx_op_decomposition(op: torch._ops.OpOverload):
    """Our PyTorch form of a ``torch.onnx.ops`` ONNX op, None for another op."""
    return _ONNX_OPS.get(op._schema.name)


def rotary_embedding(x, cos_cache, sin_cache, position_ids=None, *, interleaved=False, num_heads=0,
                     rotary_embedding_dim=0):
    """ONNX RotaryEmbedding-23: x (batch, heads, seq, head_size), or (batch, seq, hidden) with ``num_heads``; the first
    ``rotary_embedding_dim`` features of each head (all by default) rotated by the angles of the caches (indexed by
    ``position_ids`` when given), in halves or interleaved pairs."""
    rank = x.dim()
    heads_last = x.transpose(1, 2) if rank == 4 else x.reshape(x.shape[0], x.shape[1], num_heads, -1)
    rotated_size = rotary_embedding_dim or heads_last.shape[-1]
    cos = cos_cache[position_ids] if position_ids is not None else cos_cache
    sin = sin_cache[position_ids] if position_ids is not None else sin_cache
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    rotated, kept = heads_last[..., :rotated_size], heads_last[..., rotated_size:]
    if interleaved:
        first, second = rotated[..., 0::2], rotated[..., 1::2]
    else:
        first, second = rotated[..., :rotated_size // 2], rotated[..., rotated_size // 2:]
    real, imaginary = first * cos - second * sin, first * sin + second * cos
    if interleaved:
        rotated = torch.stack((real, imaginary), dim=-1).flatten(-2)
    else:
        rotated = torch.cat((real, imaginary), dim=-1)
    result = torch.cat((rotated, kept), dim=-1)
    return result.transpose(1, 2) if rank == 4 else result.reshape(x.shape)


def attention(q, k, v, attn_mask=None, past_key=None, past_value=None, *, is_causal=False, kv_num_heads=0,
              q_num_heads=0, qk_matmul_output_mode=0, scale=None, softcap=0.0, softmax_precision=None):
    """ONNX Attention-23: (output, present key, present value, QK output). 3-D inputs are split into heads; the
    past key and value are prepended along the sequence; grouped key/value heads are repeated; Q and K are each scaled
    by sqrt(scale) (1/sqrt(head size) by default); the causal mask is upper-left aligned; a boolean mask says which
    positions take part, a float one is added; ``softcap`` bounds the scores with tanh; the softmax runs in
    ``softmax_precision`` when given; ``qk_matmul_output_mode`` picks the QK output (0 the scaled product, 1 with the
    mask, 2 after the softcap, 3 after the softmax)."""
    three_d = q.dim() == 3
    batch = q.shape[0]
    if three_d:
        q, k, v = (_split_heads(t, heads) for t, heads in ((q, q_num_heads), (k, kv_num_heads), (v, kv_num_heads)))
    present_key = torch.cat((past_key, k), dim=2) if past_key is not None else k.clone()
    present_value = torch.cat((past_value, v), dim=2) if past_value is not None else v.clone()
    groups = q.shape[1] // present_key.shape[1]
    keys = present_key.repeat_interleave(groups, dim=1) if groups != 1 else present_key
    values = present_value.repeat_interleave(groups, dim=1) if groups != 1 else present_value
    root = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    scores = torch.matmul(q * root, (keys * root).transpose(-2, -1))
    qk = scores
    bias = torch.zeros(q.shape[2], keys.shape[2], dtype=q.dtype, device=q.device)
    if is_causal:
        causal = torch.ones(q.shape[2], keys.shape[2], dtype=torch.bool, device=q.device).tril()
        bias = bias.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        bias = bias.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else bias + attn_mask
    scores = scores + bias
    qk = scores if qk_matmul_output_mode == 1 else qk
    if softcap > 0.0:
        scores = softcap * torch.tanh(scores / softcap)
    qk = scores if qk_matmul_output_mode == 2 else qk
    if softmax_precision is not None:
        weights = torch.softmax(scores.to(dtypes.torch_from_onnx(softmax_precision)), dim=-1).to(scores.dtype)
    else:
        weights = torch.softmax(scores, dim=-1)
    qk = weights if qk_matmul_output_mode == 3 else qk
    output = torch.matmul(weights, values)
    if three_d:
        output = output.transpose(1, 2).reshape(batch, q.shape[2], -1)
    return output, present_key, present_value, qk


def _split_heads(x, heads: int):
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(1, 2)


_ONNX_OPS = {"onnx::RotaryEmbedding": rotary_embedding, "onnx::Attention": attention}
