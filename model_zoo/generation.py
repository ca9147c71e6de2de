"""Generation with a key/value cache, exported with the plain ``exporter.export`` API, the cache named as the
ecosystem names it and every batch, prompt-length and cache-length axis dynamic (a step's one new token is one).

A decoder-only transformers model becomes a prefill graph (the prompt in, logits and the cache out) and a decode-step
graph (one token and the cache in, logits and the grown cache out): ``past_key_values.N.key`` / ``.value`` in,
``present.N.key`` / ``.value`` out. Two graphs, not one: a trace records the branch the example takes, and
transformers' attention takes another branch for one new token (no causal mask to build) than for a prompt.

An encoder-decoder (T5, BART and their kin) becomes three graphs: the encoder (the source in, its hidden states
out), the decoder's first step (the start token and the encoder's states in; logits, the self-attention cache
``present.N.decoder.key/value`` and the cross-attention cache ``present.N.encoder.key/value`` out) and the decoder
step (one token, ``past_key_values.N.decoder.key/value`` and ``past_key_values.N.encoder.key/value`` in; logits and
the grown self-attention cache out). The cross-attention keys and values depend on the source alone: the first step
computes them once, and every later step reads them from the cache, the branch transformers takes once a layer's
cross-attention cache is filled.

``greedy_through_onnx`` and ``greedy_seq2seq_through_onnx`` feed each step's cache to the next, as a generation loop
does, so tests can compare their tokens and logits with PyTorch's own ``generate``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import exporter

_TOKEN_AXES = {0: "batch", 1: "sequence"}
# A step's new token: one per row. The trace of one token records transformers' one-token branch (no causal mask, GQA
# packed for a single query), which a declared dynamic sequence would leave wrong for more tokens: the engine refuses
# to declare it free (exporter/frontends/torchscript/traced_sizes.py), so a step's sequence axis is its example's, 1.
_STEP_AXES = {0: "batch"}
_SOURCE_AXES = {0: "batch", 1: "source_sequence"}  # the encoder's input, its states and its attention mask


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    """A transformers cache as [layer 0 key, layer 0 value, layer 1 key, ...]."""
    return [tensor for layer in cache.layers for tensor in (layer.keys, layer.values)]


def _dynamic_cache(config: Any, tensors: tuple[torch.Tensor, ...]) -> Any:
    """The ``DynamicCache`` that holds ``tensors`` ([layer 0 key, layer 0 value, layer 1 key, ...])."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    for layer in range(len(tensors) // 2):
        cache.update(tensors[2 * layer], tensors[2 * layer + 1], layer)
    return cache


def _encoder_output(hidden_states: torch.Tensor) -> Any:
    """The encoder's states in the form a transformers encoder-decoder takes them (``encoder_outputs=``)."""
    from transformers.modeling_outputs import BaseModelOutput

    return BaseModelOutput(last_hidden_state=hidden_states)


