"""Cases for normalization layers: layer norm, RMS norm (RMSNormalization from opset 23), group norm, instance norm, local response norm, F.normalize."""

import torch
import torch.nn.functional as F

from opcases import OpCase


def _with_affine(module):
    """Randomize the affine parameters so a wrong scale/shift cannot pass as the identity."""
    with torch.no_grad():
        for param in module.parameters():
            param.uniform_(0.5, 1.5)
    return module


CASES = [
    OpCase("layer_norm", lambda k: (torch.randn(2 + k, 3, 8),), module=lambda: _with_affine(torch.nn.LayerNorm(8))),
    OpCase("layer_norm", lambda k: (torch.randn(2, 3 + k, 4, 5),), sample="two_axes_no_affine",
           module=lambda: torch.nn.LayerNorm([4, 5], elementwise_affine=False)),
    OpCase("layer_norm", lambda k: (torch.randn(2 + k, 6),), sample="eps", fn=lambda x: F.layer_norm(x, (6,), eps=0.1)),
    OpCase("layer_norm", lambda k: (torch.randn(2 + k, 3, 8).half(),), sample="float16",
           module=lambda: _with_affine(torch.nn.LayerNorm(8)).half()),
    OpCase("layer_norm", lambda k: (torch.randn(2 + k, 8).double(),), sample="float64",
           module=lambda: _with_affine(torch.nn.LayerNorm(8)).double()),
    OpCase("rms_norm", lambda k: (torch.randn(2 + k, 3, 8),), module=lambda: _with_affine(torch.nn.RMSNorm(8))),
    OpCase("rms_norm", lambda k: (torch.randn(2, 3 + k, 4, 5),), sample="two_axes_no_affine_default_eps",
           module=lambda: torch.nn.RMSNorm([4, 5], elementwise_affine=False)),
    OpCase("rms_norm", lambda k: (torch.randn(2 + k, 6) * 1e-3,), sample="eps",
           fn=lambda x: F.rms_norm(x, (6,), eps=1e-4)),
    OpCase("rms_norm", lambda k: (torch.randn(2 + k, 3, 8).half(),), sample="float16",
           module=lambda: _with_affine(torch.nn.RMSNorm(8)).half()),
    OpCase("rms_norm", lambda k: (torch.randn(2 + k, 8).double(),), sample="float64",
           module=lambda: _with_affine(torch.nn.RMSNorm(8)).double()),
    OpCase("group_norm", lambda k: (torch.randn(2 + k, 6, 4, 4),), module=lambda: _with_affine(torch.nn.GroupNorm(3, 6))),
    OpCase("group_norm", lambda k: (torch.randn(2, 4, 5 + k),), sample="3d_no_affine",
           module=lambda: torch.nn.GroupNorm(2, 4, affine=False)),
    OpCase("group_norm", lambda k: (torch.randn(1 + k, 4, 3, 2, 2),), sample="5d_one_group",
           module=lambda: _with_affine(torch.nn.GroupNorm(1, 4))),
    OpCase("instance_norm", lambda k: (torch.randn(2 + k, 3, 5, 5),), module=lambda: torch.nn.InstanceNorm2d(3)),
    OpCase("instance_norm", lambda k: (torch.randn(2, 3, 6 + k),), sample="1d_affine",
           module=lambda: _with_affine(torch.nn.InstanceNorm1d(3, affine=True))),
    OpCase("instance_norm", lambda k: (torch.randn(2 + k, 3, 4, 4).double(),), sample="float64",
           module=lambda: _with_affine(torch.nn.InstanceNorm2d(3, affine=True)).double()),
    OpCase("instance_norm", lambda k: (torch.randn(2 + k, 3, 4, 4),), sample="running_stats",
           module=lambda: _calibrated(torch.nn.InstanceNorm2d(3, track_running_stats=True, affine=True), (2, 3, 4, 4))),
    OpCase("local_response_norm", lambda k: (torch.randn(2 + k, 6, 5, 5),), module=lambda: torch.nn.LocalResponseNorm(3)),
    OpCase("normalize", lambda k: (torch.randn(2 + k, 5),), fn=lambda x: F.normalize(x, dim=1)),
    OpCase("normalize", lambda k: (torch.randn(2 + k, 5, 3),), sample="p1_dim0", fn=lambda x: F.normalize(x, p=1, dim=0)),
    # batch norm edge cases (the symbolic lives in nn.py)
    # training=True in the call means batch statistics even in an eval export (OpInfo batch_norm samples
    # 0, 2, 5, 8 used the running statistics instead).
    OpCase("batch_norm", lambda k: (torch.randn(3 + k, 2, 4), torch.randn(2), torch.rand(2) + 0.5),
           sample="functional_training", fn=lambda x, mean, var: F.batch_norm(x, mean, var, training=True, eps=0.1)),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 4),), sample="1d_on_2d",
           module=lambda: _calibrated(torch.nn.BatchNorm1d(4), (8, 4))),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 4, 6),), sample="1d_on_3d",
           module=lambda: _calibrated(torch.nn.BatchNorm1d(4), (8, 4, 6))),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 3, 4, 4),), sample="no_affine",
           module=lambda: _calibrated(torch.nn.BatchNorm2d(3, affine=False), (8, 3, 4, 4))),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 3, 4, 4),), sample="no_running_stats",
           module=lambda: _with_affine(torch.nn.BatchNorm2d(3, track_running_stats=False))),
    OpCase("batch_norm", lambda k: (torch.randn(2 + k, 3, 2, 2, 2),), sample="3d",
           module=lambda: _calibrated(torch.nn.BatchNorm3d(3), (4, 3, 2, 2, 2))),
]


def _calibrated(module, shape):
    """Give running statistics non-default values with a few train-mode passes (then eval)."""
    _with_affine(module)
    module.train()
    with torch.no_grad():
        for _ in range(3):
            module(torch.randn(*shape) * 2 + 0.5)
    return module.eval()
