"""Distances between tensors: cdist (all pairs of rows), pairwise_distance (row by row) and cosine_similarity.

Each is written from its definition with broadcasting Sub/Mul and the p-norm reductions of ``reductions``.
cdist takes the differences of every pair directly, never PyTorch's ``|x|^2 + |y|^2 - 2xy`` matmul shortcut
(``compute_mode``), which only trades accuracy for speed on large inputs: the direct form is at least as close
to the exact distance.
"""

from __future__ import annotations

from exporter.lowering.arithmetic import clamp_value
from exporter.lowering.core import (
    require_opset,
    require_rank,
    reshape,
    scalar_like,
    unsqueeze,
)
from exporter.lowering.reductions import reduce, vector_norm
from exporter.registry import parse_args, symbolic


def _broadcast_rank(g, *values) -> int:
    return max(require_rank(g, v) for v in values)


def _with_rank(value, rank: int):
    """Record the rank of a freshly built broadcast result (its sizes may be unknown)."""
    value.shape = (None,) * rank
    return value


@symbolic("aten::cdist")
@parse_args("v", "v", "f", "none")
def cdist(g, x1, x2, p, compute_mode=None):
    """cdist(x1 [..., P, M], x2 [..., R, M], p) -> [..., P, R]: the p-norm of x1[..., i, :] - x2[..., j, :]."""
    rows, columns = (unsqueeze(g, x, [require_rank(g, x) - axis]) for x, axis in ((x1, 1), (x2, 2)))
    pairs = g.op("Sub", rows, columns)  # [..., P, 1, M] - [..., 1, R, M]
    return vector_norm(g, _with_rank(pairs, _broadcast_rank(g, rows, columns)), p, [-1], False, None)


@symbolic("aten::pairwise_distance")
@parse_args("v", "v", "f", "f", "b")
def pairwise_distance(g, x1, x2, p, eps, keepdim):
    """pairwise_distance(x1, x2, p, eps, keepdim): the p-norm of ``x1 - x2 + eps`` over the last dimension."""
    rank = _broadcast_rank(g, x1, x2)
    difference = g.op("Add", g.op("Sub", x1, x2), scalar_like(g, eps, x1))
    return vector_norm(g, _with_rank(difference, rank), p, [-1] if rank else None, keepdim, None)


@symbolic("aten::cosine_similarity")
@parse_args("v", "v", "i", "f")
def cosine_similarity(g, x1, x2, dim, eps):
    """cosine_similarity(x1, x2, dim, eps): sum over ``dim`` of (x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)),
    the norms taken after broadcasting the two (PyTorch's order of operations)."""
    rank = _broadcast_rank(g, x1, x2)
    if rank == 0:  # two 0-d inputs: ONNX reductions need an axis, so they are 1-element vectors
        x1, x2 = (reshape(g, x, [1]) for x in (x1, x2))
        return reshape(g, cosine_similarity(g, x1, x2, 0, eps), [])
    if g.shape(x1) != g.shape(x2) or None in (g.shape(x1) or (None,)):
        require_opset(g, 8, "broadcasting the inputs needs Expand")
        like_both = _with_rank(g.op("Shape", g.op("Add", x1, x2)), 1)
        x1, x2 = (_with_rank(g.op("Expand", x, like_both), rank) for x in (x1, x2))
    normalized = [g.op("Div", x, clamp_value(g, vector_norm(g, x, 2, [dim], True, None), eps, None)) for x in (x1, x2)]
    return reduce(g, "ReduceSum", g.op("Mul", *normalized), [dim % max(rank, 1)], False)
