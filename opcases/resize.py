"""Cases for interpolate (upsample_*) and grid_sample.

Below opset 11 the linear/cubic and non-integer nearest cases run as gathers with PyTorch's own weights, so
they export at opset 7-10 when the spatial sizes are static (the batch-dynamic cases). Cases whose dynamic
variant changes the spatial sizes need Resize-11 for that variant; the harness's ``min_opset`` covers static
and dynamic alike, so those cases list opsets 7-10 in ``known_failures`` (their static exports there pass and
are covered by the batch-dynamic cases).
"""

import torch
import torch.nn.functional as F

from opcases import OpCase


def _image(batch_growth=1, spatial_growth=0, channels=2, height=5, width=6):
    return lambda k: (torch.randn(1 + batch_growth * k, channels, height + spatial_growth * k,
                                  width + spatial_growth * k),)


def _interp(**kwargs):
    return lambda x: F.interpolate(x, **kwargs)


# Batch-dynamic cases keep spatial sizes static, so the gather emulation serves opsets 7-10.
_BATCH_DYNAMIC = [
    ("nearest_scale2", dict(scale_factor=2)),
    ("nearest_scale_3x2", dict(scale_factor=(3, 2))),
    ("nearest_size_integer", dict(size=(10, 18))),
    ("nearest_size_odd", dict(size=(7, 9))),
    ("nearest_scale_1_5", dict(scale_factor=1.5)),
    ("nearest_downscale", dict(scale_factor=0.6)),
    ("nearest_size_down", dict(size=(3, 4))),
    ("nearest_exact_size", dict(size=(7, 9), mode="nearest-exact")),
    ("nearest_exact_scale", dict(scale_factor=1.7, mode="nearest-exact")),
    ("bilinear_scale2", dict(scale_factor=2, mode="bilinear")),
    ("bilinear_scale_1_5", dict(scale_factor=1.5, mode="bilinear")),
    ("bilinear_size", dict(size=(7, 11), mode="bilinear")),
    ("bilinear_size_to_1", dict(size=(1, 3), mode="bilinear")),
    ("bilinear_down", dict(scale_factor=0.5, mode="bilinear")),
    ("bilinear_align_corners", dict(size=(8, 9), mode="bilinear", align_corners=True)),
    ("bilinear_align_corners_scale", dict(scale_factor=2, mode="bilinear", align_corners=True)),
    ("bilinear_align_corners_to_1", dict(size=(1, 4), mode="bilinear", align_corners=True)),
    ("bilinear_recompute", dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)),
    ("bilinear_keeps_length", dict(scale_factor=(1.1, 2.0), mode="bilinear")),
    ("bicubic_size", dict(size=(9, 8), mode="bicubic")),
    ("bicubic_scale", dict(scale_factor=1.5, mode="bicubic")),
    ("bicubic_align_corners", dict(size=(9, 8), mode="bicubic", align_corners=True)),
]

# Spatially dynamic linear or fractional nearest resizing needs Resize-11 (Upsample/Resize-10 only know the
# asymmetric transform and round nearest indices up when down-sampling): dynamic_min_opset=11.

# Interpolation that reads in-between or off-grid pixels blends them in a different order than PyTorch.
_BLEND_REASON = "float32 sums of 2-4 products per axis, blended in another order than PyTorch's kernels"
# Seen on an NVIDIA H200 with onnxruntime-gpu 1.31.1 (2026-11-27); the CPU provider runs the same models right.
_CUDA_UPSAMPLE_RANK = ("ONNX Runtime's CUDA Upsample kernel (opsets 7-9) takes ranks up to 4: 'Unsupported rank by the "
                       "Upsample CUDA kernel. Input rank: 5'; Resize (opset 10 on) runs it on CUDA")

CASES = [
    OpCase("interpolate", _image(), sample=sample, fn=_interp(**kwargs),
           atol=1e-5 if "nearest" not in sample else None,
           tolerance_reason="" if "nearest" in sample else _BLEND_REASON)
    for sample, kwargs in _BATCH_DYNAMIC
]

CASES += [
    # Spatially dynamic: sizes computed in the graph (or scales on unknown lengths) need Resize-11.
    OpCase("interpolate", _image(batch_growth=0, spatial_growth=2), sample="nearest_scale2_spatial_dynamic",
           fn=_interp(scale_factor=2)),
    OpCase("interpolate", _image(batch_growth=0, spatial_growth=2), sample="bilinear_spatial_dynamic",
           fn=_interp(scale_factor=1.5, mode="bilinear"), dynamic_min_opset=11, atol=1e-5, tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", _image(batch_growth=0, spatial_growth=2), sample="bilinear_recompute_spatial_dynamic",
           fn=_interp(scale_factor=2.0, mode="bilinear", recompute_scale_factor=True),
           dynamic_min_opset=11, atol=1e-5,
           tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", _image(batch_growth=0, spatial_growth=3), sample="nearest_odd_scale_spatial_dynamic",
           fn=_interp(scale_factor=0.5), dynamic_min_opset=11),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 3, 7),), sample="nearest_1d", fn=_interp(scale_factor=3)),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 3, 7),), sample="linear_1d",
           fn=_interp(scale_factor=1.7, mode="linear"), atol=1e-5, tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 3, 7),), sample="linear_1d_align_corners",
           fn=_interp(size=12, mode="linear", align_corners=True), atol=1e-5, tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 2, 3, 4, 5),), sample="nearest_3d",
           fn=_interp(scale_factor=2), cuda_known_failures=dict.fromkeys((7, 8, 9), _CUDA_UPSAMPLE_RANK)),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 2, 3, 4, 5),), sample="trilinear",
           fn=_interp(scale_factor=1.5, mode="trilinear"), atol=1e-5, tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 2, 3, 4, 5),), sample="trilinear_align_corners",
           fn=_interp(size=(4, 6, 7), mode="trilinear", align_corners=True), atol=1e-5,
           tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", lambda k: (torch.randn(1 + k, 2, 5, 6, dtype=torch.float64),), sample="bilinear_float64",
           fn=_interp(scale_factor=1.5, mode="bilinear")),
    OpCase("interpolate", lambda k: (torch.randint(0, 255, (1 + k, 2, 5, 6), dtype=torch.uint8),),
           sample="nearest_uint8", fn=_interp(scale_factor=2)),
    OpCase("interpolate", _image(), sample="bilinear_antialias", min_opset=18,
           fn=_interp(scale_factor=0.5, mode="bilinear", antialias=True)),
    OpCase("interpolate", _image(height=12, width=10), sample="bilinear_antialias_size", min_opset=18,
           fn=_interp(size=(3, 4), mode="bilinear", antialias=True)),
    OpCase("interpolate", _image(height=12, width=10), sample="bicubic_antialias", min_opset=18,
           fn=_interp(scale_factor=0.4, mode="bicubic", antialias=True), atol=1e-5, tolerance_reason=_BLEND_REASON),
    OpCase("interpolate", _image(height=12, width=10), sample="bilinear_antialias_upscale", min_opset=18,
           fn=_interp(scale_factor=1.5, mode="bilinear", antialias=True)),
]