def redraw_output_head(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Give ``model`` an output projection of its own, drawn afresh (normal, the scale of the one it replaces), and
    return it. With random weights a head tied to the input embedding makes greedy decoding echo: the residual stream
    carries the current token's embedding, the tied head scores that token highest, and one token repeats to the end,
    so a comparison of tokens would say little about the cache. Conditioning for comparisons, not a deployment step."""
    head = model.get_output_embeddings()
    weight = torch.randn(head.weight.shape, generator=torch.Generator().manual_seed(seed)) * head.weight.std().item()
    head.weight = torch.nn.Parameter(weight)
    return model


# -- decoder-only ------------------------------------------------------------------------------------------------
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
        cache = _dynamic_cache(self.model.config, past)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
        return (out.logits, *_cache_tensors(out.past_key_values))


# -- encoder-decoder ---------------------------------------------------------------------------------------------
class Encoder(torch.nn.Module):
    """(input_ids, attention_mask) -> encoder_hidden_states: the source's pass, run once per generation."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


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
        return (out.logits, *_cache_tensors(cache.self_attention_cache), *_cache_tensors(cache.cross_attention_cache))


class DecoderStep(torch.nn.Module):
    """(decoder_input_ids, encoder_attention_mask, *self-attention past, *cross-attention past) -> (logits,
    *self-attention present): one step, the cross-attention cache read, not recomputed."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids, encoder_attention_mask, *past):
        from transformers import EncoderDecoderCache

        self_past, cross_past = past[:len(past) // 2], past[len(past) // 2:]
        cache = EncoderDecoderCache(_dynamic_cache(self.model.config, self_past),
                                    _dynamic_cache(self.model.config, cross_past))  # filled: marked as computed
        # With the cross-attention cache filled, the decoder reads the encoder's states only for their batch, length
        # and dtype (its masks' shapes): layer 0's cross-attention key, one head of it, stands in for them.
        stand_in = cross_past[0][:, 0]
        out = self.model(encoder_outputs=_encoder_output(stand_in), attention_mask=encoder_attention_mask,
                         decoder_input_ids=decoder_input_ids, past_key_values=cache, use_cache=True)
        return (out.logits, *_cache_tensors(out.past_key_values.self_attention_cache))


# -- names and export --------------------------------------------------------------------------------------------
def cache_names(layers: int, side: str = "") -> tuple[list[str], list[str]]:
    """The cache's input names (``past_key_values.N.key/value``) and output names (``present.N.key/value``); with
    ``side`` ('decoder' for self-attention, 'encoder' for cross-attention) ``past_key_values.N.decoder.key`` and
    so on, as an encoder-decoder's cache is named."""
    side = f".{side}" if side else ""
    parts = [f"{layer}{side}.{kind}" for layer in range(layers) for kind in ("key", "value")]
    return [f"past_key_values.{part}" for part in parts], [f"present.{part}" for part in parts]


def _axes(names: list[str], axes: dict[int, str]) -> dict[str, dict[int, str]]:
    """The same dynamic ``axes`` for each of ``names``."""
    return {name: axes for name in names}


def _cache_axes(length: str) -> dict[int, str]:
    """A cache tensor's dynamic axes (batch, heads, ``length``, head size)."""
    return {0: "batch", 2: length}


def export_for_generation(model: torch.nn.Module, prompt: torch.Tensor, directory: str,
                          opset: int = exporter.DEFAULT_OPSET, dynamo: bool = False) -> tuple[str, str]:
    """Export ``model`` (a transformers causal LM in eval mode) as ``prefill.onnx`` and ``decode.onnx`` in
    ``directory`` (made if missing), traced on ``prompt`` (batch, sequence) and on one decode step after it; returns
    both paths."""
    os.makedirs(directory, exist_ok=True)
    mask = torch.ones_like(prompt)
    with torch.no_grad():
        example_past = Prefill(model).eval()(prompt, mask)[1:]
    past_names, present_names = cache_names(len(example_past) // 2)
    mask_axes = {0: "batch", 1: "total_sequence"}
    outputs = ["logits", *present_names]
    output_axes = {"logits": _TOKEN_AXES, **_axes(present_names, _cache_axes("total_sequence"))}
    (step_inputs, _), step_axes = decode_step_axes(len(example_past) // 2)
    prefill_path, decode_path = os.path.join(directory, "prefill.onnx"), os.path.join(directory, "decode.onnx")
    exporter.export(Prefill(model).eval(), (prompt, mask), prefill_path, opset_version=opset,
                    input_names=["input_ids", "attention_mask"], output_names=outputs,
                    dynamic_axes={"input_ids": _TOKEN_AXES, "attention_mask": mask_axes, **output_axes}, dynamo=dynamo)
    step = (prompt[:, -1:], torch.ones(prompt.shape[0], prompt.shape[1] + 1, dtype=mask.dtype), *example_past)
    exporter.export(DecodeStep(model).eval(), step, decode_path, opset_version=opset,
                    input_names=step_inputs, output_names=outputs, dynamic_axes=step_axes, dynamo=dynamo)
    return prefill_path, decode_path


def decode_step_axes(layers: int) -> tuple[tuple[list[str], list[str]], dict[str, dict[int, str]]]:
    """A decoder-only decode step's (input names, output names) and dynamic axes: batch, the cache's
    ``past_sequence`` in and ``total_sequence`` out (one new token: see ``_STEP_AXES``)."""
    past_names, present_names = cache_names(layers)
    axes = {"input_ids": _STEP_AXES, "attention_mask": {0: "batch", 1: "total_sequence"},
            **_axes(past_names, _cache_axes("past_sequence")), "logits": _STEP_AXES,
            **_axes(present_names, _cache_axes("total_sequence"))}
    return (["input_ids", "attention_mask", *past_names], ["logits", *present_names]), axes


def export_seq2seq_for_generation(model: torch.nn.Module, source: torch.Tensor, directory: str,
                                  opset: int = exporter.DEFAULT_OPSET, dynamo: bool = False) -> tuple[str, str, str]:
    """Export ``model`` (a transformers encoder-decoder in eval mode) as ``encoder.onnx``, ``decoder.onnx`` (the
    first step) and ``decoder_step.onnx`` in ``directory`` (made if missing), traced on ``source`` (batch, sequence),
    the decoder's start token and one step after it; returns the three paths."""
    os.makedirs(directory, exist_ok=True)
    mask = torch.ones_like(source)
    start = torch.full((source.shape[0], 1), model.generation_config.decoder_start_token_id, dtype=source.dtype)
    with torch.no_grad():
        states = Encoder(model).eval()(source, mask)
        first = FirstDecoderStep(model).eval()(start, mask, states)
    layers = (len(first) - 1) // 4
    self_past, self_present = cache_names(layers, "decoder")
    cross_past, cross_present = cache_names(layers, "encoder")
    output_axes = {"logits": _STEP_AXES, **_axes(self_present, _cache_axes("total_sequence"))}
    step_axes = {"decoder_input_ids": _STEP_AXES, "encoder_attention_mask": _SOURCE_AXES}
    paths = [os.path.join(directory, f"{name}.onnx") for name in ("encoder", "decoder", "decoder_step")]
    exporter.export(Encoder(model).eval(), (source, mask), paths[0], opset_version=opset,
                    input_names=["input_ids", "attention_mask"], output_names=["encoder_hidden_states"],
                    dynamic_axes=_axes(["input_ids", "attention_mask", "encoder_hidden_states"], _SOURCE_AXES),
                    dynamo=dynamo)
    exporter.export(FirstDecoderStep(model).eval(), (start, mask, states), paths[1], opset_version=opset,
                    input_names=[*step_axes, "encoder_hidden_states"],
                    output_names=["logits", *self_present, *cross_present],
                    dynamic_axes={**step_axes, "encoder_hidden_states": _SOURCE_AXES, **output_axes,
                                  **_axes(cross_present, _cache_axes("source_sequence"))}, dynamo=dynamo)
    exporter.export(DecoderStep(model).eval(), (start, mask, *first[1:]), paths[2], opset_version=opset,
                    input_names=[*step_axes, *self_past, *cross_past], output_names=["logits", *self_present],
                    dynamic_axes={**step_axes, **_axes(self_past, _cache_axes("past_sequence")),
                                  **_axes(cross_past, _cache_axes("source_sequence")), **output_axes}, dynamo=dynamo)
    return tuple(paths)


# -- greedy decoding through ONNX Runtime ------------------------------------------------------------------------
# (the chosen tokens (batch, 1), the step's index, the previous pass's outputs) -> the next pass's outputs
NextPass = Callable[[np.ndarray, int, list[np.ndarray]], list[np.ndarray]]


def _greedy(outputs: list[np.ndarray], steps: int, step: NextPass) -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens from a first pass's ``outputs`` (logits first): each step takes the last
    position's argmax, and ``step(tokens (batch, 1), index, outputs)`` runs the next pass. Returns the tokens
    (batch, steps) and each step's logits (batch, vocabulary)."""
    tokens, logits = [], []
    for index in range(steps):
        last = outputs[0][:, -1]
        logits.append(last)
        tokens.append(last.argmax(-1))
        if index + 1 < steps:
            outputs = step(tokens[-1][:, None].astype(np.int64), index, outputs)
    return np.stack(tokens, 1), logits


def _output_names(session) -> list[str]:
    return [output.name for output in session.get_outputs()]


def _as_past(names: list[str], outputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """A pass's cache outputs (``present.*``) as the next pass's cache inputs of the same names
    (``past_key_values.*``): fed by name, so the graph's order of its inputs is never trusted."""
    prefix = "present."
    return {"past_key_values." + name[len(prefix):]: value
            for name, value in zip(names, outputs, strict=True) if name.startswith(prefix)}


def greedy_through_onnx(prefill_path: str, decode_path: str, prompt: torch.Tensor, steps: int,
                        provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime: the prefill graph on the prompt, then the decode
    graph once per further token, each fed the cache the previous graph returned. Returns the tokens
    (batch, steps) and each step's logits (batch, vocabulary)."""
    from exporter.ort_session import make_session

    prefill, decode = make_session(prefill_path, provider), make_session(decode_path, provider)
    names = _output_names(prefill)  # logits, present.N.key/value: the decode step's outputs too
    batch, length = prompt.shape

    def step(token, index, outputs):
        return decode.run(None, {"input_ids": token, "attention_mask": np.ones((batch, length + index + 1), np.int64),
                                 **_as_past(names, outputs)})

    first = prefill.run(None, {"input_ids": prompt.numpy(), "attention_mask": np.ones((batch, length), np.int64)})
    return _greedy(first, steps, step)


def greedy_seq2seq_through_onnx(paths: tuple[str, str, str], source: torch.Tensor, attention_mask: torch.Tensor,
                                start_token: int, steps: int,
                                provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime with the three graphs of
    :func:`export_seq2seq_for_generation`: the encoder once on ``source``, the first decoder step on ``start_token``,
    then the decoder step once per further token, fed the self-attention cache the previous step returned and the
    cross-attention cache the first step returned. Returns the tokens (batch, steps) and each step's logits
    (batch, vocabulary)."""
    from exporter.ort_session import make_session

    encoder, first_step, decoder_step = (make_session(path, provider) for path in paths)
    mask = attention_mask.numpy()
    (states,) = encoder.run(None, {"input_ids": source.numpy(), "attention_mask": mask})
    start = np.full((source.shape[0], 1), start_token, np.int64)
    first = first_step.run(None, {"decoder_input_ids": start, "encoder_attention_mask": mask,
                                  "encoder_hidden_states": states})
    # Both caches by name: the cross-attention one (present.N.encoder.*) from the first step, the self-attention one
    # (present.N.decoder.*) from the step before.
    first_cache, step_names = _as_past(_output_names(first_step), first), _output_names(decoder_step)

    def step(token, index, outputs):
        latest = first_cache if index == 0 else _as_past(step_names, outputs)  # index 0: the first step's outputs
        return decoder_step.run(None, {"decoder_input_ids": token, "encoder_attention_mask": mask,
                                       **first_cache, **latest})

    return _greedy(first, steps, step)
