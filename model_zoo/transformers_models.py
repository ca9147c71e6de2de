"""Hugging Face transformers architectures, each built from a tiny config with random weights (no downloads).

Every entry wraps one model in ``Plain``: positional tensor inputs in, one plain tensor out (the last hidden state
or the logits), with the key/value cache off (``use_cache=False``), because that is the form a deployment exports
and an ONNX graph has no ``ModelOutput``. Configs are tiny (hidden size 32, two layers) so an export takes about a
second; the architecture, not the size, decides which ops an export meets.

Inputs: token ids in the vocabulary (clear of the special ids) with an attention mask whose last row is padded on
the right (so padding is exercised, and no causal row is left with nothing to attend to); pixel values and audio
as normal noise; Whisper's log-mel features likewise. Batch and sequence (or audio length) are dynamic; variant 1
has other sizes on both. Vision models fix their image size (position embeddings), so only their batch is dynamic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from exporter.arguments import DEFAULT_OPSET
from exporter.registry import MAX_OPSET, MIN_OPSET
from model_zoo.conditioning import generator
from model_zoo.entry import ZooEntry

FAMILY = "transformers"
VOCAB = 96
FIRST_TOKEN = 4  # ids below are left to the special tokens (pad, bos, eos, unk) of every config here
# (batch, sequence) of variant 0 (exported) and variant 1 (the dynamic check)
TEXT_SHAPES = ((2, 7), (3, 11))
IMAGE_SIZE = 32
BATCHES = (1, 2)
# The small sizes every config shares (each config names them its own way: see _text_sizes and the builders).
HIDDEN, LAYERS, HEADS, FFN = 32, 2, 4, 64


class Plain(torch.nn.Module):
    """``model`` called with its positional inputs as the keywords ``input_keys``, returning ``output_key``."""

    def __init__(self, model: torch.nn.Module, input_keys: tuple[str, ...], output_key: str):
        super().__init__()
        self.model = model
        self.input_keys = input_keys
        self.output_key = output_key

    def forward(self, *inputs):
        return getattr(self.model(**dict(zip(self.input_keys, inputs, strict=True))), self.output_key)


# -- inputs ----------------------------------------------------------------------------------------------------
def token_ids(batch: int, sequence: int, g: torch.Generator) -> torch.Tensor:
    return torch.randint(FIRST_TOKEN, VOCAB, (batch, sequence), generator=g)


def padded_mask(batch: int, sequence: int) -> torch.Tensor:
    """Ones, but the last row's last two positions are padding (zeros)."""
    mask = torch.ones(batch, sequence, dtype=torch.long)
    mask[-1, -2:] = 0
    return mask


def _text_inputs(variant: int, seed: int) -> tuple:
    batch, sequence = TEXT_SHAPES[variant]
    return token_ids(batch, sequence, generator(seed)), padded_mask(batch, sequence)


def _seq2seq_inputs(variant: int, seed: int) -> tuple:
    batch, sequence = TEXT_SHAPES[variant]
    g = generator(seed)
    return (token_ids(batch, sequence, g), padded_mask(batch, sequence), token_ids(batch, sequence - 2, g))


def _image_inputs(variant: int, seed: int) -> tuple:
    return (torch.randn(BATCHES[variant], 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator(seed)),)


AUDIO_SAMPLES = (400, 560)


def _image_calibration(seed: int) -> tuple:
    """A batch that calibrates BatchNorm (SegFormer's decode head has one)."""
    return (torch.randn(4, 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator(seed)),)


def _audio_inputs(variant: int, seed: int) -> tuple:
    return (torch.randn(BATCHES[variant], AUDIO_SAMPLES[variant], generator=generator(seed)),)


WHISPER_MELS, WHISPER_FRAMES = 16, 32  # Whisper requires exactly 2 x max_source_positions feature frames


def _whisper_inputs(variant: int, seed: int) -> tuple:
    batch, sequence = TEXT_SHAPES[variant]
    g = generator(seed)
    return (torch.randn(batch, WHISPER_MELS, WHISPER_FRAMES, generator=g), token_ids(batch, sequence, g))


