"""The transformers family of the model zoo, end to end through the conformance worker: representative
architectures exported with dynamic batch and sequence axes, checked on a second shape, compared with PyTorch."""

from __future__ import annotations

import pytest

import model_zoo
from exporter.registry import MAX_OPSET
from model_zoo.transformers_models import FAMILY

# One of each kind of input and position scheme, cheap enough for the test suite (about 20 s on two cores).
REPRESENTATIVES = [
    ("hf_bert", "dynamic"),             # encoder, learned positions, padded attention mask
    ("hf_llama", "dynamic"),            # decoder-only, rotary positions, grouped-query attention
    ("hf_bloom", "dynamic"),            # decoder-only, ALiBi positions
    ("hf_mixtral_grouped_mm", "dynamic"),  # mixture of experts, transformers' default: histc and _grouped_mm
    ("hf_whisper", "dynamic"),          # encoder-decoder on log-mel features (reaches aten::diff)
    ("hf_wav2vec2", "dynamic"),         # speech encoder: convolutional feature extractor, dynamic audio length
    ("hf_vit", "static"),               # vision transformer
]


def _run(name: str, opset: int, mode: str, tmp_path) -> dict:
    from conformance.cases import select
    from conformance.prepared import WorkerState
    from conformance.worker import configure_process, run_conformance_case

    (case,) = select(tier="full", opsets=(opset,), modes=(mode,), models=[name])
    configure_process()
    return run_conformance_case(case.as_dict(), WorkerState(str(tmp_path)), str(tmp_path / "repro"))


@pytest.mark.parametrize("name,mode", REPRESENTATIVES)
def test_representative_architecture_passes_at_the_highest_opset(name, mode, tmp_path):
    row = _run(name, MAX_OPSET, mode, tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])
    assert row["family"] == FAMILY
    if mode == "dynamic":
        assert "dynamic input 1" in row["comparison"]


def test_every_architecture_is_registered_with_a_reasoned_lowest_opset():
    entries = [e for e in model_zoo.entries() if e.family == FAMILY]
    assert len(entries) >= 30
    assert all(e.dynamic_axes for e in entries)
    assert all(e.min_opset_reason for e in entries if e.min_opset > 7)


def test_below_its_lowest_opset_an_entry_is_expected_unsupported(tmp_path):
    entry = model_zoo.get("hf_bert")
    row = _run("hf_bert", entry.min_opset - 1, "dynamic", tmp_path)
    assert row["status"] == "unsupported" and row["reason"].startswith("expected:"), row


def test_bart_static_export_masks_its_decoder(tmp_path):
    """A static export folds the decoder's causal mask into a constant torch.bool tensor; attention once read its
    torch dtype as an ONNX type and added the mask as 1/0 instead of 0/-inf (silently wrong numbers)."""
    row = _run("hf_bart", MAX_OPSET, "static", tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_the_quick_tier_guards_a_decode_step_with_its_cache(mode, tmp_path):
    entry = model_zoo.get("hf_llama_decode_step")
    assert MAX_OPSET in entry.quick_opsets
    assert entry.input_names[2:4] == ["past_key_values.0.key", "past_key_values.0.value"]
    assert entry.output_names[1:3] == ["present.0.key", "present.0.value"]
    row = _run("hf_llama_decode_step", MAX_OPSET, mode, tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])
    if mode == "dynamic":
        assert "dynamic input 1" in row["comparison"]


@pytest.mark.parametrize("opset", [10, 13])
def test_convbert_dynamic_export_below_14_keeps_its_im2col_channels(opset, tmp_path):
    """Shape inference loses the channel count of ConvBERT's im2col input at opsets 10-13 in a dynamic export;
    the symbolic takes the captured count (it refused before)."""
    row = _run("hf_convbert", opset, "dynamic", tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])


@pytest.mark.parametrize("opset", [13, MAX_OPSET])
def test_falcon_alibi_keeps_its_bfloat16_slopes(opset, tmp_path):
    """Falcon computes its ALiBi slopes in bfloat16: the constant was once written as float32 (the checker refused
    the Mul), and ONNX Runtime's CPU provider has no bfloat16 Mul (the export records the float32 workaround)."""
    row = _run("hf_falcon_alibi", opset, "dynamic", tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])
    assert "bfloat16_arithmetic_in_float" in row["workarounds"]


def test_falcon_alibi_below_13_names_the_opset_bfloat16_needs(tmp_path):
    row = _run("hf_falcon_alibi", 12, "static", tmp_path)
    assert row["status"] == "unsupported" and "needs opset >= 13" in row["error"], row


def test_the_calling_convention_entries_give_a_dict_out_of_forwards_order_and_names_in_its_order():
    """What library exporters (Optimum) pass: the inputs as a trailing dict in their own order, input_names in
    forward's; the quick tier has three of them, the harness feeding each by its names."""
    from conformance.feeds import bound_arguments, parameters_of

    entries = [e for e in model_zoo.entries() if e.name.endswith("_kwargs")]
    assert len([e for e in entries if e.quick_opsets]) == 3
    for entry in entries:
        (given,) = entry.inputs(0, 0)
        parameters = parameters_of(entry.build())
        order = [p.name for p in parameters]
        assert list(given) != sorted(given, key=order.index), entry.name  # the dict is not in forward's order
        bound = [name for name, _ in bound_arguments((given,), parameters) if name in given]
        arguments = list(dict.fromkeys(name.split(".")[0] for name in entry.input_names))  # past_key_values.0.key
        assert arguments == bound, entry.name


def test_a_decode_step_given_its_nested_cache_in_a_dict_passes(tmp_path):
    entry = model_zoo.get("hf_gpt2_past_kwargs")
    assert entry.input_names[1:3] == ["past_key_values.0.key", "past_key_values.0.value"]
    assert "past_key_values.1.value" in entry.dynamic_axes
    row = _run("hf_gpt2_past_kwargs", MAX_OPSET, "dynamic", tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")  # its Python checks of sizes, which the trace fixes
def test_longformer_static_export_chunks_its_sliding_windows_exactly():
    """Longformer (and LED, which shares its attention) cuts a reshaped view of its heads into overlapping windows with
    as_strided: the export refused it (the view is not contiguous), and torch.onnx's static export gathers from the
    view as if it were, silently wrong. Its weights are drawn wide (std 0.5) so that attention, not the residual
    path, decides the output."""
    import io

    import numpy as np
    import onnxruntime as ort
    import torch
    from transformers import LongformerConfig, LongformerModel

    import exporter

    torch.manual_seed(0)
    config = LongformerConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=37,
                              attention_window=[4], max_position_embeddings=64, vocab_size=100, initializer_range=0.5)
    model = model_zoo.transformers_models.Plain(LongformerModel(config), ("input_ids", "attention_mask"),
                                                "last_hidden_state").eval()
    ids, mask = torch.randint(4, 100, (2, 16)), torch.ones(2, 16, dtype=torch.long)
    mask[1, -3:] = 0
    buffer = io.BytesIO()
    exporter.export(model, (ids, mask), buffer, opset_version=17, input_names=["ids", "mask"], dynamo=False)
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {"ids": ids.numpy(), "mask": mask.numpy()})
    with torch.no_grad():
        expected = model(ids, mask).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)
