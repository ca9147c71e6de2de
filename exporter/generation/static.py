"""Generation with a static key/value cache: a decode step whose cache is a fixed buffer of ``max_cache_len``
positions per layer (transformers' ``StaticLayer``), written in place at the step's position, so no tensor grows
between steps. From opset 24 the write is ONNX's TensorScatter (``index_copy`` of one position); below, a
ScatterElements.

The step takes ``input_ids`` (batch, 1), ``attention_mask`` (batch, max_cache_len: 1 at every attended position,
the new token's included; 0 at left padding and at the buffer's unwritten tail), ``cache_position`` (0-d int64: where
the new token's key and value go, the count of positions written so far) and ``past_key_values.N.key/value``
(batch, heads, max_cache_len, head size); it returns ``logits`` and ``present.N.key/value`` of the buffer's shape.
The prompt runs through the growing-cache prefill graph (``export_for_generation``'s), whose cache the loop copies
into the buffers' first positions.

Every layer is a full-length ``StaticLayer``, sliding-window layers included: transformers' static sliding-window
layer rolls its buffer and counts the tokens seen in a Python int, which a step rebuilt from tensors cannot carry.
A full-length buffer with the sliding-window mask (built from absolute positions) attends to the same keys.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from exporter.errors import ExportArgumentError
from exporter.generation.export import cache_names, export_generation_graph, export_prefill
from exporter.generation.greedy import as_past, greedy, output_names, prompt_mask
from exporter.generation.wrappers import DecodeStep, Prefill, last_position, takes_positions

STATIC_OPSET = 24


def _one_position_layer(max_cache_len: int) -> Any:
    """A transformers ``StaticLayer`` that writes a step's one position at its count of written positions, the
    index one element long as the graph states it: the layer's own update indexes with ``arange(new length) +
    count``, whose length some models' traces leave run-time (a key reshaped with -1), where the export can only
    keep a general scatter. A decode step writes one position, so the two agree."""
    from transformers.cache_utils import StaticLayer  # type: ignore[import-not-found]

    class OnePositionLayer(StaticLayer):
        def update(self, key_states, value_states, *args, **kwargs):
            position = self.cumulative_length.reshape(1)  # a view: counted up only once it is written
            self.keys.index_copy_(2, position, key_states)
            self.values.index_copy_(2, position, value_states)
            self.cumulative_length.add_(1)
            return self.keys, self.values

    return OnePositionLayer(max_cache_len=max_cache_len)


def fixed_cache(buffers: tuple[torch.Tensor, ...], position: torch.Tensor) -> Any:
    """A transformers cache of full-length static layers over copies of ``buffers`` ([layer 0 key, layer 0 value,
    ...], each (batch, heads, max_cache_len, head size)), ``position`` positions already written. Copies: the layer
    writes in place, and the step's inputs are the caller's."""
    from transformers.cache_utils import Cache

    layers = []
    for keys, values in zip(buffers[0::2], buffers[1::2], strict=True):
        layer = _one_position_layer(keys.shape[2])
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys.clone(), values.clone()
        layer.cumulative_length = position.clone()
        layers.append(layer)
    return Cache(layers=layers)


class StaticDecodeStep(torch.nn.Module):
    """(input_ids, attention_mask, cache_position, *past) -> (logits, *present): one step on fixed buffers."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, cache_position, *past):
        cache = fixed_cache(past, cache_position)
        # generate's position for the new token: the count of attended tokens before it (the buffer's tail is 0)
        positions = {"position_ids": last_position(attention_mask)} if takes_positions(self.model) else {}
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True,
                         **positions)
        return (out.logits, *[tensor for layer in cache.layers for tensor in (layer.keys, layer.values)])


def static_step_axes(layers: int) -> tuple[tuple[list[str], list[str]], dict[str, dict[int, str]]]:
    """The static decode step's (input names, output names) and dynamic axes: batch alone (the buffer is fixed)."""
    past_names, present_names = cache_names(layers)
    batch = {0: "batch"}
    inputs = ["input_ids", "attention_mask", "cache_position", *past_names]
    axes = {name: batch for name in ["input_ids", "attention_mask", *past_names, "logits", *present_names]}
    return (inputs, ["logits", *present_names]), axes