# -- kinds of model: their inputs, names, dynamic axes -----------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    input_keys: tuple[str, ...]
    inputs: Callable[[int, int], tuple]
    dynamic: dict[str, dict[int, str]]  # dynamic axes of each input
    output_axes: dict[int, str]
    calibration: Callable[[int], tuple] | None = None


_TEXT_AXES = {0: "batch", 1: "sequence"}
TEXT = Kind(("input_ids", "attention_mask"), _text_inputs, {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES},
            _TEXT_AXES)
SEQ2SEQ = Kind(("input_ids", "attention_mask", "decoder_input_ids"), _seq2seq_inputs,
               {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES,
                "decoder_input_ids": {0: "batch", 1: "decoder_sequence"}},
               {0: "batch", 1: "decoder_sequence"})
IMAGE = Kind(("pixel_values",), _image_inputs, {"pixel_values": {0: "batch"}}, {0: "batch"}, _image_calibration)
AUDIO = Kind(("input_values",), _audio_inputs, {"input_values": {0: "batch", 1: "samples"}},
             {0: "batch", 1: "frames"})
WHISPER = Kind(("input_features", "decoder_input_ids"), _whisper_inputs,
               {"input_features": {0: "batch"}, "decoder_input_ids": {0: "batch", 1: "decoder_sequence"}},
               {0: "batch", 1: "decoder_sequence"})


# -- what sets an architecture's lowest opset -------------------------------------------------------------------
# Measured: each entry exported static and dynamic at every opset; its claim is the lowest opset from which both
# pass, and its reason names every ONNX feature above opset 7 the two exports need.
Floor = tuple  # (opset, the ONNX feature that needs it)
ERF: Floor = (9, "GELU needs Erf (opset 9)")
WHERE: Floor = (9, "attention masking selects between float tensors (masked_fill/where) with Where (opset 9)")
RANGE: Floor = (9, "the dynamic export builds positions with a range of run-time length (opset 9)")
SLICE: Floor = (10, "the dynamic export slices position tables and masks to the run-time sequence length: Slice "
                    "with input bounds (opset 10)")
STRIDED_SLICE: Floor = (10, "the dynamic export takes a strided slice of a run-time length (Slice with steps, "
                            "opset 10)")
CUMSUM: Floor = (11, "the dynamic export numbers positions by a cumulative sum along the run-time sequence "
                     "(CumSum, opset 11)")
RESIZE: Floor = (11, "the decode head upsamples to a run-time size (Resize with sizes, opset 11)")
EXPERT_SORT: Floor = (11, "the tokens are sorted by expert: an int64 sort needs TopK-11")
BFLOAT16: Floor = (13, "the ALiBi slopes are computed in bfloat16 (Cast to bfloat16, opset 13)")

# A representative of each kind in the quick tier, at its lowest opset and the highest we support.
QUICK = ("hf_bert", "hf_llama", "hf_t5", "hf_wav2vec2", "hf_vit")


# -- architectures ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Architecture:
    """One transformers architecture: its model class, tiny config, the kind of inputs it takes and its floors."""

    name: str
    model_class: str  # a class of ``transformers``
    config_class: str
    config: dict
    floors: tuple[Floor, ...] = ()
    kind: Kind = TEXT
    output: str = "last_hidden_state"
    notes: str = ""

    def build(self) -> torch.nn.Module:
        return Plain(self.model(), self.kind.input_keys, self.output)

    def model(self, **overrides) -> torch.nn.Module:
        """The transformers model itself, in eval mode, its config's entries overridden by ``overrides``."""
        import transformers  # here, not at the top: importing it takes seconds, and listing the zoo needs none of it

        config = getattr(transformers, self.config_class)(**{**self.config, **overrides})
        return getattr(transformers, self.model_class)(config).eval()

    def causal_lm(self) -> torch.nn.Module:
        """The model itself, in eval mode, with its key/value cache on (the form generation runs)."""
        return self.model(use_cache=True)

    def entry(self) -> ZooEntry:
        min_opset = max((opset for opset, _ in self.floors), default=MIN_OPSET)
        return ZooEntry(
            name=self.name, kind="model", family=FAMILY, build=self.build, inputs=self.kind.inputs,
            calibration_inputs=self.kind.calibration,
            input_names=list(self.kind.input_keys), output_names=[self.output],
            dynamic_axes={**self.kind.dynamic, self.output: self.kind.output_axes},
            min_opset=min_opset, min_opset_reason="; ".join(reason for _, reason in self.floors),
            quick_opsets=(min_opset, DEFAULT_OPSET, MAX_OPSET) if self.name in QUICK else (), cost=0.5,
            notes="; ".join(filter(None, [f"transformers.{self.model_class}", self.notes])),
        )


