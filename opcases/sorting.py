"""Cases for sorting, selection and scans: topk, sort, argsort, msort, kthvalue, cumsum, cumprod, diff, unique."""

import torch

from opcases import OpCase


def _distinct(k, *shape):
    """Floats without ties, so the order (and the indices) has one right answer."""
    count = (shape[0] + k) * torch.Size(shape[1:]).numel()
    return (torch.randperm(count).float() - count / 2).reshape(shape[0] + k, *shape[1:]) / 4


def _distinct_last(k, *shape):
    """Like _distinct, with the size variant on the last axis."""
    count = torch.Size(shape).numel() // shape[-1] * (shape[-1] + k)
    return (torch.randperm(count).float() - count / 2).reshape(*shape[:-1], shape[-1] + k) / 4


CASES = [
    OpCase("topk", lambda k: (_distinct(k, 2, 5),), fn=lambda x: torch.topk(x, 3)),
    OpCase("topk", lambda k: (_distinct(k, 4, 5),), sample="smallest_dim0", fn=lambda x: torch.topk(x, 2, 0, largest=False)),
    OpCase("topk", lambda k: (_distinct(k, 3, 4, 5),), sample="neg_dim", fn=lambda x: torch.topk(x, 2, -2)),
    OpCase("topk", lambda k: (_distinct(k, 2, 6).double(),), sample="float64", fn=lambda x: torch.topk(x, 1)),
    OpCase("topk", lambda k: (torch.randperm(10 + 2 * k).reshape(-1, 2).int(),), sample="int32_smallest",
           fn=lambda x: torch.topk(x, 2, 0, largest=False)),
    OpCase("topk", lambda k: (torch.randperm(10 + 5 * k).reshape(-1, 5),), sample="int64", min_opset=11,
           fn=lambda x: torch.topk(x, 3)),
    OpCase("topk", lambda k: (_distinct_last(k, 2, 6),), sample="k_from_size", dynamic_min_opset=10,
           fn=lambda x: torch.topk(x, x.size(-1) // 2)),
    OpCase("sort", lambda k: (_distinct(k, 3, 5),), fn=lambda x: torch.sort(x)),
    OpCase("sort", lambda k: (_distinct(k, 3, 5),), sample="descending_dim0", dynamic_min_opset=10,
           fn=lambda x: torch.sort(x, 0, descending=True)),
    OpCase("sort", lambda k: (torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0, 3.0]).repeat(1 + k, 1),), sample="stable_ties",
           fn=lambda x: torch.sort(x, stable=True)),
    OpCase("sort", lambda k: (_distinct_last(k, 2, 5),), sample="dynamic_axis", dynamic_min_opset=10,
           fn=lambda x: torch.sort(x, -1)),
    OpCase("argsort", lambda k: (_distinct(k, 3, 5),), fn=lambda x: torch.argsort(x, 1)),
    OpCase("argsort", lambda k: (_distinct(k, 3, 5),), sample="descending", dynamic_min_opset=10,
           fn=lambda x: torch.argsort(x, 0, descending=True)),
    OpCase("msort", lambda k: (_distinct(k, 4, 3),), fn=torch.msort, dynamic=False),
    OpCase("kthvalue", lambda k: (_distinct(k, 3, 5),), fn=lambda x: torch.kthvalue(x, 2)),
    OpCase("kthvalue", lambda k: (_distinct(k, 4, 5),), sample="dim0_keepdim", fn=lambda x: torch.kthvalue(x, 3, 0, keepdim=True)),
    OpCase("diff", lambda k: (torch.randn(3, 5 + k),), fn=lambda x: torch.diff(x)),
    OpCase("diff", lambda k: (torch.randn(4 + k, 3),), sample="n2_dim0", fn=lambda x: torch.diff(x, n=2, dim=0)),
    OpCase("diff", lambda k: (torch.randint(-50, 50, (2 + k, 6)),), sample="int64", fn=lambda x: torch.diff(x, dim=1)),
    OpCase("diff", lambda k: (torch.randint(-50, 50, (2, 6 + k), dtype=torch.int8),), sample="int8",
           fn=lambda x: torch.diff(x)),
    OpCase("diff", lambda k: (torch.randn(2 + k, 6) > 0,), sample="bool", fn=lambda x: torch.diff(x)),
    OpCase("diff", lambda k: (torch.randn(2 + k, 4), torch.randn(2 + k, 2)), sample="prepend_append",
           fn=lambda x, p: torch.diff(x, dim=1, prepend=p, append=x[:, :1])),
    # transformers' packed-sequence detection: positions minus their predecessor, the first against itself - 1
    OpCase("diff", lambda k: (torch.arange(5 + k).repeat(2, 1),), sample="position_ids",
           fn=lambda x: torch.diff(x, prepend=x[:, :1] - 1, dim=-1)),
    OpCase("diff", lambda k: (torch.randn(3, 4 + k),), sample="n_beyond_length", fn=lambda x: torch.diff(x, n=6)),
    OpCase("diff", lambda k: (torch.randn(3, 4 + k), torch.randn(3, 2)), sample="n0_ignores_prepend",
           fn=lambda x, p: torch.diff(x, n=0, prepend=p)),
    OpCase("cumsum", lambda k: (torch.randn(2 + k, 5),), fn=lambda x: torch.cumsum(x, 1)),
    OpCase("cumsum", lambda k: (torch.randn(4, 3, 2 + k),), sample="neg_dim", fn=lambda x: torch.cumsum(x, -3)),
    OpCase("cumsum", lambda k: (torch.randint(-5, 6, (2 + k, 5)),), sample="int64", fn=lambda x: torch.cumsum(x, 1)),
    OpCase("cumsum", lambda k: (torch.randn(2 + k, 5) > 0,), sample="bool", fn=lambda x: torch.cumsum(x, 1)),
    OpCase("cumsum", lambda k: (torch.randn(2 + k, 5),), sample="dtype_f64", fn=lambda x: torch.cumsum(x, 1, dtype=torch.float64)),
    OpCase("cumsum", lambda k: (torch.randn(2 + k, 5).half(),), sample="float16", fn=lambda x: torch.cumsum(x, 1)),
    OpCase("cumsum", lambda k: (torch.randn(2, 5 + k),), sample="dynamic_axis", dynamic_min_opset=11,
           fn=lambda x: torch.cumsum(x, 1)),
    OpCase("cumprod", lambda k: (torch.rand(2 + k, 7) + 0.5,), fn=lambda x: torch.cumprod(x, 1)),
    OpCase("cumprod", lambda k: (torch.randn(5, 2 + k, 3),), sample="dim0_signs", fn=lambda x: torch.cumprod(x, 0)),
    OpCase("cumprod", lambda k: (torch.randint(-3, 4, (2 + k, 6)),), sample="int64", fn=lambda x: torch.cumprod(x, -1)),
    # CumProd-26 takes an axis of any length; below 26 the scan unrolls over a length the export must know.
    OpCase("cumprod", lambda k: (torch.rand(3, 5 + 2 * k) + 0.5,), sample="dynamic_axis_length", dynamic_min_opset=26,
           fn=lambda x: torch.cumprod(x, 1)),
    OpCase("cumprod", lambda k: (torch.randn(4 + k, 6).half(),), sample="float16_as_float32",
           fn=lambda x: torch.cumprod(x, 1)),
    OpCase("unique", lambda k: (torch.randint(0, 5, (3 + k, 4)).float(),), min_opset=11, dynamic=False,
           fn=lambda x: torch.unique(x)),
    OpCase("unique", lambda k: (torch.randint(0, 5, (3 + k, 4)),), sample="inverse_counts", min_opset=11, dynamic=False,
           fn=lambda x: torch.unique(x, return_inverse=True, return_counts=True)),
    OpCase("unique", lambda k: (torch.randint(0, 3, (6, 2)).int(),), sample="dim0", min_opset=11, dynamic=False,
           fn=lambda x: torch.unique(x, dim=0, return_inverse=True, return_counts=True)),
]

# Sorting an empty axis (TopK-1 rejects k = 0 below opset 10; OpInfo sort sample 52).
CASES += [
    OpCase("sort", lambda k: (torch.randn(2 + k, 0),), sample="empty_axis", fn=lambda x: torch.sort(x)),
    OpCase("argsort", lambda k: (torch.randn(0),), sample="empty", dynamic=False, fn=lambda x: torch.argsort(x)),
]

# Scripted (the outputs' element types come from the converter: Unique's counts and inverse indices are int64).
class _UniqueCounts(torch.nn.Module):
    def forward(self, x):
        return torch.unique(x, sorted=True, return_inverse=False, return_counts=True)


CASES += [
    OpCase("unique", lambda k: (torch.tensor([1, 3, 2, 3]),), sample="scripted_counts", min_opset=11, dynamic=False,
           module=lambda: torch.jit.script(_UniqueCounts())),
]
