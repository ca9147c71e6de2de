"""The inference benchmark's models: builders returning a :class:`Case` (model, example inputs, names, axes).

The torchvision classifiers are the export benchmark's (``benchmarks.models``), static shapes at 224 x 224. The
transformers are the zoo's architectures (``model_zoo.transformers_models``) at a size a latency means something
for (hidden 256, 4 layers, 4 heads, feed-forward 1024, 128 tokens, batch 1; random weights from the config), with
their batch and sequence dynamic, as a deployment exports them. The decode step is the zoo's Llama decode step
(``model_zoo.generation.DecodeStep``) after a 128-token cache. ``tiny_mlp`` is the benchmark machinery's own test.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from benchmarks.models import MODELS as EXPORT_MODELS

HIDDEN, LAYERS, HEADS, FFN, VOCAB, SEQUENCE, CACHE = 256, 4, 4, 1024, 1000, 128, 128
_TEXT_AXES = {0: "batch", 1: "sequence"}


@dataclass
class Case:
    model: torch.nn.Module
    args: tuple
    input_names: list[str]
    output_names: list[str]
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)

    def export_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"input_names": self.input_names, "output_names": self.output_names}
        if self.dynamic_axes:
            kwargs["dynamic_axes"] = self.dynamic_axes
        return kwargs

    def dynamic_shapes(self) -> tuple:
        """The dynamic axes as torch.export's dynamic shapes: one entry per named parameter of ``forward``, then
        one tuple for its ``*args`` (torch.export matches them to the signature's structure)."""
        shapes = [{axis: torch.export.Dim.DYNAMIC for axis in self.dynamic_axes.get(name, {})} or None
                  for name in self.input_names]
        parameters = inspect.signature(self.model.forward).parameters.values()
        named = sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in parameters)
        if any(p.kind == p.VAR_POSITIONAL for p in parameters):
            return (*shapes[:named], tuple(shapes[named:]))
        return tuple(shapes)


def _classifier(name: str) -> Callable[[], Case]:
    def build() -> Case:
        model, args, _ = EXPORT_MODELS[name]()
        return Case(model, args, ["image"], ["logits"])

    return build


def _architecture(name: str):
    from model_zoo.transformers_models import architectures

    return next(arch for arch in architectures() if arch.name == name)


def _text_sizes() -> dict[str, Any]:
    """The zoo config's size entries, at the benchmark's size (the names BERT-style configs use)."""
    return {"vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "intermediate_size": FFN, "max_position_embeddings": 2 * (SEQUENCE + CACHE)}


def _tokens(batch: int, sequence: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randint(4, VOCAB, (batch, sequence), generator=g), torch.ones(batch, sequence, dtype=torch.int64)


def _text(name: str, **overrides) -> Callable[[], Case]:
    def build() -> Case:
        from model_zoo.transformers_models import Plain

        torch.manual_seed(0)
        arch = _architecture(name)
        model = Plain(arch.model(**_text_sizes(), **overrides), ("input_ids", "attention_mask"), arch.output).eval()
        axes = {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES, arch.output: _TEXT_AXES}
        return Case(model, _tokens(1, SEQUENCE), ["input_ids", "attention_mask"], [arch.output], axes)

    return build


def _t5_encoder() -> Case:
    import transformers

    from model_zoo.transformers_models import Plain

    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN,
                                   num_layers=LAYERS, num_heads=HEADS, relative_attention_num_buckets=32,
                                   use_cache=False)
    model = Plain(transformers.T5EncoderModel(config).eval(), ("input_ids", "attention_mask"), "last_hidden_state")
    axes = {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES, "last_hidden_state": _TEXT_AXES}
    return Case(model.eval(), _tokens(1, SEQUENCE), ["input_ids", "attention_mask"], ["last_hidden_state"], axes)


def _vit() -> Case:
    from model_zoo.transformers_models import Plain

    torch.manual_seed(0)
    arch = _architecture("hf_vit")
    sizes = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": FFN}
    model = Plain(arch.model(image_size=224, patch_size=16, **sizes), ("pixel_values",), arch.output).eval()
    g = torch.Generator().manual_seed(0)
    return Case(model, (torch.randn(1, 3, 224, 224, generator=g),), ["pixel_values"], [arch.output],
                {"pixel_values": {0: "batch"}, arch.output: {0: "batch"}})


def _whisper_encoder() -> Case:
    """Whisper's encoder over 80 log-mel bins of 256 frames (it takes exactly 2 x max_source_positions)."""
    import transformers

    from model_zoo.transformers_models import Plain

    torch.manual_seed(0)
    config = transformers.WhisperConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=1,
                                        encoder_attention_heads=HEADS, decoder_attention_heads=HEADS,
                                        encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, num_mel_bins=80,
                                        max_source_positions=SEQUENCE, use_cache=False, pad_token_id=0,
                                        bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    encoder = transformers.WhisperModel(config).eval().get_encoder()
    model = Plain(encoder, ("input_features",), "last_hidden_state").eval()
    g = torch.Generator().manual_seed(0)
    return Case(model, (torch.randn(1, 80, 2 * SEQUENCE, generator=g),), ["input_features"], ["last_hidden_state"],
                {"input_features": {0: "batch"}, "last_hidden_state": {0: "batch"}})


def _llama_decode_step() -> Case:
    """One token after a 128-token cache, the cache in and out as tensors; batch and cache length dynamic."""
    from model_zoo.generation import DecodeStep, decode_step_axes

    torch.manual_seed(0)
    arch = _architecture("hf_llama")
    model = DecodeStep(arch.model(**_text_sizes(), use_cache=True)).eval()
    names, axes = decode_step_axes(LAYERS)
    kv_heads = arch.config["num_key_value_heads"]
    g = torch.Generator().manual_seed(0)
    cache = tuple(torch.randn(1, kv_heads, CACHE, HIDDEN // HEADS, generator=g) for _ in range(2 * LAYERS))
    ids = torch.randint(4, VOCAB, (1, 1), generator=g)
    return Case(model, (ids, torch.ones(1, CACHE + 1, dtype=torch.int64), *cache), names[0], names[1], axes)


class _TinyMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down, self.norm = torch.nn.Linear(16, 32), torch.nn.Linear(32, 16), torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(x + self.down(torch.nn.functional.gelu(self.up(x))))


def _tiny_mlp() -> Case:
    torch.manual_seed(0)
    return Case(_TinyMlp().eval(), (torch.randn(2, 16),), ["x"], ["y"])


MODELS: dict[str, Callable[[], Case]] = {
    **{name: _classifier(name) for name in ("resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16", "swin_t")},
    "hf_bert": _text("hf_bert"),
    "hf_gpt2": _text("hf_gpt2", n_inner=FFN),
    "hf_llama": _text("hf_llama"),
    "hf_t5_encoder": _t5_encoder,
    "hf_vit": _vit,
    "hf_whisper_encoder": _whisper_encoder,
    "hf_llama_decode_step": _llama_decode_step,
    "tiny_mlp": _tiny_mlp,
}
DEFAULT_MODELS = [name for name in MODELS if name != "tiny_mlp"]
TRANSFORMERS = [name for name in MODELS if name.startswith("hf_")]