def _text_config(**overrides) -> dict:
    """The sizes BERT-style configs share (the names most configs use), the cache off, special ids in range."""
    return {"vocab_size": VOCAB, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "intermediate_size": FFN, "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1,
            "eos_token_id": 2, "use_cache": False, **overrides}


def _encoder(name: str, prefix: str, floors: tuple, **overrides) -> Architecture:
    return Architecture(name, f"{prefix}Model", f"{prefix}Config", _text_config(**overrides), floors)


def _decoder(name: str, prefix: str, floors: tuple, model_class: str = "", **overrides) -> Architecture:
    return Architecture(name, model_class or f"{prefix}ForCausalLM", f"{prefix}Config", _text_config(**overrides),
                        floors, output="logits")


def _seq2seq(name: str, prefix: str, model_class: str = "", **overrides) -> Architecture:
    """A BART-style encoder-decoder (its config names each side's sizes)."""
    sizes = {"d_model": HIDDEN, "encoder_layers": LAYERS, "decoder_layers": LAYERS, "encoder_attention_heads": HEADS,
             "decoder_attention_heads": HEADS, "encoder_ffn_dim": FFN, "decoder_ffn_dim": FFN,
             "decoder_start_token_id": 1}
    return Architecture(name, model_class or f"{prefix}ForConditionalGeneration", f"{prefix}Config",
                        _text_config(**{**sizes, **overrides}), (RANGE,), kind=SEQ2SEQ, output="logits")


def _vision(name: str, prefix: str, floors: tuple, model_class: str = "", **overrides) -> Architecture:
    config = {"image_size": IMAGE_SIZE, "patch_size": 8, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "intermediate_size": FFN, "num_labels": 10, **overrides}
    model_class = model_class or f"{prefix}ForImageClassification"
    output = "last_hidden_state" if model_class.endswith("Model") else "logits"
    return Architecture(name, model_class, f"{prefix}Config", config, floors, kind=IMAGE, output=output)


def _speech(name: str, prefix: str, **overrides) -> Architecture:
    """A wav2vec2-style speech encoder, its convolutional feature extractor shrunk to two layers (stride 10)."""
    config = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "intermediate_size": FFN, "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3),
              "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4, "vocab_size": VOCAB, **overrides}
    return Architecture(name, f"{prefix}Model", f"{prefix}Config", config, (ERF,), kind=AUDIO)


