"""Cases for pooling."""

import torch
import torch.nn.functional as F

from opcases import OpCase

CASES = [
    OpCase("max_pool2d", lambda k: (torch.randn(1 + k, 2, 9, 9),), fn=lambda x: F.max_pool2d(x, 3, 2)),
    OpCase("max_pool2d", lambda k: (torch.randn(1 + k, 2, 10, 10),), sample="ceil_mode",
           fn=lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True)),
    OpCase("max_pool2d", lambda k: (torch.randn(1 + k, 2, 10, 10),), sample="dilation", min_opset=10,
           fn=lambda x: F.max_pool2d(x, 3, 1, dilation=2)),
    OpCase("adaptive_avg_pool2d", lambda k: (torch.randn(1 + k, 3, 8, 8),), fn=lambda x: F.adaptive_avg_pool2d(x, 1)),
    OpCase("adaptive_avg_pool2d", lambda k: (torch.randn(1 + k, 3, 8, 8),), sample="to_2x2",
           fn=lambda x: F.adaptive_avg_pool2d(x, 2)),
    OpCase("avg_pool2d", lambda k: (torch.randn(1 + k, 3, 8, 8),), fn=lambda x: F.avg_pool2d(x, 3, 2, padding=1)),
    # Ceil mode whose last window overflows the padded input: PyTorch's divisor never counts the overflow
    # (OpInfo avg_pool1d samples 2 and 6 were wrong at opsets 7-9).
    OpCase("avg_pool1d", lambda k: (torch.randn(1 + k, 3, 9),), sample="ceil_count_pad",
           fn=lambda x: F.avg_pool1d(x, 6, 3, padding=2, ceil_mode=True, count_include_pad=True)),
    OpCase("avg_pool2d", lambda k: (torch.randn(1 + k, 2, 9, 8),), sample="ceil_no_count_pad",
           fn=lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False)),
]

# MaxPool's Indices output arrives in opset 8.
CASES += [
    OpCase("max_pool1d_with_indices", lambda k: (torch.randn(2 + k, 3, 10 + k),), sample="ceil_mode", min_opset=8,
           dynamic_min_opset=10,  # ceil_mode over a run-time length: MaxPool's ceil_mode attribute (opset 10)
           module=lambda: torch.nn.MaxPool1d(3, 2, return_indices=True, ceil_mode=True)),
    OpCase("max_pool2d_with_indices", lambda k: (torch.randn(2 + k, 3, 10, 9 + k),), sample="padded", min_opset=8,
           module=lambda: torch.nn.MaxPool2d(3, 2, 1, return_indices=True)),
]

# An unbatched input ([C, *spatial]) pools as a batch of one; ceil_mode where the last window would start in the end
# padding, which PyTorch drops and ONNX's ceil rule keeps (sizes 5, kernel 3, stride 3, padding 1).
CASES += [
    OpCase("max_pool2d", lambda k: (torch.randn(3, 7 + k, 6),), sample="unbatched", fn=lambda x: F.max_pool2d(x, 2)),
    OpCase("avg_pool1d", lambda k: (torch.randn(3, 8 + k),), sample="unbatched", fn=lambda x: F.avg_pool1d(x, 3, 2)),
    OpCase("adaptive_avg_pool2d", lambda k: (torch.randn(3, 4 + k, 5),), sample="unbatched",
           fn=lambda x: F.adaptive_avg_pool2d(x, 1)),
    OpCase("max_pool2d_with_indices", lambda k: (torch.randn(2, 6 + k, 6),), sample="unbatched", min_opset=8,
           module=lambda: torch.nn.MaxPool2d(2, return_indices=True)),
    OpCase("max_pool3d_with_indices", lambda k: (torch.randn(1 + k, 2, 3, 6, 5),), sample="ceil_drops_last_window",
           min_opset=8,
           module=lambda: torch.nn.MaxPool3d(3, padding=1, ceil_mode=True, return_indices=True)),
    OpCase("avg_pool2d", lambda k: (torch.randn(1 + k, 2, 5, 5),), sample="ceil_drops_last_window",
           fn=lambda x: F.avg_pool2d(x, 3, 3, padding=1, ceil_mode=True)),
]

# Adaptive pooling to sizes that do not divide the input's: windows of unequal sizes, pooled axis by axis. The
# indices of adaptive max pooling come from MaxPool's Indices output (opset 8).
CASES += [
    OpCase("adaptive_avg_pool2d", lambda k: (torch.randn(1 + k, 3, 8, 7),), sample="uneven_windows", dynamic=False,
           fn=lambda x: F.adaptive_avg_pool2d(x, (5, 3))),
    OpCase("adaptive_max_pool1d", lambda k: (torch.randn(2 + k, 3, 10),), sample="uneven_windows", dynamic=False,
           fn=lambda x: F.adaptive_max_pool1d(x, 4)),
    OpCase("adaptive_max_pool2d", lambda k: (torch.randn(2 + k, 3, 6, 4),), sample="indices", min_opset=8,
           fn=lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True)),
]

# Ceil mode with dilation where ONNX keeps a last window that starts in the end padding: extra end padding would reach
# the kernel size, which ONNX Runtime rejects, so the window is sliced off (OpInfo max_pool3d sample 70); and the
# same drop at run time, for sizes that only the dynamic export sees (height 9 drops a window, 10 does not).
CASES += [
    OpCase("max_pool3d", lambda k: (torch.randn(1 + k, 2, 3, 6, 5),), sample="dilated_ceil", min_opset=10,
           fn=lambda x: F.max_pool3d(x, (3, 2, 3), padding=1, dilation=(1, 2, 1), ceil_mode=True)),
    OpCase("max_pool2d_with_indices", lambda k: (torch.randn(1, 2, 9 + k, 5 + 2 * k),), sample="ceil_drop_at_run_time",
           min_opset=8, dynamic_min_opset=10,
           module=lambda: torch.nn.MaxPool2d(2, 2, padding=1, ceil_mode=True, return_indices=True)),
]