def _grid(k):
    return torch.randn(1 + k, 2, 5, 6), torch.rand(1 + k, 4, 3, 2) * 2.4 - 1.2


def _grid_case(mode, padding, align):
    return OpCase("grid_sample", _grid, sample=f"{mode}_{padding}{'_align_corners' if align else ''}", min_opset=16,
                  fn=lambda x, grid: F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align),
                  atol=1e-5, tolerance_reason=_BLEND_REASON)


CASES += [
    _grid_case(mode, padding, align)
    for mode in ("bilinear", "nearest", "bicubic")
    for padding in ("zeros", "border", "reflection")
    for align in (False, True)
]


def _volume_grid(k):
    return torch.randn(1 + k, 2, 3, 5, 6), torch.rand(1 + k, 2, 4, 3, 3) * 2.4 - 1.2


# Volumetric sampling (5-D input; PyTorch samples volumes trilinearly or by nearest) is GridSample-20's N-D form.
CASES += [
    OpCase("grid_sample", _volume_grid, sample=f"volume_{mode}_{padding}{'_align_corners' if align else ''}",
           min_opset=20, atol=1e-5, tolerance_reason=_BLEND_REASON,
           fn=lambda x, grid, mode=mode, padding=padding, align=align: F.grid_sample(
               x, grid, mode=mode, padding_mode=padding, align_corners=align))
    for mode in ("bilinear", "nearest")
    for padding in ("zeros", "border", "reflection")
    for align in (False, True)
]


# F.affine_grid as AffineGrid-20 (refused below 20, naming 20): 2-D and 3-D, align_corners either way, float and
# double, a size read from the input at run time, and spatial dims of size 1, which with align_corners PyTorch puts at
# 0 where the spec divides by zero (theta's column for such a dim is zeroed: at export time for a static size, at run
# time for a size known only then).
class _AffineGridOfInput(torch.nn.Module):
    def __init__(self, align_corners: bool):
        super().__init__()
        self.align_corners = align_corners

    def forward(self, theta, x):
        return F.affine_grid(theta, list(x.size()), align_corners=self.align_corners)


def _theta(n, spatial, dtype=torch.float32):
    return torch.randn(n, spatial, spatial + 1, dtype=dtype)


_AFFINE = dict(min_opset=20)
CASES += [
    OpCase("affine_grid_generator", lambda k: (_theta(2, 2),), sample="2d", **_AFFINE,
           fn=lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=False)),
    OpCase("affine_grid_generator", lambda k: (_theta(2, 2, torch.float64),), sample="2d_align_corners_double",
           **_AFFINE, fn=lambda t: F.affine_grid(t, [2, 1, 5, 3], align_corners=True)),
    OpCase("affine_grid_generator", lambda k: (_theta(1, 3),), sample="3d", **_AFFINE,
           fn=lambda t: F.affine_grid(t, [1, 2, 3, 4, 5], align_corners=False)),
    OpCase("affine_grid_generator", lambda k: (_theta(2, 3),), sample="3d_align_corners", **_AFFINE,
           fn=lambda t: F.affine_grid(t, [2, 2, 3, 4, 2], align_corners=True)),
    OpCase("affine_grid_generator", lambda k: (_theta(2, 2),), sample="2d_align_corners_unit_dims", **_AFFINE,
           fn=lambda t: F.affine_grid(t, [2, 3, 1, 4], align_corners=True)),
    OpCase("affine_grid_generator", lambda k: (_theta(1, 3),), sample="3d_align_corners_unit_dims", **_AFFINE,
           fn=lambda t: F.affine_grid(t, [1, 1, 1, 3, 1], align_corners=True)),
    OpCase("affine_grid_generator", lambda k: (_theta(1 + k, 2), torch.randn(1 + k, 3, [1, 4][k], 5)),
           sample="run_time_size_align_corners", **_AFFINE, module=lambda: _AffineGridOfInput(True)),
    OpCase("affine_grid_generator", lambda k: (_theta(1 + k, 3), torch.randn(1 + k, 2, 3, 2 + k, 4)),
           sample="3d_run_time_size", **_AFFINE, module=lambda: _AffineGridOfInput(False)),
]
