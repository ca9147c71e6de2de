"""Transformers of the model zoo at opsets 23 and 26, through the conformance worker: they pass as at 20, and where
the model calls scaled_dot_product_attention (with no mask, a boolean mask or is_causal) or rms_norm, the graph holds
ONNX's Attention-23 / RMSNormalization-23 rather than their decomposed forms. The whole family at 23 and 26, static
and dynamic: ``python -m conformance run --tier full --ep cpu --opsets 23,26 --models 'hf_*' --kinds model``."""

from __future__ import annotations

import pytest

from tests.harness.test_transformers_zoo import _run

_FUSED = {"aten::scaled_dot_product_attention": "Attention", "aten::rms_norm": "RMSNormalization"}


@pytest.mark.parametrize("name, opset, mode", [
    ("hf_llama", 23, "dynamic"),   # causal, grouped-query heads, boolean padding mask
    ("hf_bert", 26, "static"),     # encoder, boolean padding mask
])
def test_attention_is_onnx_attention_where_the_model_calls_it(name, opset, mode, tmp_path):
    row = _run(name, opset, mode, tmp_path)
    assert row["status"] == "pass", (row["status"], row["error"])
    assert "aten::scaled_dot_product_attention" in row["aten_ops"]
    for aten_op, onnx_op in _FUSED.items():
        assert (aten_op in row["aten_ops"]) == (onnx_op in row["op_types"]), (aten_op, row["op_types"])
