"""Generation graphs exported with the plain ``exporter.export`` call, the cache as explicit inputs and outputs named
as the ecosystem names them (``past_key_values.N.key`` in, ``present.N.key`` out) and every axis named alike in
every graph: ``batch``; ``sequence`` (a prompt's length; a prefill's mask and cache have it too); ``past_sequence``
(the cache a step is given) and ``total_sequence`` (the step's mask and the cache it returns); ``source_sequence``
(an encoder-decoder's source). Heads, head size and vocabulary are static, the model's own sizes, on both sides.

A step's new token is one: the trace of one token records transformers' one-token branch (no causal mask; GQA packed
for a single query), which a declared dynamic sequence would leave wrong for more tokens, so the engine refuses to
declare it free and a step's sequence axis is its example's, 1.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

import onnx
import torch

from exporter.arguments import DEFAULT_OPSET
from exporter.contract import export
from exporter.errors import ExportArgumentError
from exporter.generation.wrappers import DecoderStep, DecodeStep, Encoder, FirstDecoderStep, Prefill

Axes = dict[int, str]

_TOKENS = {0: "batch", 1: "sequence"}
CUMSUM_OPSET = 11  # a prefill's positions from its mask: CumSum from here, a triangular MatMul below
_STEP = {0: "batch"}
_SOURCE = {0: "batch", 1: "source_sequence"}


def cache_names(layers: int, side: str = "") -> tuple[list[str], list[str]]:
    """The cache's input names (``past_key_values.N.key/value``) and output names (``present.N.key/value``); with
    ``side`` ('decoder' for self-attention, 'encoder' for cross-attention) ``past_key_values.N.decoder.key`` and
    so on, as an encoder-decoder's cache is named."""
    side = f".{side}" if side else ""
    parts = [f"{layer}{side}.{kind}" for layer in range(layers) for kind in ("key", "value")]
    return [f"past_key_values.{part}" for part in parts], [f"present.{part}" for part in parts]


def cache_axes(length: str) -> Axes:
    """A cache tensor's dynamic axes (batch, heads, ``length``, head size): batch and ``length``."""
    return {0: "batch", 2: length}


def _same(names: Sequence[str], axes: Axes) -> dict[str, Axes]:
    return {name: axes for name in names}


def decode_step_axes(layers: int) -> tuple[tuple[list[str], list[str]], dict[str, Axes]]:
    """A decoder-only decode step's (input names, output names) and dynamic axes."""
    past_names, present_names = cache_names(layers)
    axes = {"input_ids": _STEP, "attention_mask": {0: "batch", 1: "total_sequence"},
            **_same(past_names, cache_axes("past_sequence")), "logits": _STEP,
            **_same(present_names, cache_axes("total_sequence"))}
    return (["input_ids", "attention_mask", *past_names], ["logits", *present_names]), axes


def settle_output_shapes(path: str, outputs: Sequence[torch.Tensor], names: Sequence[str],
                         axes: dict[str, Axes]) -> None:
    """Write each graph output's shape as the layout says: the named axes of ``axes``, every other axis the size of
    the example ``outputs`` (heads, head size, vocabulary). Shape inference can leave a static axis unnamed
    (``unk__N``) behind a reshape, where the other graph states it: a runtime binding one graph's outputs to the
    next one's inputs should read one layout. A size the graph already states and the example contradicts is a bug
    here, refused rather than overwritten."""
    model = onnx.load(path, load_external_data=False)
    by_name = {output.name: output for output in model.graph.output}
    for name, example in zip(names, outputs, strict=True):
        dims = by_name[name].type.tensor_type.shape.dim
        for index, dim in enumerate(dims):
            named = axes.get(name, {}).get(index)
            if named is None and dim.HasField("dim_value") and dim.dim_value != example.shape[index]:
                raise ExportArgumentError(f"{name}: axis {index} is {dim.dim_value} in the graph, "
                                          f"{example.shape[index]} in the example")
            if named is None:
                dim.Clear()
                dim.dim_value = int(example.shape[index])
            else:
                dim.Clear()
                dim.dim_param = named
    onnx.save(model, path)


def export_generation_graph(module: torch.nn.Module, args: tuple, path: str, names: tuple[list[str], list[str]],
                            axes: dict[str, Axes], opset: int, dynamo: bool) -> str:
    """Export one generation graph of ``module`` on ``args`` and settle its outputs' layout; returns ``path``."""
    inputs, outputs = names
    module = module.eval()
    with torch.no_grad():
        example = module(*args)
    example = (example,) if isinstance(example, torch.Tensor) else example
    export(module, args, path, opset_version=opset, input_names=inputs, output_names=outputs, dynamic_axes=axes,
           dynamo=dynamo)
    settle_output_shapes(path, example, outputs, axes)
    return path


