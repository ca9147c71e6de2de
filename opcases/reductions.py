"""Cases for reductions: sum/mean/prod, max/min and their index forms, var/std, norms, logsumexp, all/any."""

import torch

from opcases import OpCase


def _x(k, *shape):
    """A float tensor whose dim 0 grows with the size variant (the dynamic axis)."""
    return torch.randn(shape[0] + k, *shape[1:])


def _ints(k, *shape):
    return torch.randint(-5, 6, (shape[0] + k, *shape[1:]))


def _distinct(k, *shape):
    """Floats without ties, so arg-reductions have one right answer."""
    count = (shape[0] + k) * torch.Size(shape[1:]).numel()
    return torch.randperm(count).float().reshape(shape[0] + k, *shape[1:]) - count / 2


CASES = [
    # sum
    OpCase("sum", lambda k: (_x(k, 2, 3, 4),), fn=lambda x: x.sum()),
    OpCase("sum", lambda k: (_x(k, 2, 3, 4),), sample="dims_keepdim", fn=lambda x: x.sum((0, -1), keepdim=True)),
    OpCase("sum", lambda k: (_x(k, 2, 3, 4),), sample="neg_dim", fn=lambda x: x.sum(-2)),
    OpCase("sum", lambda k: (_x(k, 2, 3),), sample="dtype_f64", fn=lambda x: x.sum(1, dtype=torch.float64)),
    OpCase("sum", lambda k: (_ints(k, 2, 3).int(),), sample="int32", fn=lambda x: x.sum(0)),
    OpCase("sum", lambda k: (_x(k, 2, 3) > 0,), sample="bool", fn=lambda x: x.sum(1)),
    OpCase("sum", lambda k: (_x(k, 2, 3).half(),), sample="float16", fn=lambda x: x.sum(1)),
    OpCase("sum", lambda k: (torch.randn(()),), sample="scalar_dim0", fn=lambda x: x.sum(0), dynamic=False),
    # mean
    OpCase("mean", lambda k: (_x(k, 2, 3, 4),), fn=lambda x: x.mean()),
    OpCase("mean", lambda k: (_x(k, 2, 3, 4),), sample="dims", fn=lambda x: x.mean([1, 2])),
    OpCase("mean", lambda k: (_x(k, 2, 3, 4),), sample="keepdim_neg", fn=lambda x: x.mean(-1, keepdim=True)),
    OpCase("mean", lambda k: (_x(k, 2, 3),), sample="dtype_f64", fn=lambda x: x.mean(0, dtype=torch.float64)),
    # prod
    OpCase("prod", lambda k: (_x(k, 2, 3),), fn=lambda x: x.prod()),
    OpCase("prod", lambda k: (_x(k, 2, 3, 2),), sample="dim_keepdim", fn=lambda x: x.prod(1, keepdim=True)),
    OpCase("prod", lambda k: (_ints(k, 2, 3),), sample="int64", fn=lambda x: x.prod(-1)),
    # max / min
    OpCase("max", lambda k: (_x(k, 2, 3),), sample="all", fn=lambda x: x.max()),
    OpCase("max", lambda k: (_distinct(k, 2, 3, 4),), sample="dim", fn=lambda x: x.max(1)),
    OpCase("max", lambda k: (_distinct(k, 2, 3, 4),), sample="dim_keepdim_neg", fn=lambda x: x.max(-1, keepdim=True)),
    OpCase("max", lambda k: (torch.randperm(6 + k).reshape(-1, 1).expand(-1, 3).contiguous(),), sample="dim_int64",
           fn=lambda x: x.max(0)),
    OpCase("max", lambda k: (_x(k, 2, 3) > 0,), sample="all_bool", fn=lambda x: x.max()),
    OpCase("min", lambda k: (_x(k, 2, 3),), sample="all", fn=lambda x: x.min()),
    OpCase("min", lambda k: (_distinct(k, 2, 3, 4),), sample="dim", fn=lambda x: torch.min(x, 2)),
    OpCase("min", lambda k: (_ints(k, 2, 3).to(torch.uint8),), sample="all_uint8", fn=lambda x: x.min()),
    # max.other / min.other dispatch to the element-wise aten::maximum / aten::minimum symbolics.
    OpCase("max", lambda k: (_x(k, 2, 3), _x(0, 1, 3)), sample="other_broadcast", fn=lambda a, b: torch.max(a, b)),
    OpCase("min", lambda k: (_ints(k, 2, 3), _ints(k, 2, 3)), sample="other_int64", fn=lambda a, b: torch.min(a, b)),
    OpCase("amax", lambda k: (_x(k, 2, 3, 4),), fn=lambda x: x.amax((0, 2))),
    OpCase("amax", lambda k: (_ints(k, 2, 3).to(torch.int8),), sample="int8_keepdim",
           fn=lambda x: x.amax(-1, keepdim=True)),
    OpCase("amin", lambda k: (_x(k, 2, 3, 4),), fn=lambda x: x.amin()),
    OpCase("argmax", lambda k: (_distinct(k, 2, 3, 4),), fn=lambda x: x.argmax()),
    OpCase("argmax", lambda k: (_distinct(k, 2, 3, 4),), sample="dim_keepdim", fn=lambda x: x.argmax(1, keepdim=True)),
    OpCase("argmax", lambda k: (_distinct(k, 2, 3),), sample="none_keepdim", fn=lambda x: x.argmax(keepdim=True)),
    OpCase("argmax", lambda k: (torch.tensor([[1, 3, 3], [2, 2, 0]]).repeat(1 + k, 1),), sample="ties_int64",
           fn=lambda x: x.argmax(1)),
    OpCase("argmin", lambda k: (_distinct(k, 2, 3, 4),), sample="neg_dim", fn=lambda x: x.argmin(-1)),
    OpCase("argmin", lambda k: (torch.randperm(12 + 3 * k).reshape(-1, 3).to(torch.uint8),), sample="uint8",
           fn=lambda x: x.argmin(0)),
    # var / std
    OpCase("var", lambda k: (_x(k, 3, 4),), fn=lambda x: x.var()),
    OpCase("var", lambda k: (_x(k, 3, 4, 2),), sample="dim_biased", fn=lambda x: x.var(1, unbiased=False)),
    # Fewer elements than the correction: torch clamps the degrees of freedom at 0, giving NaN (not -0).
    OpCase("var", lambda k: (torch.randn(1, 3 + k),), sample="correction_above_count",
           fn=lambda x: torch.var(x, 0, correction=2)),
    OpCase("var", lambda k: (_x(k, 3, 4, 2),), sample="correction2_keepdim",
           fn=lambda x: torch.var(x, (0, 2), correction=2, keepdim=True)),
    OpCase("std", lambda k: (_x(k, 3, 4),), fn=lambda x: x.std(-1)),
    OpCase("std", lambda k: (_x(k, 3, 4),), sample="correction0", fn=lambda x: torch.std(x, 0, correction=0)),
    OpCase("var_mean", lambda k: (_x(k, 3, 4),), fn=lambda x: torch.var_mean(x, 1)),
    OpCase("std_mean", lambda k: (_x(k, 3, 4),), sample="keepdim",
           fn=lambda x: torch.std_mean(x, 0, keepdim=True, correction=0)),
    # norms
    OpCase("norm", lambda k: (_x(k, 3, 4),), fn=lambda x: x.norm()),
    OpCase("norm", lambda k: (_x(k, 3, 4),), sample="p1_dim", fn=lambda x: x.norm(p=1, dim=1)),
    OpCase("norm", lambda k: (_x(k, 3, 4),), sample="fro_keepdim", fn=lambda x: torch.norm(x, p="fro", dim=(0, 1), keepdim=True)),
    OpCase("linalg_vector_norm", lambda k: (_x(k, 3, 4),), sample="inf",
           fn=lambda x: torch.linalg.vector_norm(x, ord=float("inf"), dim=-1)),
    OpCase("linalg_vector_norm", lambda k: (_x(k, 3, 4),), sample="neg_inf",
           fn=lambda x: torch.linalg.vector_norm(x, ord=float("-inf"), dim=0)),
    OpCase("linalg_vector_norm", lambda k: (_x(k, 3, 4),), sample="p3",
           fn=lambda x: torch.linalg.vector_norm(x, ord=3, dim=1, keepdim=True)),
    OpCase("linalg_vector_norm", lambda k: (torch.relu(_x(k, 3, 4)),), sample="p0",
           fn=lambda x: torch.linalg.vector_norm(x, ord=0, dim=1)),
    OpCase("linalg_vector_norm", lambda k: (torch.tensor(-1.5 - k),), sample="zero_d_dim0_p6", dynamic=False,
           fn=lambda x: torch.linalg.vector_norm(x, ord=6, dim=0, keepdim=True)),
    OpCase("logsumexp", lambda k: (_x(k, 3, 4),), fn=lambda x: torch.logsumexp(x, 1)),
    OpCase("logsumexp", lambda k: (_x(k, 3, 4) * 50,), sample="large_keepdim",
           fn=lambda x: torch.logsumexp(x, (0, 1), keepdim=True)),
    # all / any / count_nonzero
    OpCase("all", lambda k: (_x(k, 3, 4) > -1,), fn=lambda x: x.all()),
    OpCase("all", lambda k: (_x(k, 3, 4) > -1,), sample="dim_keepdim", fn=lambda x: x.all(1, keepdim=True)),
    OpCase("all", lambda k: (_ints(k, 3, 4),), sample="int64_dim", fn=lambda x: x.all(0)),
    OpCase("any", lambda k: (_x(k, 3, 4) > 1,), fn=lambda x: x.any()),
    OpCase("any", lambda k: (_x(k, 3, 4),), sample="float_dim", fn=lambda x: (x * (x > 1)).any(-1)),
    OpCase("any", lambda k: (_ints(k, 3, 4).clamp(0, 1).to(torch.uint8),), sample="uint8", fn=lambda x: x.any(1)),
    OpCase("count_nonzero", lambda k: (torch.relu(_x(k, 3, 4)),), fn=lambda x: torch.count_nonzero(x)),
    OpCase("count_nonzero", lambda k: (_ints(k, 3, 4),), sample="dims",
           fn=lambda x: torch.count_nonzero(x, dim=(0, 1))),
]

