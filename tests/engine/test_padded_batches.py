"""A BERT batch in which one sequence is all padding: PyTorch gives finite numbers (scaled_dot_product_attention's
safe softmax gives a fully masked query 0), and so must the export, at every opset BERT exports at. Before the
fix the export gave NaN for that sequence at every opset, and the comparisons let it through."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import transformers

import exporter
from exporter.numerics import compare_arrays
from exporter.ort_session import make_session
from exporter.registry import MAX_OPSET

# BERT's position and token-type slices take their bounds at run time in a dynamic export: Slice-10.
LOWEST_OPSET = 10


class _Encoder(torch.nn.Module):
    def __init__(self, attention: str):
        super().__init__()
        torch.manual_seed(0)
        config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=64, attn_implementation=attention)
        self.bert = transformers.BertModel(config).eval()

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _padded_batch():
    ids = torch.randint(1, 100, (3, 6), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(3, 6, dtype=torch.long)
    mask[0, 4:] = 0
    mask[1] = 0  # sequence 1: nothing but padding
    return ids, mask


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("opset", range(LOWEST_OPSET, MAX_OPSET + 1))
def test_an_all_padding_sequence_exports_to_pytorchs_numbers(opset, attention):
    model, (ids, mask) = _Encoder(attention), _padded_batch()
    with torch.no_grad():
        expected = model(ids, mask).numpy()
    assert np.isfinite(expected).all()
    buffer = io.BytesIO()
    exporter.export(model, (ids, mask), buffer, opset_version=opset, input_names=["input_ids", "attention_mask"],
                    dynamic_axes={"input_ids": [0, 1], "attention_mask": [0, 1]}, dynamo=False)
    session = make_session(buffer.getvalue(), "cpu")
    actual = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
    verdict = compare_arrays([expected], actual, lambda scale: (1e-3, 1e-4))
    assert verdict.ok, verdict.message
