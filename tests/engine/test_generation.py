"""Generation with a key/value cache (model_zoo.generation), traced and through torch.export (dynamo=True), 8 greedy
tokens through ONNX Runtime with each step's cache fed to the next, compared with PyTorch's own greedy ``generate``:
the same tokens, and logits within the zoo's tolerance at every step. Decoder-only transformers are exported as a
prefill and a decode-step graph; encoder-decoders as an encoder, a first decoder step and a decoder step whose
cross-attention cache is computed once. Every model's output head is drawn afresh (``redraw_output_head``): with
random tied weights greedy decoding echoes one token."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exporter.numerics import compare_arrays
from exporter.registry import MAX_OPSET
from model_zoo.entry import DEFAULT_ATOL, DEFAULT_RTOL
from model_zoo.generation import (
    cache_names,
    export_for_generation,
    export_seq2seq_for_generation,
    greedy_seq2seq_through_onnx,
    greedy_through_onnx,
    redraw_output_head,
)
from model_zoo.transformers_models import FIRST_TOKEN, VOCAB, architectures, padded_mask

STEPS = 8
# "lowest": the architecture's lowest opset in the zoo (the run-time positions' Range, opset 9, or the run-time Slice
# bounds of rotary tables and masks, opset 10), the floor of its generation graphs too: one below, the export refuses.
OPSETS = ("lowest", 14, MAX_OPSET)
# Mistral's sliding-window cache (window 4 in the zoo's config) keeps only the window's last 3 keys, and counts the
# tokens it has seen beside them (``cumulative_length``, a Python int): a cache rebuilt from its tensors counts 3, so
# from the second step the decode step puts the new token at a wrong rotary position (3, not 4). The export is
# faithful: the same DecodeStep run eagerly in PyTorch is as far from ``generate`` (5e-4 at step 1; the tokens still
# agree). Passing would take the seen-token count as a graph input, and the window's Python branches (full or not)
# traced for each case.
_SLIDING_WINDOW = pytest.mark.xfail(strict=True, reason="sliding-window cache: rebuilt from its tensors it counts "
                                                        "only the window's tokens as seen, so positions drift from "
                                                        "step 1 (eager PyTorch through the wrapper too)")
DECODERS = ("hf_gpt2", "hf_llama", "hf_mistral", "hf_qwen2", "hf_phi", "hf_gemma", "hf_stablelm")
ENCODER_DECODERS = ("hf_t5", "hf_bart")


# Captured with torch.export (dynamo=True) too, one architecture per kind of graph: positions from a Range (GPT-2),
# rotary tables sliced at run-time bounds (Llama), an encoder-decoder (T5). Every other architecture passes under
# that capture as well (MEASUREMENTS.md); CI's time keeps it to these.
EXPORTED = ("hf_gpt2", "hf_llama", "hf_t5")


def _cases(names: tuple[str, ...]) -> list:
    """(name, opset, dynamo): each architecture traced at each of ``OPSETS``, and those of ``EXPORTED`` captured with
    torch.export at their lowest opset, where the program's run-time sizes ask the most of the lowering.
    Mistral's known failure is the wrapper's, traced."""
    cases = [pytest.param(name, opset, False, id=f"{name}-{opset}",
                          marks=[_SLIDING_WINDOW] if name == "hf_mistral" else [])
             for name in names for opset in OPSETS]
    return cases + [pytest.param(name, "lowest", True, id=f"{name}-lowest-export") for name in names if name in EXPORTED]
# BART's default init (std 0.02) leaves cross-attention too weak to matter: every source gave the same tokens, so the
# cross-attention cache would go untested by them. At 0.1 each source leads elsewhere.
_GENERATION_CONFIG = {"hf_bart": {"init_std": 0.1}}


def _architecture(name: str):
    (arch,) = [a for a in architectures() if a.name == name]
    return arch


def _opset(name: str, opset: int | str) -> int:
    return _architecture(name).entry().min_opset if opset == "lowest" else opset


def _generating_model(name: str) -> torch.nn.Module:
    """The zoo's architecture with its cache on, as generation runs it, its own output head, plain greedy
    generation (no end token, no forced tokens: ``STEPS`` tokens, no logits processor)."""
    import transformers

    arch = _architecture(name)
    config = getattr(transformers, arch.config_class)(**{**arch.config, "use_cache": True,
                                                         **_GENERATION_CONFIG.get(name, {})})
    torch.manual_seed(0)
    model = redraw_output_head(getattr(transformers, arch.model_class)(config).eval())
    model.generation_config.eos_token_id = None
    model.generation_config.forced_eos_token_id = None
    return model


def _generate(model: torch.nn.Module, inputs: torch.Tensor, attention_mask: torch.Tensor):
    """PyTorch's own greedy decoding of ``STEPS`` tokens, with each step's logits."""
    with torch.no_grad():
        return model.generate(inputs, attention_mask=attention_mask, max_new_tokens=STEPS, do_sample=False,
                              num_beams=1, output_logits=True, return_dict_in_generate=True, pad_token_id=0)


def _assert_matches(expected, tokens: np.ndarray, logits: list[np.ndarray]) -> None:
    """The same tokens as ``generate`` (its last ``STEPS``), logits within the zoo's tolerance at every step, and
    tokens varied enough that agreeing on them says something."""
    theirs = expected.sequences[:, -STEPS:].numpy()
    assert len(np.unique(theirs)) > STEPS // 2, f"degenerate reference tokens: {theirs.tolist()}"
    np.testing.assert_array_equal(tokens, theirs)
    for step, (ours, reference) in enumerate(zip(logits, expected.logits, strict=True)):
        verdict = compare_arrays([reference.numpy()], [ours], lambda scale: (DEFAULT_RTOL, DEFAULT_ATOL))
        assert verdict.ok, f"step {step}: {verdict.message}"


@pytest.mark.parametrize(("name", "opset", "dynamo"), _cases(DECODERS))
def test_greedy_decoding_through_onnx_runtime_matches_pytorch(name, opset, dynamo, tmp_path):
    model = _generating_model(name)
    generator = torch.Generator().manual_seed(1)
    traced_on = torch.randint(FIRST_TOKEN, VOCAB, (2, 5), generator=generator)
    prefill, decode = export_for_generation(model, traced_on, str(tmp_path), _opset(name, opset), dynamo=dynamo)
    prompt = torch.randint(FIRST_TOKEN, VOCAB, (3, 4), generator=generator)  # another batch and prompt length
    expected = _generate(model, prompt, torch.ones_like(prompt))
    _assert_matches(expected, *greedy_through_onnx(prefill, decode, prompt, STEPS))


@pytest.mark.parametrize(("name", "opset", "dynamo"), _cases(ENCODER_DECODERS))
def test_encoder_decoder_greedy_decoding_through_onnx_runtime_matches_pytorch(name, opset, dynamo, tmp_path):
    model = _generating_model(name)
    generator = torch.Generator().manual_seed(1)
    traced_on = torch.randint(FIRST_TOKEN, VOCAB, (2, 5), generator=generator)
    paths = export_seq2seq_for_generation(model, traced_on, str(tmp_path), _opset(name, opset), dynamo=dynamo)
    source = torch.randint(FIRST_TOKEN, VOCAB, (3, 7), generator=generator)  # another batch and source length,
    mask = padded_mask(*source.shape)  # its last row padded
    expected = _generate(model, source, mask)
    start = model.generation_config.decoder_start_token_id
    _assert_matches(expected, *greedy_seq2seq_through_onnx(paths, source, mask, start, STEPS))


def test_the_cache_is_named_as_the_ecosystem_names_it():
    past, present = cache_names(2)
    assert past == ["past_key_values.0.key", "past_key_values.0.value", "past_key_values.1.key",
                    "past_key_values.1.value"]
    assert present == ["present.0.key", "present.0.value", "present.1.key", "present.1.value"]
    past, present = cache_names(1, "encoder")
    assert past == ["past_key_values.0.encoder.key", "past_key_values.0.encoder.value"]
    assert present == ["present.0.encoder.key", "present.0.encoder.value"]
