"""Cases for convolution, normalization, linear and dropout."""

import torch

from op_tests.harness import OpCase

CASES = [
    OpCase("conv2d", lambda k: (torch.randn(1 + k, 3, 10 + k, 12),),
           module=lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)),
    OpCase("conv2d", lambda k: (torch.randn(2, 4, 9 + 2 * k, 9),), sample="groups_dilation",
           module=lambda: torch.nn.Conv2d(4, 4, 3, groups=2, dilation=2, bias=False)),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 3, 5, 5),), module=lambda: torch.nn.BatchNorm2d(3)),
    OpCase("linear", lambda k: (torch.randn(2 + k, 5),), module=lambda: torch.nn.Linear(5, 3)),
    OpCase("linear", lambda k: (torch.randn(2, 3 + k, 5),), sample="3d", module=lambda: torch.nn.Linear(5, 3)),
]