def _refuse_unless_the_step_agrees(model: torch.nn.Module, step: tuple, present: tuple[torch.Tensor, ...]) -> None:
    """Refuse a model whose attention cannot read a fixed buffer: run in PyTorch, the static step must give the
    growing-cache step's logits on the example. Some models place their window relative to the cache's length
    (GPT-Neo's local attention slices its causal table at ``key_length - query_length``), which a buffer longer
    than the tokens seen moves; their static step would be a silently wrong export of a faithful trace."""
    token, mask, length = step[:3]
    with torch.no_grad():
        static = StaticDecodeStep(model).eval()(*step)[0]
        growing = DecodeStep(model).eval()(token, mask[:, :int(length) + 1], *present)[0]
    if not torch.allclose(static, growing, rtol=1e-4, atol=1e-5):
        gap = (static - growing).abs().max().item()
        raise ExportArgumentError(f"{type(model).__name__}: its attention does not read a fixed-size cache as it "
                                  f"reads a growing one (the static step's logits differ by {gap:.3g} in PyTorch); "
                                  "export it with export_for_generation (a growing cache)")


def export_static_for_generation(model: torch.nn.Module, prompt: torch.Tensor, directory: str, max_cache_len: int,
                                 opset: int = STATIC_OPSET, dynamo: bool = False) -> tuple[str, str]:
    """Export ``model`` (a transformers causal LM in eval mode) as ``prefill.onnx`` (the growing-cache prefill) and
    ``decode_static.onnx`` (a step on buffers of ``max_cache_len`` positions) in ``directory`` (made if missing),
    traced on ``prompt`` and one step after it; returns both paths."""
    if max_cache_len <= prompt.shape[1]:
        raise ExportArgumentError(f"max_cache_len ({max_cache_len}) must exceed the example prompt's length "
                                  f"({prompt.shape[1]}): the step writes one position past it")
    with torch.no_grad():
        present = Prefill(model).eval()(prompt, torch.ones_like(prompt))[1:]
    batch, length = prompt.shape
    buffers = tuple(torch.nn.functional.pad(x, (0, 0, 0, max_cache_len - length)) for x in present)
    mask = torch.zeros(batch, max_cache_len, dtype=torch.int64)
    mask[:, :length + 1] = 1
    step = (prompt[:, -1:], mask, torch.tensor(length), *buffers)
    _refuse_unless_the_step_agrees(model, step, present)  # before either graph is written
    prefill_path, _ = export_prefill(model, prompt, torch.ones_like(prompt), directory, opset, dynamo)
    names, axes = static_step_axes(len(buffers) // 2)
    path = os.path.join(directory, "decode_static.onnx")
    export_generation_graph(StaticDecodeStep(model), step, path, names, axes, opset, dynamo)
    return prefill_path, path


def greedy_static_through_onnx(prefill_path: str, decode_path: str, prompt: torch.Tensor, steps: int,
                               attention_mask: torch.Tensor | None = None,
                               provider: str = "cpu") -> tuple[np.ndarray, list[np.ndarray]]:
    """Greedy decoding of ``steps`` tokens through ONNX Runtime with the graphs of
    :func:`export_static_for_generation`: the prefill on ``prompt`` (``attention_mask``: ones if omitted, 0 at left
    padding), its cache copied into zeroed buffers of the step's ``max_cache_len``, then the static step once per
    further token at the next position. Returns the tokens (batch, steps) and each step's logits."""
    from exporter.ort_session import make_session

    prefill, decode = make_session(prefill_path, provider), make_session(decode_path, provider)
    max_len = decode.get_inputs()[1].shape[1]
    mask = prompt_mask(prompt, attention_mask)
    batch, length = mask.shape
    if length + steps - 1 > max_len:
        raise ValueError(f"{steps} steps after a prompt of {length} need {length + steps - 1} cache positions; "
                         f"the step's buffer holds {max_len}")
    buffer_mask = np.zeros((batch, max_len), np.int64)
    buffer_mask[:, :length] = mask
    first = prefill.run(None, {"input_ids": prompt.numpy(), "attention_mask": mask})
    names = output_names(prefill)
    pad = ((0, 0), (0, 0), (0, max_len - length), (0, 0))
    first_buffers = {name: np.pad(value, pad) for name, value in as_past(names, first).items()}

    def step(token, index, outputs):
        position = length + index
        buffer_mask[:, position] = 1
        buffers = first_buffers if index == 0 else as_past(names, outputs)
        return decode.run(None, {"input_ids": token, "attention_mask": buffer_mask,
                                 "cache_position": np.array(position, np.int64), **buffers})

    return greedy(first, steps, step)