CASES += [
    OpCase("linalg_norm", lambda k: (_x(k, 3, 4),), sample="default", fn=lambda x: torch.linalg.norm(x)),
    OpCase("linalg_norm", lambda k: (_x(k, 3, 4),), sample="p1_5_dim1", fn=lambda x: torch.linalg.norm(x, 1.5, 1)),
    OpCase("linalg_norm", lambda k: (_x(k, 3, 4),), sample="matrix_inf", fn=lambda x: torch.linalg.norm(x, float("inf"))),
    OpCase("linalg_matrix_norm", lambda k: (_x(k, 3, 4, 5),), sample="fro", fn=lambda x: torch.linalg.matrix_norm(x)),
    OpCase("linalg_matrix_norm", lambda k: (_x(k, 3, 4, 5),), sample="neg1_dims_2_0_keepdim",
           fn=lambda x: torch.linalg.matrix_norm(x, -1, dim=(2, 0), keepdim=True)),
    OpCase("linalg_matrix_norm", lambda k: (_x(k, 3, 4, 5),), sample="neg_inf",
           fn=lambda x: torch.linalg.matrix_norm(x, float("-inf"), dim=(1, 2))),
    # The largest magnitude over no elements is 0 in PyTorch's matrix norms, where ONNX's ReduceMax gives the lowest value.
    OpCase("linalg_matrix_norm", lambda k: (torch.randn(2 + k, 0, 3),), sample="one_empty_axis",
           fn=lambda x: torch.linalg.matrix_norm(x, 1)),
]

