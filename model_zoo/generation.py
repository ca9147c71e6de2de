"""Generation with a key/value cache, exported with the plain ``exporter.export`` API: a decoder-only transformers
model becomes a prefill graph (the prompt in, logits and the cache out) and a decode-step graph (one token and the
cache in, logits and the grown cache out), the cache named as the ecosystem names it (``past_key_values.N.key`` /
``.value`` in, ``present.N.key`` / ``.value`` out) with dynamic batch, sequence and past-length axes.

Two graphs, not one: a trace records the branch the example takes, and transformers' attention takes another branch
for one new token (no causal mask to build) than for a prompt. ``greedy_through_onnx`` feeds each step's cache to the
next, as a generation loop does, so tests can compare its tokens and logits with PyTorch's own ``generate``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

import exporter


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    """A transformers cache as [layer 0 key, layer 0 value, layer 1 key, ...]."""
    return [tensor for layer in cache.layers for tensor in (layer.keys, layer.values)]


class Prefill(torch.nn.Module):
    """(input_ids, attention_mask) -> (logits, *present): the prompt's pass, which starts the cache."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True)
        return (out.logits, *_cache_tensors(out.past_key_values))


class DecodeStep(torch.nn.Module):
    """(input_ids, attention_mask, *past) -> (logits, *present): one step, the cache passed in and out as tensors."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for layer in range(len(past) // 2):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        return (out.logits, *_cache_tensors(out.past_key_values))


def cache_names(layers: int) -> tuple[list[str], list[str]]:
    """The cache's input names (``past_key_values.N.key/value``) and output names (``present.N.key/value``)."""
    parts = [f"{layer}.{kind}" for layer in range(layers) for kind in ("key", "value")]
    return [f"past_key_values.{part}" for part in parts], [f"present.{part}" for part in parts]


def export_for_generation(model: torch.nn.Module, prompt: torch.Tensor, directory: str,
                          opset: int = exporter.DEFAULT_OPSET) -> tuple[str, str]:
    """Export ``model`` (a transformers causal LM in eval mode) as ``prefill.onnx`` and ``decode.onnx`` in
    ``directory``, traced on ``prompt`` (batch, sequence) and on one decode step after it; returns both paths."""
    layers = model.config.num_hidden_layers
    past_names, present_names = cache_names(layers)
    mask = torch.ones_like(prompt)
    with torch.no_grad():
        example_past = Prefill(model).eval()(prompt, mask)[1:]
    token_axes = {0: "batch", 1: "sequence"}
    mask_axes = {0: "batch", 1: "total_sequence"}
    present_axes = {name: {0: "batch", 2: "total_sequence"} for name in present_names}
    outputs = ["logits", *present_names]
    prefill_path, decode_path = os.path.join(directory, "prefill.onnx"), os.path.join(directory, "decode.onnx")
    exporter.export(Prefill(model).eval(), (prompt, mask), prefill_path, opset_version=opset,
                    input_names=["input_ids", "attention_mask"], output_names=outputs,
                    dynamic_axes={"input_ids": token_axes, "attention_mask": mask_axes, "logits": token_axes,
                                  **present_axes})
    step = (prompt[:, -1:], torch.ones(prompt.shape[0], prompt.shape[1] + 1, dtype=mask.dtype), *example_past)
    exporter.export(DecodeStep(model).eval(), step, decode_path, opset_version=opset,
                    input_names=["input_ids", "attention_mask", *past_names], output_names=outputs,
                    dynamic_axes={"input_ids": token_axes, "attention_mask": mask_axes, "logits": token_axes,
                                  **{name: {0: "batch", 2: "past_sequence"} for name in past_names}, **present_axes})
    return prefill_path, decode_path


def greedy_through_onnx(prefill_path: str, decode_path: str, prompt: torch.Tensor, steps: int,
                        provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime: the prefill graph on the prompt, then the decode
    graph once per further token, each fed the cache the previous graph returned. Returns the tokens
    (batch, steps) and each step's logits (batch, vocabulary)."""
    from conformance.session import make_session

    prefill, decode = make_session(prefill_path, provider), make_session(decode_path, provider)
    past_names = [i.name for i in decode.get_inputs()][2:]
    batch, length = prompt.shape
    outputs = prefill.run(None, {"input_ids": prompt.numpy(), "attention_mask": np.ones((batch, length), np.int64)})
    tokens, logits = [], []
    for step in range(steps):
        last = outputs[0][:, -1]
        logits.append(last)
        tokens.append(last.argmax(-1))
        if step + 1 < steps:
            feeds = {"input_ids": tokens[-1][:, None].astype(np.int64),
                     "attention_mask": np.ones((batch, length + step + 1), np.int64),
                     **dict(zip(past_names, outputs[1:]))}
            outputs = decode.run(None, feeds)
    return np.stack(tokens, 1), logits
