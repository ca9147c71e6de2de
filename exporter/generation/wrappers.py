"""The modules a generation export traces: a transformers model's prefill, decode step and encoder-decoder passes,
each taking and returning its cache as plain tensors ([layer 0 key, layer 0 value, layer 1 key, ...]).

Positions come from the attention mask as ``generate`` computes them (the running count of attended tokens, minus
one; 0 at a padded position), so a left-padded prompt decodes as it does in PyTorch.

Every layer's cache is a plain growing one, sliding-window layers included: a transformers ``DynamicCache`` built
from a model's config keeps a sliding-window layer's last ``window - 1`` positions and counts the tokens seen in a
Python int beside them, which a cache rebuilt from tensors cannot carry (it would count only the window's tokens, and
put the next token at a wrong rotary position). Kept whole, the layer's keys are the model's, and the sliding-window
mask, built from absolute positions, limits attention to the window exactly as the model's own cache does.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

import torch


def cache_tensors(cache: Any) -> list[torch.Tensor]:
    """A transformers cache as [layer 0 key, layer 0 value, layer 1 key, ...]."""
    return [tensor for layer in cache.layers for tensor in (layer.keys, layer.values)]


def growing_cache(tensors: tuple[torch.Tensor, ...] = ()) -> Any:
    """A ``DynamicCache`` of plain full layers (no sliding-window layers: see the module docstring) holding
    ``tensors`` ([layer 0 key, layer 0 value, layer 1 key, ...]); empty for a prefill to start."""
    from transformers import DynamicCache  # type: ignore[import-not-found]

    cache = DynamicCache()
    for layer in range(len(tensors) // 2):
        cache.update(tensors[2 * layer], tensors[2 * layer + 1], layer)
    return cache


def mask_positions(attention_mask: torch.Tensor, by_matmul: bool = False) -> torch.Tensor:
    """``generate``'s positions for a 2-D mask: the count of attended tokens up to each, minus one; 0 where padded.
    The count is a cumsum (ONNX CumSum, opset 11), or with ``by_matmul`` the mask times an upper-triangular matrix
    of ones (exact in float32 for prompts under 2**24 tokens), for opsets below 11."""
    if by_matmul:
        steps = torch.arange(attention_mask.shape[-1], device=attention_mask.device)
        upper = (steps[:, None] <= steps[None, :]).to(torch.float32)
        counts = (attention_mask.to(torch.float32) @ upper).to(torch.int64)
    else:
        counts = attention_mask.long().cumsum(-1)
    return (counts - 1).masked_fill(attention_mask == 0, 0)


def last_position(attention_mask: torch.Tensor) -> torch.Tensor:
    """The new token's position (batch, 1) when the mask's last entry is it: the count of attended tokens, minus 1."""
    return attention_mask.long().sum(-1, keepdim=True) - 1


def takes_positions(model: torch.nn.Module) -> bool:
    """Whether ``model``'s forward takes ``position_ids`` (``generate`` passes them only then)."""
    return "position_ids" in inspect.signature(model.forward).parameters


def _position_kwargs(model: torch.nn.Module, positions: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"position_ids": positions} if takes_positions(model) else {}


class Prefill(torch.nn.Module):
    """(input_ids, attention_mask) -> (logits, *present): the prompt's pass, which starts the cache. With
    ``positions_by_matmul`` its positions take no CumSum (see ``mask_positions``)."""

    def __init__(self, model: torch.nn.Module, positions_by_matmul: bool = False):
        super().__init__()
        self.model = model
        self.positions_by_matmul = positions_by_matmul

    def forward(self, input_ids, attention_mask):
        positions = mask_positions(attention_mask, self.positions_by_matmul)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=growing_cache(),
                         use_cache=True, **_position_kwargs(self.model, positions))
        return (out.logits, *cache_tensors(out.past_key_values))


class DecodeStep(torch.nn.Module):
    """(input_ids, attention_mask, *past) -> (logits, *present): one step (one new token), the cache passed in and
    out as tensors; ``attention_mask`` covers the past and the new token."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=growing_cache(past),
                         use_cache=True, **_position_kwargs(self.model, last_position(attention_mask)))
        return (out.logits, *cache_tensors(out.past_key_values))


# -- encoder-decoder ---------------------------------------------------------------------------------------------
def _encoder_output(hidden_states: torch.Tensor) -> Any:
    """The encoder's states in the form a transformers encoder-decoder takes them (``encoder_outputs=``)."""
    from transformers.modeling_outputs import BaseModelOutput  # type: ignore[import-not-found]

    return BaseModelOutput(last_hidden_state=hidden_states)


class Encoder(torch.nn.Module):
    """(input_ids, attention_mask) -> encoder_hidden_states: the source's pass, run once per generation."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return cast(Any, self.model).get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class FirstDecoderStep(torch.nn.Module):
    """(decoder_input_ids, encoder_attention_mask, encoder_hidden_states) -> (logits, *self-attention present,
    *cross-attention present): the decoder's first pass, which starts its own cache and computes the
    cross-attention keys and values of every layer from the encoder's states."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids, encoder_attention_mask, encoder_hidden_states):
        out = self.model(encoder_outputs=_encoder_output(encoder_hidden_states), attention_mask=encoder_attention_mask,
                         decoder_input_ids=decoder_input_ids, use_cache=True)
        cache = out.past_key_values
        return (out.logits, *cache_tensors(cache.self_attention_cache), *cache_tensors(cache.cross_attention_cache))


class DecoderStep(torch.nn.Module):
    """(decoder_input_ids, encoder_attention_mask, *self-attention past, *cross-attention past) -> (logits,
    *self-attention present): one step, the cross-attention cache read, not recomputed."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids, encoder_attention_mask, *past):
        from transformers import EncoderDecoderCache

        self_past, cross_past = past[:len(past) // 2], past[len(past) // 2:]
        cache = EncoderDecoderCache(growing_cache(self_past), growing_cache(cross_past))  # filled: marked computed
        # With the cross-attention cache filled, the decoder reads the encoder's states only for their batch, length
        # and dtype (its masks' shapes): layer 0's cross-attention key, one head of it, stands in for them.
        stand_in = cross_past[0][:, 0]
        out = self.model(encoder_outputs=_encoder_output(stand_in), attention_mask=encoder_attention_mask,
                         decoder_input_ids=decoder_input_ids, past_key_values=cache, use_cache=True)
        return (out.logits, *cache_tensors(out.past_key_values.self_attention_cache))
