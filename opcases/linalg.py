"""Cases for linear algebra: matmul (every rank combination), mm/bmm/mv/dot, addmm and friends, outer, einsum,
cross and det."""

import torch

from opcases import OpCase


def _r(*shape):
    return torch.randn(*shape)


class _TensordotCount(torch.nn.Module):
    def forward(self, a, b):
        return torch.tensordot(a, b, 2)

CASES = [
    OpCase("matmul", lambda k: (_r(3 + k, 4), _r(4, 5)), sample="2d_2d", fn=torch.matmul),
    OpCase("matmul", lambda k: (_r(4), _r(4)), sample="1d_1d", fn=torch.matmul),
    OpCase("matmul", lambda k: (_r(4), _r(2 + k, 4, 3)), sample="1d_3d", fn=torch.matmul),
    OpCase("matmul", lambda k: (_r(2 + k, 3, 4), _r(4)), sample="3d_1d", fn=torch.matmul),
    OpCase("matmul", lambda k: (_r(2 + k, 1, 3, 4), _r(5, 4, 2)), sample="4d_3d_broadcast", fn=torch.matmul),
    OpCase("matmul", lambda k: (_r(3 + k, 4).double(), _r(4, 2).double()), sample="float64", fn=torch.matmul),
    OpCase("matmul", lambda k: (torch.randint(-4, 5, (3 + k, 4)), torch.randint(-4, 5, (4, 2))), sample="int64",
           fn=torch.matmul, min_opset=9),
    OpCase("mm", lambda k: (_r(3 + k, 4), _r(4, 5)), fn=torch.mm),
    OpCase("bmm", lambda k: (_r(2 + k, 3, 4), _r(2 + k, 4, 5)), fn=torch.bmm),
    OpCase("mv", lambda k: (_r(3 + k, 4), _r(4)), fn=torch.mv),
    OpCase("dot", lambda k: (_r(4 + k), _r(4 + k)), fn=torch.dot),
    OpCase("addmm", lambda k: (_r(5), _r(3 + k, 4), _r(4, 5)), fn=torch.addmm),
    OpCase("addmm", lambda k: (_r(3 + k, 1), _r(3 + k, 4), _r(4, 5)), sample="beta_alpha",
           fn=lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0)),
    OpCase("addmm", lambda k: (torch.full((5,), float("nan")), _r(3 + k, 4), _r(4, 5)), sample="beta0_ignores_nan",
           fn=lambda c, a, b: torch.addmm(c, a, b, beta=0)),
    OpCase("addmm", lambda k: (torch.randint(-3, 4, (5,)), torch.randint(-3, 4, (3 + k, 4)),
                               torch.randint(-3, 4, (4, 5))), sample="int64",
           fn=lambda c, a, b: torch.addmm(c, a, b, beta=2, alpha=3), min_opset=9),
    OpCase("addmv", lambda k: (_r(3 + k), _r(3 + k, 4), _r(4)), fn=lambda c, a, b: torch.addmv(c, a, b, alpha=0.5)),
    OpCase("baddbmm", lambda k: (_r(1, 3, 5), _r(2 + k, 3, 4), _r(2 + k, 4, 5)),
           fn=lambda c, a, b: torch.baddbmm(c, a, b, beta=0.25, alpha=1.5)),
    OpCase("addbmm", lambda k: (_r(3, 5), _r(2 + k, 3, 4), _r(2 + k, 4, 5)), fn=torch.addbmm),
    OpCase("addr", lambda k: (_r(3 + k, 4), _r(3 + k), _r(4)), fn=lambda c, a, b: torch.addr(c, a, b, beta=2)),
    OpCase("outer", lambda k: (_r(3 + k), _r(4)), fn=torch.outer),
    OpCase("outer", lambda k: (torch.arange(3 + k), torch.arange(4)), sample="int64", fn=torch.outer),
    OpCase("einsum", lambda k: (_r(2 + k, 3, 4), _r(2 + k, 4, 5)), sample="bmm",
           fn=lambda a, b: torch.einsum("bij,bjk->bik", a, b)),
    OpCase("einsum", lambda k: (_r(2, 3 + k, 4, 5), _r(2, 3 + k, 6, 5)), sample="attention_scores",
           fn=lambda a, b: torch.einsum("bhqd,bhkd->bhqk", a, b)),
    OpCase("einsum", lambda k: (_r(3 + k, 4),), sample="transpose", fn=lambda a: torch.einsum("ij->ji", a)),
    OpCase("einsum", lambda k: (_r(3 + k, 4),), sample="sum_implicit", fn=lambda a: torch.einsum("ij", a)),
    OpCase("einsum", lambda k: (_r(3 + k, 4), _r(3 + k, 4)), sample="frobenius_inner",
           fn=lambda a, b: torch.einsum("ij,ij->", a, b)),
    OpCase("einsum", lambda k: (_r(3 + k), _r(4)), sample="outer", fn=lambda a, b: torch.einsum("i,j->ij", a, b)),
    OpCase("einsum", lambda k: (_r(2, 3 + k, 4), _r(4, 5)), sample="ellipsis",
           fn=lambda a, b: torch.einsum("...ij,jk->...ik", a, b)),
    OpCase("einsum", lambda k: (_r(2 + k, 3), _r(3, 4), _r(4, 5)), sample="chain3",
           fn=lambda a, b, c: torch.einsum("ij,jk,kl->il", a, b, c)),
    OpCase("einsum", lambda k: (_r(2, 3, 4 + k), _r(3, 5, 4 + k)), sample="multi_index_contraction",
           fn=lambda a, b: torch.einsum("abc,bdc->ad", a, b)),
    OpCase("einsum", lambda k: (torch.randint(-3, 4, (3 + k, 4)), torch.randint(-3, 4, (4, 2))), sample="int64",
           fn=lambda a, b: torch.einsum("ij,jk->ik", a, b)),
    OpCase("einsum", lambda k: (_r(3 + k, 3 + k),), sample="diagonal", min_opset=12,
           fn=lambda a: torch.einsum("ii->i", a)),
    OpCase("cross", lambda k: (_r(2 + k, 3), _r(2 + k, 3)), fn=lambda a, b: torch.linalg.cross(a, b)),
    OpCase("cross", lambda k: (_r(3, 2 + k), _r(3, 1)), sample="dim0_broadcast",
           fn=lambda a, b: torch.linalg.cross(a, b, dim=0)),
    OpCase("det", lambda k: (_r(2 + k, 3, 3),), fn=torch.linalg.det, min_opset=11),
]

