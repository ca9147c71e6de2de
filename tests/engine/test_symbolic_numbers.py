"""Numbers a torch.export program computes from sizes are 0-d tensor outputs (int64, float32, bool: what
``torch.tensor`` makes of the number, as torch.onnx returns them), computed at run time; a Python number argument
that ``dynamic_shapes`` makes dynamic is refused rather than baked in (the converter would hold one value of it)."""

from __future__ import annotations

import pytest
import torch
import torch.onnx.testing

import exporter
from exporter.errors import ExportArgumentError

DYNAMIC = torch.export.Dim.DYNAMIC


@pytest.mark.parametrize(("name", "compute", "op"), [
    ("max", lambda x: torch.sym_max(*x.shape), "Max"),
    ("float", lambda x: torch.sym_float(x.shape[0]), "Cast"),
    ("not", lambda x: torch.sym_not(x.shape[0] == x.shape[1]), "Not"),
    ("ite", lambda x: torch.sym_ite(x.shape[0] > x.shape[1], x.shape[0], x.shape[1]), "Where"),
    ("product", lambda x: x.shape[0] * x.shape[1], "Mul"),
    ("sum", lambda x: torch.sym_sum(x.shape), "Add"),
])
def test_a_number_computed_from_sizes_is_a_0d_output_computed_at_run_time(name, compute, op):
    class Sizes(torch.nn.Module):
        def forward(self, x):
            return compute(x)

    program = exporter.export(Sizes(), (torch.zeros(2, 3),), dynamic_shapes=({0: DYNAMIC, 1: DYNAMIC},))
    torch.onnx.testing.assert_onnx_program(program)  # as torch.onnx: the number as torch.tensor(number)
    other = torch.zeros(5, 4)
    (got,) = program(other)
    assert got.shape == () and torch.equal(got, torch.tensor(compute(other)))
    assert op in {node.op_type for node in program.model_proto.graph.node}


def test_a_python_number_made_dynamic_is_refused_not_baked():
    class Offset(torch.nn.Module):
        def forward(self, a, x):
            return a + x

    with pytest.raises(ExportArgumentError, match="argument 'a' is a Python number that dynamic_shapes makes dynamic"):
        exporter.export(Offset(), (1, torch.ones(2)), dynamic_shapes=(DYNAMIC, {0: DYNAMIC}))
    program = exporter.export(Offset(), (1, torch.ones(2)), dynamic_shapes=(None, {0: DYNAMIC}))  # a constant
    torch.testing.assert_close(program(1, torch.ones(3))[0], torch.full((3,), 2.0))


def test_a_none_output_is_left_out_as_torch_onnx_leaves_it_out():
    class WithNone(torch.nn.Module):
        def forward(self, x):
            return x + 1, None, x * 2

    x = torch.randn(3)
    program = exporter.export(WithNone(), (x,))
    assert [o.name for o in program.model_proto.graph.output] == ["output_0", "output_1"]
    torch.onnx.testing.assert_onnx_program(program)
    torch.testing.assert_close(program(x), [x + 1, x * 2])