def export_prefill(model: torch.nn.Module, prompt: torch.Tensor, mask: torch.Tensor, directory: str, opset: int,
                   dynamo: bool) -> tuple[str, tuple[torch.Tensor, ...]]:
    """Export ``model``'s prefill as ``prefill.onnx`` in ``directory`` (made if missing): ``input_ids``,
    ``attention_mask`` -> ``logits``, ``present.N.key/value``. Returns its path and the example's cache."""
    os.makedirs(directory, exist_ok=True)
    prefill = Prefill(model, positions_by_matmul=opset < CUMSUM_OPSET)
    with torch.no_grad():
        example_past = prefill.eval()(prompt, mask)[1:]
    _, present_names = cache_names(len(example_past) // 2)
    axes = {"input_ids": _TOKENS, "attention_mask": _TOKENS, "logits": _TOKENS,
            **_same(present_names, cache_axes("sequence"))}
    path = export_generation_graph(prefill, (prompt, mask), os.path.join(directory, "prefill.onnx"),
                                   (["input_ids", "attention_mask"], ["logits", *present_names]), axes, opset, dynamo)
    return path, example_past


def export_for_generation(model: torch.nn.Module, prompt: torch.Tensor, directory: str,
                          opset: int = DEFAULT_OPSET, dynamo: bool = False,
                          attention_mask: torch.Tensor | None = None) -> tuple[str, str]:
    """Export ``model`` (a transformers causal LM in eval mode) as ``prefill.onnx`` and ``decode.onnx`` in
    ``directory`` (made if missing), traced on ``prompt`` (batch, sequence) with ``attention_mask`` (ones if
    omitted; 0 at left padding) and on one decode step after it; returns both paths. Prefill: ``input_ids``,
    ``attention_mask`` -> ``logits``, ``present.N.key/value``; decode step: ``input_ids`` (batch, 1),
    ``attention_mask`` (batch, total_sequence), ``past_key_values.N.key/value`` -> the same outputs."""
    mask = torch.ones_like(prompt) if attention_mask is None else attention_mask
    prefill_path, example_past = export_prefill(model, prompt, mask, directory, opset, dynamo)
    step_mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    names, step_axes = decode_step_axes(len(example_past) // 2)
    decode_path = export_generation_graph(DecodeStep(model), (prompt[:, -1:], step_mask, *example_past),
                                          os.path.join(directory, "decode.onnx"), names, step_axes, opset, dynamo)
    return prefill_path, decode_path


def export_seq2seq_for_generation(model: torch.nn.Module, source: torch.Tensor, directory: str,
                                  opset: int = DEFAULT_OPSET, dynamo: bool = False) -> tuple[str, str, str]:
    """Export ``model`` (a transformers encoder-decoder in eval mode) as ``encoder.onnx``, ``decoder.onnx`` (the
    first step) and ``decoder_step.onnx`` in ``directory`` (made if missing), traced on ``source`` (batch, sequence),
    the decoder's start token and one step after it; returns the three paths."""
    os.makedirs(directory, exist_ok=True)
    mask = torch.ones_like(source)
    start_token = cast(Any, model).generation_config.decoder_start_token_id
    start = torch.full((source.shape[0], 1), start_token, dtype=source.dtype)
    with torch.no_grad():
        states = Encoder(model).eval()(source, mask)
        first = FirstDecoderStep(model).eval()(start, mask, states)
    layers = (len(first) - 1) // 4
    self_past, self_present = cache_names(layers, "decoder")
    cross_past, cross_present = cache_names(layers, "encoder")
    output_axes = {"logits": _STEP, **_same(self_present, cache_axes("total_sequence"))}
    step_axes = {"decoder_input_ids": _STEP, "encoder_attention_mask": _SOURCE}
    paths = [os.path.join(directory, f"{name}.onnx") for name in ("encoder", "decoder", "decoder_step")]
    export_generation_graph(Encoder(model), (source, mask), paths[0],
                            (["input_ids", "attention_mask"], ["encoder_hidden_states"]),
                            _same(["input_ids", "attention_mask", "encoder_hidden_states"], _SOURCE), opset, dynamo)
    export_generation_graph(FirstDecoderStep(model), (start, mask, states), paths[1],
                            ([*step_axes, "encoder_hidden_states"], ["logits", *self_present, *cross_present]),
                            {**step_axes, "encoder_hidden_states": _SOURCE, **output_axes,
                             **_same(cross_present, cache_axes("source_sequence"))}, opset, dynamo)
    export_generation_graph(DecoderStep(model), (start, mask, *first[1:]), paths[2],
                            ([*step_axes, *self_past, *cross_past], ["logits", *self_present]),
                            {**step_axes, **_same(self_past, cache_axes("past_sequence")),
                             **_same(cross_past, cache_axes("source_sequence")), **output_axes}, opset, dynamo)
    return paths[0], paths[1], paths[2]