CASES += [
    OpCase("tensordot", lambda k: (torch.randint(6, (3 + k, 5, 3, 4)), torch.randint(6, (3, 4, 2 + k, 2))),
           sample="int_dims_count", fn=lambda a, b: torch.tensordot(a, b, 2)),
    OpCase("tensordot", lambda k: (_r(3 + k, 4, 3, 5, 2), _r(5, 4, 4, 2, 2 + k)), sample="dim_lists",
           fn=lambda a, b: torch.tensordot(a, b, ([1, -2, -1], [1, 0, 3]))),
    # Scripted, tensordot(a, b, 2) builds its dim lists with loops (list(range(-dims, 0))) that run at export time.
    OpCase("tensordot", lambda k: (_r(3 + k, 5, 3, 4), _r(3, 4, 2 + k, 2)), sample="scripted_int_dims",
           module=lambda: torch.jit.script(_TensordotCount())),
    OpCase("logdet", lambda k: (_r(2 + k, 3, 3),), fn=torch.logdet, min_opset=11),
]

# Ellipses spanning different numbers of dims (PyTorch broadcasts them; ONNX's Einsum wants equal spans) and summed
# out by an explicit output without '...' (ONNX Runtime refuses that form): OpInfo einsum sample 10.
CASES += [
    OpCase("einsum", lambda k: (_r(1 + k, 2, 3), _r(3)), sample="uneven_ellipses_summed", dynamic=False,
           fn=lambda a, b: torch.einsum("...ik,...j->ij", a, b)),
]

# alpha and beta computed at run time (graph inputs): converted to the operands' type; a run-time beta of 0 still
# ignores the input's NaNs (Where, opset 9). Fed to both size variants through a leading tensor of varying length.
CASES += [
    OpCase("baddbmm", lambda k: (torch.zeros(1 + k), torch.tensor([[[float("nan"), 1.0]]]).expand(2, 3, 2).clone(),
                                 torch.randn(2, 3, 4), torch.randn(2, 4, 2), torch.tensor(5), torch.tensor([3.5, 0.0][k])),
           sample="run_time_alpha_beta", min_opset=9,
           fn=lambda z, x, a, b, alpha, beta: torch.baddbmm(x, a, b, alpha=alpha, beta=beta) + 0 * z.size(0)),
]

# einsum of bools (diagonal, transpose, elementwise product): computed on int64, the result back to bool.
CASES += [
    OpCase("einsum", lambda k: (torch.randn(3 + k, 5, 5) > 0,), sample="bool_diagonal", min_opset=12,
           fn=lambda x: torch.einsum("bii->bi", x)),
    OpCase("einsum", lambda k: (torch.randn(3 + k, 4) > 0,), sample="bool_transpose", fn=lambda x: torch.einsum("ij->ji", x)),
    OpCase("einsum", lambda k: (torch.randn(3 + k, 4) > 0, torch.randn(3 + k, 4) > 0), sample="bool_product",
           fn=lambda x, y: torch.einsum("ij,ij->ij", x, y)),
]


def _routed_product(a, b, expert):
    """The mixture-of-experts flow of transformers' default experts: rows sorted by expert, the group ends from
    histc's counts, then one grouped product."""
    expert, order = torch.sort(expert)
    counts = torch.histc(expert.float(), bins=b.shape[0], min=0, max=b.shape[0] - 1)
    return torch._grouped_mm(a[order], b, offs=torch.cumsum(counts, 0, dtype=torch.int32))


# _grouped_mm (CPU: float32 operands whose rows span a multiple of 16 bytes): the rows of a 2-D operand in groups
# ending at offs, each group times its own matrix; an empty group included. Without offs: a batched product.
CASES += [
    OpCase("_grouped_mm", lambda k: (_r(7 + k, 8), _r(3, 8, 4), torch.tensor([2, 2, 7 + k], dtype=torch.int32)),
           sample="groups_with_an_empty_one", dynamic_min_opset=9, fn=lambda a, b, offs: torch._grouped_mm(a, b, offs=offs)),
    OpCase("_grouped_mm", lambda k: (_r(6 + 2 * k, 4), _r(4, 4, 8), torch.randint(0, 4, (6 + 2 * k,))),
           sample="routed_by_histc", min_opset=11, fn=_routed_product),  # int64 sort: TopK-11
    OpCase("_grouped_mm", lambda k: (_r(2, 3 + k, 4), _r(2, 4, 4)), sample="batched_without_offs",
           fn=lambda a, b: torch._grouped_mm(a, b)),
]
