"""Gather takes negative indices only from opset 11 (Gather-1: "all index values are expected to be within
bounds"); PyTorch's indexing counts them from the end. Below opset 11 the export must wrap them itself: ONNX Runtime
and onnx.reference accept negative indices at any opset, so only a strict Gather-1 tells a spec-valid export from
one that merely runs there."""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
import torch
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

import exporter
from opcases import FunctionModule


class Gather(OpRun):
    """Gather-1 as its spec reads: an index outside [0, size) is an error."""

    def _run(self, data, indices, axis=0):
        if (indices < 0).any() or (indices >= data.shape[axis]).any():
            raise ValueError("Gather-1: index out of bounds")
        return (np.take(data, indices, axis=axis),)


CASES = {
    "index_tensor": (lambda x, i: x[i], (torch.arange(12.0).reshape(4, 3), torch.tensor([-1, 0, -4, 2]))),
    "index_dim1": (lambda x, i: x[:, i], (torch.arange(12.0).reshape(3, 4), torch.tensor([[-1, 1], [-4, 3]]))),
}


@pytest.mark.parametrize("opset", [7, 9, 10])
@pytest.mark.parametrize("name", ["index_tensor", "index_dim1"])
def test_negative_indices_are_wrapped_before_opset_11(name, opset):
    fn, args = CASES[name]
    buffer = io.BytesIO()
    exporter.export(FunctionModule(fn).eval(), args, buffer, opset_version=opset, input_names=["x", "i"], dynamo=False)
    model = onnx.load_from_string(buffer.getvalue())
    feeds = {"x": args[0].numpy(), "i": args[1].numpy()}
    (actual,) = ReferenceEvaluator(model, new_ops=[Gather]).run(None, feeds)
    np.testing.assert_array_equal(actual, fn(*args).numpy())
