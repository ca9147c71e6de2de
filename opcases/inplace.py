"""Cases of ``exporter/symbolics/inplace.py``: assignment into views of scripted and traced code (``copy_``,
``select_scatter``, ``slice_scatter``, ``set_``) once the mutation pass has made it functional."""

from __future__ import annotations

import torch

from opcases import OpCase
from opcases.control_flow import _run_time_slice_inputs


def _assign_block(data, block):
    data[1:, :2] = block
    return data + 0


class _LoopRowAssignment(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        for i in range(x.size(0)):
            out[i] = x[i] * (i + 1)
        return out


def _assign_constant_row_from_size(x):
    """``x[:, n:] = row`` with ``n = x.size(0)``: a trace records the row expanded to the traced size of the view."""
    x = x.clone()
    x[:, x.size(0):] = torch.tensor([1.0, 2.0, 3.0])
    return x


def _assign_row(data, row):
    data[-1] = row
    return data + 0


def _assign_run_time_slice(x, start, stop, step):
    """``x[start:stop:step] = ...`` with all three computed at run time (graph inputs): Slice with input steps reads
    the view (opset 10); the write-back gathers from Concat(x, new) at computed positions."""
    x = x.clone()
    x[start:stop:step] = x[start:stop:step] * 10 + 1
    return x


def _assign_strided(data):
    data[:, ::2] = 0.5
    return data * 3


def _assign_strided_rows(x):
    x = x.clone()
    x[1::2] = 0.5
    return x


CASES = [
    OpCase("select_scatter", lambda k: (torch.randn(3 + k, 4), torch.randn(4)), sample="negative_index",
           fn=_assign_row),
    # Static only: with a dynamic row count, writing at the loop index cuts the tensor at a run-time position,
    # which needs Slice with input bounds (opset 10); the harness has no dynamic-only minimum opset, so
    # tests/engine/test_scripting.py checks the dynamic export (passes from 10, the right error below).
    OpCase("select_scatter", lambda k: (torch.randn(4 + k, 3),), sample="loop_index", dynamic=False,
           module=lambda: torch.jit.script(_LoopRowAssignment())),
    OpCase("slice_scatter", lambda k: (torch.randn(3, 4 + k), torch.randn(2, 2)), sample="block",
           fn=_assign_block),
    OpCase("slice_scatter", lambda k: (torch.randn(2 + k, 5),), sample="strided", fn=_assign_strided),
    OpCase("set_", lambda k: (torch.ones(2, 3), torch.randn(4 + k, 6)), fn=lambda x, y: x.set_(y) * 2),
    OpCase("copy_", lambda k: (torch.randn(2 + k, 5 - k, 3),), sample="broadcast_constant_run_time_view",
           fn=_assign_constant_row_from_size, dynamic_min_opset=10),
    OpCase("slice_scatter", _run_time_slice_inputs, sample="run_time_step", min_opset=10, fn=_assign_run_time_slice),
    OpCase("slice_scatter", lambda k: (torch.randn(5 + 2 * k, 3),), sample="strided_run_time_size",
           fn=_assign_strided_rows, dynamic_min_opset=10),
]
