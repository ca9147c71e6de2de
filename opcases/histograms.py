"""Cases for histograms: histc over the data's range or a given one, edges, NaN and elements outside included."""

import torch

from opcases import OpCase


def _spread(k):
    """Floats with exact bin edges of [-2, 2] in 8 bins, both ends, values outside and a NaN."""
    edges = torch.linspace(-2.0, 2.0, 9)
    return torch.cat([torch.randn(20 + 4 * k) * 1.5, edges, torch.tensor([-2.5, 2.5, float("nan")])])


CASES = [
    OpCase("histc", lambda k: (torch.randn(3 + k, 7),), sample="data_range", min_opset=9,
           fn=lambda x: torch.histc(x, bins=10)),
    OpCase("histc", lambda k: (_spread(k),), sample="given_range_edges_nan", min_opset=9,
           fn=lambda x: torch.histc(x, bins=8, min=-2.0, max=2.0)),
    OpCase("histc", lambda k: (torch.full((4 + k,), 3.0),), sample="constant_data", min_opset=9,
           fn=lambda x: torch.histc(x, bins=4)),
    OpCase("histc", lambda k: (torch.randn(5 + k, 3).half(),), sample="float16", min_opset=9,
           fn=lambda x: torch.histc(x, bins=5, min=-1.0, max=1.0)),
    OpCase("histc", lambda k: (torch.randn(2, 0, 3 + k),), sample="empty", min_opset=9, dynamic=False,
           fn=lambda x: torch.histc(x, bins=3, min=0.0, max=1.0)),
]
