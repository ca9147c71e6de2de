"""Generation with a key/value cache: a transformers model exported as the graphs a generation loop runs (prefill
and decode step; an encoder-decoder's encoder, first decoder step and decoder step), and greedy decoding through
ONNX Runtime with them. User guide: docs/generation.md."""

from exporter.generation.export import (
    cache_names,
    decode_step_axes,
    export_for_generation,
    export_seq2seq_for_generation,
)
from exporter.generation.greedy import greedy_seq2seq_through_onnx, greedy_through_onnx
from exporter.generation.static import export_static_for_generation, greedy_static_through_onnx

__all__ = [
    "cache_names",
    "decode_step_axes",
    "export_for_generation",
    "export_seq2seq_for_generation",
    "export_static_for_generation",
    "greedy_seq2seq_through_onnx",
    "greedy_static_through_onnx",
    "greedy_through_onnx",
]
