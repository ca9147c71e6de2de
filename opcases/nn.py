"""Cases for convolution, normalization, linear and dropout."""

import torch

from opcases import OpCase

CASES = [
    OpCase("conv2d", lambda k: (torch.randn(1 + k, 3, 10 + k, 12),),
           module=lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)),
    OpCase("conv2d", lambda k: (torch.randn(2, 4, 9 + 2 * k, 9),), sample="groups_dilation",
           module=lambda: torch.nn.Conv2d(4, 4, 3, groups=2, dilation=2, bias=False)),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 3, 5, 5),), module=lambda: torch.nn.BatchNorm2d(3)),
    OpCase("linear", lambda k: (torch.randn(2 + k, 5),), module=lambda: torch.nn.Linear(5, 3)),
    OpCase("linear", lambda k: (torch.randn(2, 3 + k, 5),), sample="3d", module=lambda: torch.nn.Linear(5, 3)),
]

# Seeded: module-level tensors made from the global generator would differ with import order (and the gate with them).
_TBC_WEIGHT = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(0))
_TBC_BIAS = torch.randn(4, generator=torch.Generator().manual_seed(1))

CASES += [
    OpCase("_convolution_mode", lambda k: (torch.randn(2 + k, 3, 9, 9 + k),), sample="same_dilated",
           module=lambda: torch.nn.Conv2d(3, 4, 3, padding="same", dilation=2)),
    OpCase("_convolution_mode", lambda k: (torch.randn(2 + k, 3, 9 + k),), sample="same_even_kernel",
           module=lambda: torch.nn.Conv1d(3, 4, 4, padding="same")),
    OpCase("_convolution_mode", lambda k: (torch.randn(1 + k, 4, 5, 5 + k),), sample="same_even_kernel_dilated",
           module=lambda: torch.nn.Conv2d(4, 2, (2, 3), padding="same", dilation=3)),
    OpCase("_convolution_mode", lambda k: (torch.randn(2 + k, 3, 9, 9),), sample="valid",
           module=lambda: torch.nn.Conv2d(3, 4, 3, padding="valid")),
    OpCase("conv_tbc", lambda k: (torch.randn(7 + k, 2 + k, 5),), fn=lambda x: torch.conv_tbc(x, _TBC_WEIGHT, _TBC_BIAS, 1)),
    OpCase("_weight_norm", lambda k: (torch.randn(2 + k, 5),), sample="dim1",
           module=lambda: torch.nn.utils.weight_norm(torch.nn.Linear(5, 4), dim=1)),
    OpCase("_weight_norm", lambda k: (torch.randn(2 + k, 3, 6),), sample="whole",
           module=lambda: torch.nn.utils.weight_norm(torch.nn.Conv1d(3, 4, 3), dim=None)),
]
