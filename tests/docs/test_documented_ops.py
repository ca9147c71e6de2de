"""Every operator the torch.onnx documentation lists as supported has a symbolic at the lowest opset ONNX can
express it, or a recorded reason why ONNX 7-16 cannot.

The lists are read from the reference documents (copied from ``../shared/reference`` into ``tests/docs/data/torch_onnx_docs``): the 1.0 and
1.5 docs list the operators in their "Supported operators" section. The 1.13 docs have no list of their own (they
point to a generated table of TorchScript operators that is not part of the reference), which the last test checks.
"""

from __future__ import annotations

import os
import re

import pytest

import exporter  # noqa: F401  (registers the symbolics)
from exporter.registry import REGISTRY

DOCS = os.environ.get("TORCH_ONNX_DOCS", os.path.join(os.path.dirname(__file__), "data", "torch_onnx_docs"))
LISTS = {"1.0": "torch_onnx_docs_v1.0.rst", "1.5": "torch_onnx_docs_v1.5.txt"}

# A documented name -> the TorchScript ops it stands for (default: aten::<name>).
TORCHSCRIPT_OPS = {
    "BatchNorm": ["aten::batch_norm"], "ConstantPadNd": ["aten::constant_pad_nd"],
    "Conv": ["aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d"],
    "Dropout": ["aten::dropout"], "Embedding": ["aten::embedding"], "FeatureDropout": ["aten::feature_dropout"],
    "Index": ["aten::index"], "MaxPool1d": ["aten::max_pool1d"], "MaxPool2d": ["aten::max_pool2d"],
    "MaxPool3d": ["aten::max_pool3d"], "RNN": ["aten::rnn_tanh", "aten::rnn_relu", "aten::lstm", "aten::gru"],
    "and": ["aten::__and__", "aten::bitwise_and"], "or": ["aten::__or__", "aten::bitwise_or"],
    "bitshift": ["aten::__lshift__", "aten::__rshift__"], "concat": ["aten::concat"], "copy": ["aten::copy_"],
    "det": ["aten::det", "aten::linalg_det"], "dim_arange": ["aten::_dim_arange"],
    "interpolate": ["aten::upsample_nearest2d", "aten::upsample_bilinear2d"],
    "reflection_pad": ["aten::reflection_pad1d", "aten::reflection_pad2d"],
    "replication_pad": ["aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d"],
    "unique": ["aten::_unique2", "aten::unique_dim"], "weight_norm": ["aten::_weight_norm"],
    "split": ["aten::split", "aten::split_with_sizes"],
}

# Ops ONNX cannot express below some opset, with the ONNX operator that sets it (the symbolic must start there).
LOWEST_OPSET = {
    "aten::erf": (9, "Erf exists from opset 9; no exact composition of older operators"),
    "aten::nonzero": (9, "NonZero exists from opset 9 (a data-dependent output size)"),
    "aten::index_copy": (9, "writing rows at tensor indices needs Scatter (opset 9)"),
    "aten::index_fill": (9, "filling at tensor indices needs Scatter (opset 9)"),
    "aten::index_put": (9, "a mask needs Where (opset 9), index tensors ScatterND (opset 11)"),
    "aten::det": (11, "Det exists from opset 11"),
    "aten::linalg_det": (11, "Det exists from opset 11"),
    "aten::logdet": (11, "Det exists from opset 11"),
    "aten::_unique2": (11, "Unique exists from opset 11 (a data-dependent output size)"),
    "aten::unique_dim": (11, "Unique exists from opset 11"),
}

def documented_names(version: str) -> list[str]:
    """The names in the "Supported operators" list of the ``version`` docs, without their parenthesised notes."""
    with open(os.path.join(DOCS, LISTS[version]), encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("The following operators are supported:", 1)[1].split("The operator set above", 1)[0]
    names = [re.sub(r"\s*\(.*\)\s*$", "", line.strip().lstrip("* ")) for line in section.splitlines()]
    return sorted({name for name in names if name})


def _documented_ops() -> list[tuple[str, str]]:
    if not all(os.path.exists(os.path.join(DOCS, f)) for f in LISTS.values()):
        return []
    pairs = {(name, op) for version in LISTS for name in documented_names(version)
             for op in TORCHSCRIPT_OPS.get(name, [f"aten::{name}"])}
    return sorted(pairs)


DOCUMENTED = _documented_ops()


def test_the_reference_lists_were_read():
    if not DOCUMENTED:
        pytest.skip(f"the reference docs are not at {DOCS} (set $TORCH_ONNX_DOCS)")
    assert len(documented_names("1.0")) >= 60 and len(documented_names("1.5")) >= 150


@pytest.mark.parametrize("name, op", DOCUMENTED, ids=[f"{n}-{o}" for n, o in DOCUMENTED])
def test_documented_op_has_symbolic_at_lowest_opset(name, op):
    lowest, why = LOWEST_OPSET.get(op, (7, "expressible at every opset"))
    registered = REGISTRY.min_opset(op)
    assert registered is not None, f"documented operator {name!r} ({op}) has no symbolic"
    assert registered <= lowest, f"{op} registered from opset {registered}, but ONNX expresses it at {lowest} ({why})"


def test_the_1_13_docs_point_to_a_generated_table():
    path = os.path.join(DOCS, "torch_onnx_docs_v1.13.txt")
    if not os.path.exists(path):
        pytest.skip(f"the reference docs are not at {DOCS}")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    assert "auto generated list of supported TorchScript operators" in text
    assert "The following operators are supported:" not in text
