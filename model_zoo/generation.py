"""The zoo's generation helpers: the engine's public generation API (:mod:`exporter.generation`), re-exported under
the names the zoo, the tests and the benchmarks call, and the conditioning the comparisons need
(``redraw_output_head``)."""

from __future__ import annotations

import torch

from exporter.generation import (
    cache_names,
    decode_step_axes,
    export_for_generation,
    export_seq2seq_for_generation,
    export_static_for_generation,
    greedy_seq2seq_through_onnx,
    greedy_static_through_onnx,
    greedy_through_onnx,
)
from exporter.generation.wrappers import DecoderStep, DecodeStep, Encoder, FirstDecoderStep, Prefill

__all__ = [
    "DecodeStep",
    "DecoderStep",
    "Encoder",
    "FirstDecoderStep",
    "Prefill",
    "cache_names",
    "decode_step_axes",
    "export_for_generation",
    "export_seq2seq_for_generation",
    "export_static_for_generation",
    "greedy_seq2seq_through_onnx",
    "greedy_static_through_onnx",
    "greedy_through_onnx",
    "redraw_output_head",
]


def redraw_output_head(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Give ``model`` an output projection of its own, drawn afresh (normal, the scale of the one it replaces), and
    return it. With random weights a head tied to the input embedding makes greedy decoding echo: the residual stream
    carries the current token's embedding, the tied head scores that token highest, and one token repeats to the end,
    so a comparison of tokens would say little about the cache. Conditioning for comparisons, not a deployment step."""
    head = model.get_output_embeddings()
    weight = torch.randn(head.weight.shape, generator=torch.Generator().manual_seed(seed)) * head.weight.std().item()
    head.weight = torch.nn.Parameter(weight)
    return model