CASES += [
    OpCase("aminmax", lambda k: (_x(k, 3, 4),), sample="dim_keepdim", fn=lambda x: torch.aminmax(x, dim=1, keepdim=True)),
    OpCase("aminmax", lambda k: (_ints(k, 3, 4),), sample="all_int", fn=lambda x: torch.aminmax(x)),
]

# max/min over dim 0 of a 0-d tensor: the value itself and index 0 (OpInfo max.reduction_with_dim sample 2).
CASES += [
    OpCase("max", lambda k: (torch.tensor(1.5 + k),), sample="dim_of_0d", dynamic=False, fn=lambda x: torch.max(x, 0)),
    OpCase("min", lambda k: (torch.tensor(-0.5 - k),), sample="dim_of_0d_keepdim", dynamic=False,
           fn=lambda x: torch.min(x, -1, keepdim=True)),
]


# Scripted torch.norm: its Python code asks the input's layout and device type (prim::layout, prim::device, prim::type)
# before choosing linalg_vector_norm; the export answers strided and CPU, known at export time.
class _ScriptedNorm(torch.nn.Module):
    def __init__(self, p, keepdim=False):
        super().__init__()
        self.p, self.keepdim = p, keepdim

    def forward(self, x):
        return torch.norm(x, p=self.p, dim=-2, keepdim=self.keepdim)


CASES += [
    OpCase("norm", lambda k: (torch.randn(2 + k, 3, 4),), sample="scripted_fro",
           module=lambda: torch.jit.script(_ScriptedNorm("fro"))),
    OpCase("norm", lambda k: (torch.randn(2 + k, 3, 4),), sample="scripted_l1_keepdim",
           module=lambda: torch.jit.script(_ScriptedNorm(1, True))),
]


# ReduceMax/ReduceMin take bool from opset 20; below, bools reduce in int32 and cast back.
CASES += [
    OpCase("amax", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="bool", fn=lambda x: x.amax(-1)),
    OpCase("amin", lambda k: (torch.rand(2, 3 + k, 4) > 0.3,), sample="bool_keepdim",
           fn=lambda x: x.amin((0, 2), keepdim=True)),
    OpCase("max", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="bool_all", fn=lambda x: x.max()),
    OpCase("aminmax", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="bool", fn=lambda x: torch.aminmax(x, dim=1)),
]