def architectures() -> list[Architecture]:
    return [
        # encoders
        _encoder("hf_bert", "Bert", (ERF, SLICE)),
        _encoder("hf_roberta", "Roberta", (ERF, CUMSUM), pad_token_id=1),
        _encoder("hf_xlm_roberta", "XLMRoberta", (ERF, CUMSUM), pad_token_id=1),
        _encoder("hf_camembert", "Camembert", (ERF, CUMSUM), pad_token_id=1),
        _encoder("hf_electra", "Electra", (ERF, SLICE), embedding_size=16),
        _encoder("hf_albert", "Albert", (SLICE,), embedding_size=16),
        _encoder("hf_deberta", "Deberta", (WHERE, SLICE)),
        _encoder("hf_deberta_v2", "DebertaV2", (WHERE, SLICE)),
        _encoder("hf_mpnet", "MPNet", (WHERE, CUMSUM), pad_token_id=1),
        _encoder("hf_convbert", "ConvBert", (WHERE, SLICE), embedding_size=16),
        _encoder("hf_modernbert", "ModernBert", (ERF, RANGE), global_attn_every_n_layers=2, local_attention=4,
                 cls_token_id=3, sep_token_id=2),
        Architecture("hf_distilbert", "DistilBertModel", "DistilBertConfig",
                     {"vocab_size": VOCAB, "dim": HIDDEN, "n_layers": LAYERS, "n_heads": HEADS, "hidden_dim": FFN,
                      "max_position_embeddings": 64, "pad_token_id": 0}, (ERF, SLICE)),
        Architecture("hf_clip_text", "CLIPTextModel", "CLIPTextConfig", _text_config(), (SLICE,)),
        # decoder-only: learned positions
        _decoder("hf_gpt2", "GPT2", (RANGE,), model_class="GPT2LMHeadModel", n_inner=FFN),
        _decoder("hf_opt", "OPT", (CUMSUM,), ffn_dim=FFN, word_embed_proj_dim=HIDDEN),
        _decoder("hf_gpt_neo", "GPTNeo", (WHERE, SLICE), attention_types=[[["global", "local"], 1]], window_size=4),
        # rotary positions, grouped-query attention where the architecture has it
        _decoder("hf_llama", "Llama", (SLICE,), num_key_value_heads=2),
        _decoder("hf_mistral", "Mistral", (SLICE,), num_key_value_heads=2, sliding_window=4),
        _decoder("hf_qwen2", "Qwen2", (SLICE,), num_key_value_heads=2),
        _decoder("hf_qwen3", "Qwen3", (SLICE,), num_key_value_heads=2, head_dim=8),
        _decoder("hf_gemma", "Gemma", (SLICE,), num_key_value_heads=1, head_dim=8),
        _decoder("hf_gemma2", "Gemma2", (WHERE, SLICE), num_key_value_heads=2, head_dim=8, sliding_window=4),
        _decoder("hf_phi", "Phi", (RANGE,), partial_rotary_factor=0.5),
        _decoder("hf_phi3", "Phi3", (RANGE,), num_key_value_heads=2),
        _decoder("hf_falcon", "Falcon", (ERF, SLICE), new_decoder_architecture=True, num_kv_heads=2),
        _decoder("hf_gptj", "GPTJ", (WHERE, RANGE), rotary_dim=4, n_inner=FFN),
        _decoder("hf_gpt_neox", "GPTNeoX", (ERF, RANGE), rotary_pct=0.5),
        _decoder("hf_codegen", "CodeGen", (WHERE, STRIDED_SLICE), rotary_dim=4, n_inner=FFN, n_ctx=64),
        _decoder("hf_stablelm", "StableLm", (RANGE,), num_key_value_heads=2),
        _decoder("hf_starcoder2", "Starcoder2", (SLICE,), num_key_value_heads=2),
        _decoder("hf_olmo", "Olmo", (SLICE,)),
        _decoder("hf_granite", "Granite", (SLICE,), num_key_value_heads=2),
        # Mixture of experts in both of transformers' forms: "batched_mm" gathers each token's experts' weights;
        # the default, "grouped_mm", sorts the tokens by expert and multiplies groups of data-dependent sizes
        # (aten::_grouped_mm, the group ends from torch.histc counts).
        _decoder("hf_mixtral", "Mixtral", (SLICE,), num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                 experts_implementation="batched_mm"),
        _decoder("hf_mixtral_grouped_mm", "Mixtral", (SLICE, EXPERT_SORT), num_key_value_heads=2, num_local_experts=4,
                 num_experts_per_tok=2),
        # ALiBi positions
        _decoder("hf_bloom", "Bloom", (WHERE, CUMSUM)),
        _decoder("hf_mpt", "Mpt", (WHERE, SLICE), expansion_ratio=2),
        _decoder("hf_falcon_alibi", "Falcon", (BFLOAT16,), alibi=True),
        # encoder-decoders
        Architecture("hf_t5", "T5ForConditionalGeneration", "T5Config",
                     _text_config(d_model=HIDDEN, d_kv=8, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS,
                                  decoder_start_token_id=0, relative_attention_num_buckets=8),
                     (WHERE, RANGE), kind=SEQ2SEQ, output="logits"),
        _seq2seq("hf_bart", "Bart"),
        _seq2seq("hf_mbart", "MBart"),
        _seq2seq("hf_marian", "Marian", model_class="MarianMTModel", decoder_start_token_id=0),
        _seq2seq("hf_pegasus", "Pegasus", decoder_start_token_id=0),
        Architecture("hf_whisper", "WhisperForConditionalGeneration", "WhisperConfig",
                     _text_config(d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
                                  encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
                                  decoder_ffn_dim=FFN, num_mel_bins=WHISPER_MELS,
                                  max_source_positions=WHISPER_FRAMES // 2, max_target_positions=64,
                                  decoder_start_token_id=1),
                     (CUMSUM,), kind=WHISPER, output="logits"),
        # speech encoders
        _speech("hf_wav2vec2", "Wav2Vec2"),
        _speech("hf_hubert", "Hubert"),
        _speech("hf_wavlm", "WavLM", num_buckets=16, max_bucket_distance=32),
        # vision
        _vision("hf_vit", "ViT", (ERF,)),
        _vision("hf_deit", "DeiT", (ERF,)),
        _vision("hf_beit", "Beit", (ERF,), use_relative_position_bias=True),
        _vision("hf_dinov2", "Dinov2", (ERF,), model_class="Dinov2Model"),
        _vision("hf_swin", "Swin", (ERF, STRIDED_SLICE), patch_size=2, embed_dim=16, depths=[1, 1],
                num_attention_heads=[2, 2], window_size=4),
        _vision("hf_convnext", "ConvNext", (ERF,), patch_size=4, hidden_sizes=[16, 32], depths=[1, 1]),
        _vision("hf_segformer", "Segformer", (ERF, RESIZE), model_class="SegformerForSemanticSegmentation",
                num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], patch_sizes=[7, 3],
                strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=32),
        _vision("hf_clip_vision", "CLIPVision", (), model_class="CLIPVisionModel"),
        _vision("hf_siglip_vision", "SiglipVision", (), model_class="SiglipVisionModel"),
    ]


