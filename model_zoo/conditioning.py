"""Making randomly initialised models well-conditioned so that comparing them with ONNX Runtime means something.

No pretrained weights can be downloaded, and a random deep network in eval mode normalises with BatchNorm's
default running statistics (mean 0, variance 1), which are wrong for its real activations: they grow layer by
layer until an absolute tolerance means nothing. Calibrating the running statistics on synthetic inputs (a few
forward passes with only the BatchNorm layers in train mode) gives every layer activations of unit scale, as a
trained network has, without changing anything else about the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

import numpy as np
import torch

_BATCHNORM_TYPES = (torch.nn.modules.batchnorm._BatchNorm,)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (CPU and CUDA) so weights and inputs are reproducible."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def generator(seed: int) -> torch.Generator:
    """A private CPU generator: input makers must not depend on (or disturb) the global RNG state."""
    return torch.Generator().manual_seed(seed)


def batchnorm_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in model.modules() if isinstance(m, _BATCHNORM_TYPES) and m.track_running_stats]


def calibrate_batchnorm(model: torch.nn.Module, batches: Iterable[tuple]) -> int:
    """Re-estimate every BatchNorm's running statistics from ``batches``; returns how many layers changed.

    Only the BatchNorm layers are put in train mode (dropout and detection heads stay in eval), and their
    momentum is set to None so the statistics are the plain average over all batches, independent of order.
    """
    layers = batchnorm_layers(model)
    if not layers:
        return 0
    model.eval()
    saved = [(m, m.momentum) for m in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None
        layer.train()
    try:
        with torch.no_grad():
            for args in batches:
                model(*args)
    finally:
        for layer, momentum in saved:
            layer.momentum = momentum
        model.eval()
    return len(layers)


def reinitialise_zero_linears(model: torch.nn.Module) -> int:
    """Give every Linear layer whose weight is all zeros PyTorch's default random initialisation; returns how many.

    torchvision zero-initialises some classification heads (ViT's ``heads.head``), which a trained model would
    have learned; left at zero the model outputs exactly zero for every input and a comparison proves nothing.
    """
    reset = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.detach().any():
            module.reset_parameters()
            reset += 1
    return reset


def prepare(build: Callable[[], torch.nn.Module], seed: int, calibration: Callable[[int], tuple] | None,
            passes: int = 3) -> torch.nn.Module:
    """Build a model with seeded weights, calibrate its BatchNorm statistics when it has any, and return it in eval."""
    seed_everything(seed)
    model = build().eval()
    reinitialise_zero_linears(model)
    if calibration is not None and batchnorm_layers(model):
        calibrate_batchnorm(model, (calibration(1000 + k) for k in range(passes)))
    return model.eval()
