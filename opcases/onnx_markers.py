"""Cases of ``exporter/symbolics/onnx_markers.py``: none run through the op-case runner, which compares ONNX Runtime
with the model run in PyTorch. A marker's eager value is a placeholder (``torch.onnx.ops.symbolic`` returns zeros of
the shape it is given: only the exported node computes), and ``onnx::RotaryEmbedding`` exports through torch.export
at every opset (decomposed below 23) but through TorchScript only from 23, which one ``min_opset`` per case cannot
say. ``tests/engine/test_custom_translation.py`` tests this family: the markers, a custom domain's marker, and
RotaryEmbedding and Attention below 23 against their exact decompositions."""

from __future__ import annotations

from opcases import OpCase

CASES: list[OpCase] = []