# (batch, past length) of the decode step's variant 0 (exported) and variant 1 (the dynamic check)
DECODE_SHAPES = ((2, 5), (3, 9))
KV_HEADS = 2  # hf_llama's grouped-query attention: 4 query heads share 2 key/value heads


def _decode_step_inputs(variant: int, seed: int) -> tuple:
    """One new token per row after a cache of ``past`` positions; the last row's first position is padding (left
    padding, as batched generation pads), the cache random."""
    batch, past = DECODE_SHAPES[variant]
    g = generator(seed)
    mask = torch.ones(batch, past + 1, dtype=torch.int64)
    mask[-1, 0] = 0
    cache = tuple(torch.randn(batch, KV_HEADS, past, HIDDEN // HEADS, generator=g) for _ in range(2 * LAYERS))
    return (token_ids(batch, 1, g), mask, *cache)


def decode_step_entry() -> ZooEntry:
    """hf_llama's decode step as generation exports it: the key/value cache as inputs (``past_key_values.N.key``)
    and outputs (``present.N.key``), dynamic batch, past length and sequence (``model_zoo.generation``)."""
    from model_zoo.generation import DecodeStep, decode_step_axes

    llama = next(arch for arch in architectures() if arch.name == "hf_llama")
    names, axes = decode_step_axes(LAYERS)
    entry = llama.entry()
    return replace(entry, name="hf_llama_decode_step", build=lambda: DecodeStep(llama.causal_lm()),
                   inputs=_decode_step_inputs, calibration_inputs=None, input_names=names[0],
                   output_names=names[1], dynamic_axes=axes,
                   notes=f"{entry.notes}; one decode step, the cache in and out as tensors")


# -- the calling convention of library exporters -----------------------------------------------------------------
# Hugging Face Optimum, and the exporters built like it, call export with the model's inputs as a dict, the last
# element of ``args``, in the order of their own input specification (attention_mask before input_ids, the cache
# after the mask), and ``input_names`` in the order of forward's signature (Optimum's ``ordered_inputs``), nested
# arguments flattened (``past_key_values.0.key``). torch.onnx binds a trailing dict by forward's signature, so each
# name lands on the tensor of that name. These entries call the exporter that way, on a forward with the parameters
# the library exports (in the model's own order) that calls the model by keyword, as Optimum's patched forwards do:
# torch.onnx passes the bound arguments positionally, defaults filled in, and a transformers model's own decorated
# forward (BertModel's, BartDecoder's) then refuses ``use_cache`` given twice; T5ForConditionalGeneration's takes them
# as they are. The harness feeds ONNX Runtime by the same names (``conformance.feeds``), so an export that binds a dict
# entry to another's input fails them.
class BertKeywords(torch.nn.Module):
    """BertModel's text inputs, by keyword; its last hidden state and pooled output, by name."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return {"last_hidden_state": out.last_hidden_state, "pooler_output": out.pooler_output}


class DecoderKeywords(torch.nn.Module):
    """An encoder-decoder's decoder stack on the encoder's states, by keyword (its own order of them)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask=None):
        return self.model(input_ids=input_ids, encoder_hidden_states=encoder_hidden_states,
                          encoder_attention_mask=encoder_attention_mask).last_hidden_state


def _segments(ids: torch.Tensor) -> torch.Tensor:
    """Token type ids: the first half of each row segment 0, the rest segment 1."""
    segments = torch.zeros_like(ids)
    segments[:, ids.shape[1] // 2:] = 1
    return segments


def _bert_keyword_inputs(variant: int, seed: int) -> tuple:
    ids, mask = _text_inputs(variant, seed)
    return ({"token_type_ids": _segments(ids), "attention_mask": mask, "input_ids": ids},)


def _decoder_keyword_inputs(variant: int, seed: int) -> tuple:
    """A decoder's own inputs and the encoder's output, in the reverse of the decoder's signature."""
    batch, sequence = TEXT_SHAPES[variant]
    g = generator(seed)
    ids = token_ids(batch, sequence - 2, g)
    states = torch.randn(batch, sequence, HIDDEN, generator=g)
    return ({"encoder_attention_mask": padded_mask(batch, sequence), "encoder_hidden_states": states, "input_ids": ids},)


def _seq2seq_keyword_inputs(variant: int, seed: int) -> tuple:
    ids, mask, decoder_ids = _seq2seq_inputs(variant, seed)
    return ({"decoder_input_ids": decoder_ids, "attention_mask": mask, "input_ids": ids},)


class PastAsTuples(torch.nn.Module):
    """A causal LM's decode step with the signature and cache form library exporters give it: ``forward(input_ids,
    past_key_values, attention_mask)`` (GPT-2's own order), the cache in as one (key, value) pair per layer and out
    as the same pairs grown by the new token (``present``)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, past_key_values=None, attention_mask=None):
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        for layer, (key, value) in enumerate(past_key_values):
            cache.update(key, value, layer)
        out = self.model(input_ids=input_ids, past_key_values=cache, attention_mask=attention_mask, use_cache=True)
        return out.logits, tuple((layer.keys, layer.values) for layer in out.past_key_values.layers)


def _past_keyword_inputs(variant: int, seed: int) -> tuple:
    """One new token per row after a cache of ``past`` positions (the last row's first one padding), as Optimum
    orders a decoder's inputs: input_ids, attention_mask, then the cache."""
    batch, past = DECODE_SHAPES[variant]
    g = generator(seed)
    ids = token_ids(batch, 1, g)
    mask = torch.ones(batch, past + 1, dtype=torch.int64)
    mask[-1, 0] = 0
    cache = tuple(tuple(torch.randn(batch, HEADS, past, HIDDEN // HEADS, generator=g) for _ in range(2))
                  for _ in range(LAYERS))
    return ({"input_ids": ids, "attention_mask": mask, "past_key_values": cache},)


def _keyword_entry(arch: Architecture, name: str, build: Callable[[], torch.nn.Module],
                   inputs: Callable[[int, int], tuple], input_names: list[str], output_names: list[str],
                   dynamic_axes: dict, quick: bool, notes: str) -> ZooEntry:
    entry = arch.entry()
    return replace(entry, name=name, build=build, inputs=inputs, calibration_inputs=None, input_names=input_names,
                   output_names=output_names, dynamic_axes=dynamic_axes, quick_opsets=(DEFAULT_OPSET, MAX_OPSET) if quick else (),
                   notes=f"{entry.notes}; called as library exporters call: {notes}")


def keyword_entries() -> list[ZooEntry]:
    """Transformers models exported with a dict of inputs in another order than forward's (see above)."""
    from model_zoo.generation import cache_names, decode_step_axes

    by_name = {arch.name: arch for arch in architectures()}
    bert, gpt2, bart, t5 = (by_name[name] for name in ("hf_bert", "hf_gpt2", "hf_bart", "hf_t5"))
    decoder_axes = {0: "batch", 1: "decoder_sequence"}
    past_names, present_names = cache_names(LAYERS)
    _, decode_axes = decode_step_axes(LAYERS)
    return [
        _keyword_entry(
            bert, "hf_bert_kwargs", lambda: BertKeywords(bert.model()), _bert_keyword_inputs,
            ["input_ids", "attention_mask", "token_type_ids"], ["last_hidden_state", "pooler_output"],
            {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES, "token_type_ids": _TEXT_AXES,
             "last_hidden_state": _TEXT_AXES, "pooler_output": {0: "batch"}}, quick=True,
            notes="BertModel given {token_type_ids, attention_mask, input_ids}"),
        _keyword_entry(
            gpt2, "hf_gpt2_past_kwargs", lambda: PastAsTuples(gpt2.causal_lm()), _past_keyword_inputs,
            ["input_ids", *past_names, "attention_mask"], ["logits", *present_names], decode_axes, quick=True,
            notes="a decode step given {input_ids, attention_mask, past_key_values: ((key, value), ...)}"),
        _keyword_entry(  # GELU's Erf sets the static export's floor too (BART's model as a whole: its range)
            replace(bart, floors=(ERF, RANGE)), "hf_bart_decoder_kwargs",
            lambda: DecoderKeywords(bart.model().get_decoder()), _decoder_keyword_inputs,
            ["input_ids", "encoder_hidden_states", "encoder_attention_mask"], ["last_hidden_state"],
            {"input_ids": decoder_axes, "encoder_hidden_states": _TEXT_AXES, "encoder_attention_mask": _TEXT_AXES,
             "last_hidden_state": decoder_axes}, quick=True,
            notes="BART's decoder given {encoder_attention_mask, encoder_hidden_states, input_ids}"),
        _keyword_entry(
            t5, "hf_t5_kwargs", t5.model, _seq2seq_keyword_inputs,
            ["input_ids", "attention_mask", "decoder_input_ids"], ["logits", "encoder_last_hidden_state"],
            {**SEQ2SEQ.dynamic, "logits": decoder_axes, "encoder_last_hidden_state": _TEXT_AXES}, quick=False,
            notes="T5ForConditionalGeneration itself given {decoder_input_ids, attention_mask, input_ids}"),
    ]


def transformers_entries() -> list[ZooEntry]:
    """One entry per architecture, of family ``transformers``, the decode step of a rotary decoder, and the entries
    called as library exporters call (``keyword_entries``)."""
    return [arch.entry() for arch in architectures()] + [decode_step_entry()] + keyword_entries()
