"""Cases for the distances: cdist (every p, batch broadcasting, the matmul compute modes), pairwise_distance and
cosine_similarity (broadcast operands). Size variant 1 changes the batch and the number of rows."""

import math

import torch
import torch.nn.functional as F

from opcases import OpCase


def _rows(k):
    return torch.randn(2, 4 + k, 3), torch.randn(2, 3 + 2 * k, 3)


def _paired(k):
    return torch.randn(4 + k, 3, 2), torch.randn(4 + k, 3, 2)


CASES = [
    OpCase("cdist", _rows, fn=lambda a, b: torch.cdist(a, b)),
    OpCase("cdist", lambda k: (torch.randn(2, 30 + k, 3), torch.randn(1, 27, 3)), sample="p1_broadcast_batch",
           fn=lambda a, b: torch.cdist(a, b, p=1.0)),
    OpCase("cdist", _rows, sample="inf_mm_mode",
           fn=lambda a, b: torch.cdist(a, b, p=math.inf, compute_mode="use_mm_for_euclid_dist")),
    OpCase("pairwise_distance", _paired, fn=lambda a, b: F.pairwise_distance(a, b)),
    OpCase("pairwise_distance", _paired, sample="p3_keepdim", fn=lambda a, b: F.pairwise_distance(a, b, 3.0, keepdim=True)),
    OpCase("cosine_similarity", _paired, fn=lambda a, b: F.cosine_similarity(a, b, dim=2), dynamic_min_opset=8),
    # Norms over the broadcast shape: Expand (opset 8).
    OpCase("cosine_similarity", lambda k: (torch.randn(4 + k, 3, 2), torch.randn(4 + k, 1, 2)), sample="broadcast",
           fn=lambda a, b: F.cosine_similarity(a, b, dim=1), min_opset=8),
]

# Two 0-d inputs (ONNX's reductions need an axis: OpInfo cosine_similarity sample 3).
CASES += [
    OpCase("cosine_similarity", lambda k: (torch.tensor(0.5 + k), torch.tensor(-2.0)), sample="0d", dynamic=False,
           fn=lambda a, b: F.cosine_similarity(a, b, dim=0)),
]
