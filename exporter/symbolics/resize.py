"""Resizing: upsample/interpolate (nearest, nearest-exact, linear, bilinear, trilinear, bicubic) and grid_sample.

PyTorch's sampling rules, and the ONNX spelling that reproduces each exactly:
  nearest        src = floor(dst * scale)              Resize-11 asymmetric + nearest_mode floor
  nearest-exact  src = floor((dst + 0.5) * scale)      Resize-11 half_pixel + round_prefer_ceil
  linear/cubic   src = (dst + 0.5) * scale - 0.5       Resize-11 half_pixel (also for an output length of 1,
                 (align_corners=False)                  where pytorch_half_pixel would give 0 instead)
  linear/cubic   src = dst * (in - 1) / (out - 1)      Resize-11 align_corners
                 (align_corners=True)
  bicubic        Keys kernel with a = -0.75            cubic_coeff_a = -0.75
where ``scale`` is 1 / scale_factor when the caller gave scale factors, else in / out. So scale factors go to
ONNX as ``scales`` (ORT then divides by the same factor) and explicit sizes as ``sizes``.

Before opset 11, Upsample-7/9 and Resize-10 only know the asymmetric transform, and ORT rounds nearest
indices up when down-sampling: they are exact only for nearest with integer factors. Every other case is
emulated, when the spatial sizes are static, by gathering the source rows PyTorch would read and blending
them with PyTorch's own weights (computed here with its formulas); otherwise it needs opset >= 11.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from exporter import dtypes, ir
from exporter.dtypes import DOUBLE, FLOAT
from exporter.lowering.core import (
    cast,
    constant_value,
    is_value,
    require_opset,
    require_rank,
    reshape,
    slice_op,
    to_int64_list_value,
)
from exporter.lowering.resize import unused_resize_inputs, upsample_by_integer_factors
from exporter.lowering.runtime import RESIZE_DOUBLES, applies
from exporter.lowering.sequence import concat_from_sequence
from exporter.registry import parse_args, symbolic, unsupported

_CUBIC_COEFF_A = -0.75


# -- argument decoding -------------------------------------------------------------------------------------------
def _spatial_count(g, input) -> int:
    return require_rank(g, input) - 2


def _is_vec_overload(g) -> bool:
    return g.has_argument("scale_factors")


def _scales_argument(g, input, scale_args) -> list[float] | None:
    """Per-axis scale factors (None when the caller gave sizes); accepts both the .vec and per-axis overloads."""
    spatial = _spatial_count(g, input)
    if _is_vec_overload(g):
        factors = scale_args[0] if scale_args else None
        if factors is None:
            return None
        factors = [float(constant_value(f)) for f in factors]
        return factors * spatial if len(factors) == 1 else factors
    given = [None if s is None else float(constant_value(s)) for s in scale_args]
    if all(s is None for s in given):
        return None
    factors = [s for s in given if s is not None and s > 0]
    if len(factors) < len(given):
        raise unsupported(g.op_kind, g.opset, "scale factors given for some axes only have no ONNX equivalent")
    return factors


def _size_argument(g, output_size, spatial: int) -> list | None:
    if output_size is None:
        return None
    if is_value(output_size) and output_size.kind == ir.SEQUENCE:
        # Sizes a scripted loop computed (F.interpolate's from scale factors and run-time input sizes): stacked.
        # Reshaped to the spatial count: ONNX shape inference then knows the length Resize needs (it misreads the
        # length of a Concat with an input of unknown shape as 0 and rejects the model).
        output_size = reshape(g, concat_from_sequence(g, output_size, 0, new_axis=True), [spatial])
    if is_value(output_size):
        return [output_size]  # a 1-D value holding every spatial size
    return list(output_size)


def _static_ints(items) -> list[int] | None:
    if items is None or any(is_value(i) for i in items):
        return None
    return [int(constant_value(i)) for i in items]


class _Request:
    """One resize: where the output size comes from and how output coordinates map to input coordinates."""

    def __init__(self, g, input, output_size, scale_args, mode: str, align_corners: bool = False):
        self.input = input
        self.mode = mode  # nearest | nearest_exact | linear | cubic
        self.align_corners = align_corners
        self.spatial = _spatial_count(g, input)
        self.scales = _scales_argument(g, input, scale_args)
        self.size = _size_argument(g, output_size, self.spatial)
        dims = g.dims(input)
        self.in_dims = None if dims is None else dims[2:]
        if self.scales is not None and self.size is not None and not _is_vec_overload(g):
            self._check_consistent(g)

    def _check_consistent(self, g) -> None:
        sizes = _static_ints(self.size)
        if self.in_dims is None or None in self.in_dims or sizes is None or self.scales is None:
            return
        for length, scale, out in zip(self.in_dims, self.scales, sizes, strict=True):
            if math.floor(length * scale) != out:
                raise unsupported(g.op_kind, g.opset,
                                  f"output size {out} is not floor({length} * {scale}), which ONNX Resize requires")

    @property
    def static_in(self) -> list[int] | None:
        if self.in_dims is None or any(d is None for d in self.in_dims):
            return None
        return list(self.in_dims)

    def static_out(self) -> list[int] | None:
        sizes = _static_ints(self.size) if self.size is not None and len(self.size) == self.spatial else None
        if sizes is not None:
            return sizes
        if self.scales is not None and self.static_in is not None:
            return [int(math.floor(length * scale)) for length, scale in zip(self.static_in, self.scales, strict=True)]
        return None

    def onnx_scales(self) -> list[float]:
        """The scale factors for ONNX: PyTorch copies an axis whose linear resize keeps its length, whatever the
        factor (say 1.2 on a length of 3), so such an axis gets the factor 1."""
        if self.scales is None:
            raise ValueError("a resize to sizes has no scale factors")
        lengths = self.in_dims if self.in_dims is not None else [None] * self.spatial
        return [
            1.0 if self.mode == "linear" and length is not None and math.floor(length * scale) == length else scale
            for length, scale in zip(lengths, self.scales, strict=True)
        ]

    def uses_scales(self) -> bool:
        """Whether PyTorch maps coordinates with the caller's scale factors (so ONNX must receive scales)."""
        return self.scales is not None


# -- opset 11+: Resize -------------------------------------------------------------------------------------------
_RESIZE_ATTRIBUTES: dict[str, dict[str, Any]] = {
    "nearest": dict(mode_s="nearest", coordinate_transformation_mode_s="asymmetric", nearest_mode_s="floor"),
    "nearest_exact": dict(mode_s="nearest", coordinate_transformation_mode_s="half_pixel",
                          nearest_mode_s="round_prefer_ceil"),
    "linear": dict(mode_s="linear"),
    "cubic": dict(mode_s="cubic", cubic_coeff_a_f=_CUBIC_COEFF_A),
}


def _full_sizes(g, request: _Request):
    """The int64 ``sizes`` input of Resize: batch and channel sizes followed by the requested spatial sizes."""
    dims = g.dims(request.input)
    leading = dims[:2] if dims is not None else [None, None]
    spatial = request.size
    if spatial is None:
        raise ValueError("a resize by scale factors has no sizes")
    if len(spatial) == 1 and is_value(spatial[0]) and spatial[0].rank == 1:
        spatial_value = to_int64_list_value(g, spatial[0])
    else:
        spatial_value = None
    if spatial_value is None and all(d is not None for d in leading):
        return to_int64_list_value(g, list(leading) + list(spatial))
    head = slice_op(g, g.op("Shape", request.input), [0], [0], [2])
    tail = spatial_value if spatial_value is not None else to_int64_list_value(g, spatial)
    out = g.op("Concat", head, tail, axis_i=0)
    out.shape = (request.spatial + 2,)
    return out


def _resize_11(g, request: _Request, **extra_attributes):
    attributes = dict(_RESIZE_ATTRIBUTES[request.mode])
    if request.mode in ("linear", "cubic"):
        attributes["coordinate_transformation_mode_s"] = "align_corners" if request.align_corners else "half_pixel"
    attributes.update(extra_attributes)
    roi, no_scales = unused_resize_inputs(g)
    if request.uses_scales():
        scales = g.const(np.array([1.0, 1.0] + request.onnx_scales(), dtype=np.float32))
        return g.op("Resize", request.input, roi, scales, **attributes)
    out = g.op("Resize", request.input, roi, no_scales, _full_sizes(g, request), **attributes)
    if out.shape is None and g.rank(request.input) is not None:
        out.shape = (None,) * g.rank(request.input)  # sizes computed at run time: the rank is the input's
    return out


# -- opsets 7-10: Upsample / Resize-10 for integer nearest factors, gathers otherwise -----------------------------
def _integer_factors(g, request: _Request) -> list[int] | None:
    if request.scales is not None:
        factors = request.scales
    else:
        sizes, lengths = _static_ints(request.size), request.static_in
        if sizes is None or lengths is None or len(sizes) != request.spatial:
            return None
        factors = [out / length for out, length in zip(sizes, lengths, strict=True)]
    if all(float(f).is_integer() and f >= 1 for f in factors):
        return [int(f) for f in factors]
    return None


def _resize_legacy(g, request: _Request):
    if request.mode == "nearest":
        factors = _integer_factors(g, request)
        if factors is not None:
            return upsample_by_integer_factors(g, request.input, factors)
    if not _gatherable(request):
        raise unsupported(g.op_kind, g.opset,
                          f"{request.mode} resize with dynamic spatial sizes needs opset >= 11")
    return _resize_by_gathers(g, request)


def _gatherable(request: _Request) -> bool:
    return request.static_in is not None and request.static_out() is not None


def _resize_by_gathers(g, request: _Request):
    """Resample one spatial axis after another, reading the rows PyTorch reads with PyTorch's weights."""
    lengths, outs = request.static_in, request.static_out()
    if lengths is None or outs is None:
        raise ValueError("resampling by gathers needs static sizes (see _gatherable)")
    result = request.input
    for axis, (length, out) in enumerate(zip(lengths, outs, strict=True)):
        scale = request.scales[axis] if request.scales is not None else None
        result = _resample_axis(g, result, axis + 2, length, out, scale, request)
    return result


def _compute_type(g, input):
    """The numpy type PyTorch computes source coordinates in (its 'opmath' type: float for half, else same)."""
    return np.float64 if g.dtype(input) == dtypes.onnx_from_torch(torch.float64) else np.float32


def _coordinate_scale(length: int, out: int, scale: float | None, align_corners: bool, real):
    if align_corners:
        return real((length - 1) / (out - 1)) if out > 1 else real(0)
    if scale is not None and scale > 0:
        return real(1.0 / scale)
    return real(length) / real(out)


def _taps(mode: str, length: int, out: int, scale: float | None, align_corners: bool, real):
    """(indices, weights): PyTorch's source indices and blend weights per output position, one row per tap."""
    dst = np.arange(out, dtype=real)
    ratio = _coordinate_scale(length, out, scale, align_corners, real)
    if mode in ("nearest", "nearest_exact"):
        offset = real(0.5) if mode == "nearest_exact" else real(0)
        return [np.minimum(np.floor((dst + offset) * ratio).astype(np.int64), length - 1)], None
    source = ratio * dst if align_corners else ratio * (dst + real(0.5)) - real(0.5)
    if mode == "linear":
        if out == length:
            return [np.arange(out)], None
        source = np.maximum(source, real(0))
        low = source.astype(np.int64)
        high = low + (low < length - 1)
        upper = np.clip(source - low.astype(real), 0, 1).astype(real)
        return [low, high], [real(1) - upper, upper]
    base = np.floor(source)
    t = (source - base).astype(real)
    base = base.astype(np.int64)
    a = real(_CUBIC_COEFF_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    indices = [np.clip(base + k, 0, length - 1) for k in (-1, 0, 1, 2)]
    return indices, [w.astype(real) for w in weights]


def _resample_axis(g, x, axis: int, length: int, out: int, scale, request: _Request):
    real = _compute_type(g, x)
    indices, weights = _taps(request.mode, length, out, scale, request.align_corners, real)
    if weights is None and np.array_equal(indices[0], np.arange(length)) and out == length:
        return x
    rank = request.spatial + 2
    blended = None
    for tap, index in enumerate(indices):
        picked = g.op("Gather", x, g.const(index), axis_i=axis)
        if weights is None:
            return picked
        weight = weights[tap].reshape([out] + [1] * (rank - axis - 1))
        term = g.op("Mul", picked, g.const(weight, g.dtype(x) or FLOAT))
        blended = term if blended is None else g.op("Add", blended, term)
    return blended


def _resize(g, request: _Request):
    """Resize (opset 11+), or for a double input of static sizes the exact gathers, which ONNX Runtime can run."""
    if g.dtype(request.input) == DOUBLE and _gatherable(request) and applies(g, RESIZE_DOUBLES):
        return _resize_by_gathers(g, request)
    return _resize_11(g, request)


# -- the aten ops: Upsample / Resize-10 / gathers before opset 11, Resize from 11 ---------------------------------
_NEAREST = ("aten::upsample_nearest1d", "aten::upsample_nearest2d", "aten::upsample_nearest3d")
_NEAREST_EXACT = ("aten::_upsample_nearest_exact1d", "aten::_upsample_nearest_exact2d",
                  "aten::_upsample_nearest_exact3d")
_LINEAR = ("aten::upsample_linear1d", "aten::upsample_bilinear2d", "aten::upsample_trilinear3d")
_BICUBIC = ("aten::upsample_bicubic2d",)


def _nearest(g, input, output_size, *scales):
    """F.interpolate(mode='nearest'): ``(input, output_size, scale_factors)`` or per-axis ``scales``."""
    return _Request(g, input, output_size, scales, "nearest")


def _nearest_exact(g, input, output_size, *scales):
    """F.interpolate(mode='nearest-exact')."""
    return _Request(g, input, output_size, scales, "nearest_exact")


def _linear(g, input, output_size, align_corners, *scales):
    """F.interpolate(mode='linear' | 'bilinear' | 'trilinear')."""
    return _Request(g, input, output_size, scales, "linear", bool(constant_value(align_corners)))


def _bicubic(g, input, output_size, align_corners, *scales):
    """F.interpolate(mode='bicubic')."""
    return _Request(g, input, output_size, scales, "cubic", bool(constant_value(align_corners)))


@symbolic(*_NEAREST)
def upsample_nearest_legacy(g, *args):
    return _resize_legacy(g, _nearest(g, *args))


@symbolic(*_NEAREST, since=11)
def upsample_nearest(g, *args):
    return _resize(g, _nearest(g, *args))


@symbolic(*_NEAREST_EXACT)
def upsample_nearest_exact_legacy(g, *args):
    return _resize_legacy(g, _nearest_exact(g, *args))


@symbolic(*_NEAREST_EXACT, since=11)
def upsample_nearest_exact(g, *args):
    return _resize(g, _nearest_exact(g, *args))


@symbolic(*_LINEAR)
def upsample_linear_legacy(g, *args):
    return _resize_legacy(g, _linear(g, *args))


@symbolic(*_LINEAR, since=11)
def upsample_linear(g, *args):
    return _resize(g, _linear(g, *args))


@symbolic(*_BICUBIC)
def upsample_bicubic_legacy(g, *args):
    return _resize_legacy(g, _bicubic(g, *args))


@symbolic(*_BICUBIC, since=11)
def upsample_bicubic(g, *args):
    return _resize(g, _bicubic(g, *args))


_ANTIALIASED = ("aten::_upsample_bilinear2d_aa", "aten::_upsample_bicubic2d_aa")
# PyTorch's antialiased bicubic filter is Keys' cubic with a = -0.5 (its plain bicubic uses -0.75).
_ANTIALIASED_CUBIC_COEFF_A = -0.5


@symbolic(*_ANTIALIASED, refuses=True)
def upsample_antialiased_before_18(g, *args):
    """F.interpolate(antialias=True) needs Resize's ``antialias`` (opset 18)."""
    require_opset(g, 18, "antialiased interpolation needs Resize antialias")


@symbolic(*_ANTIALIASED, since=18)
def upsample_antialiased(g, input, output_size, align_corners, *scales):
    """F.interpolate(mode='bilinear' | 'bicubic', antialias=True) as Resize-18 with ``antialias``: downscaling
    widens the filter by the scale factor, and taps outside the image are dropped and the rest renormalized
    (``exclude_outside``), as in PyTorch's antialiased kernels."""
    if constant_value(align_corners):
        raise unsupported(g.op_kind, g.opset, "antialiased interpolation with align_corners=True has no ONNX "
                          "form (Resize's antialiased filter centres differ from PyTorch's there)")
    if g.op_kind == "aten::_upsample_bilinear2d_aa":
        return _resize_11(g, _linear(g, input, output_size, align_corners, *scales), antialias_i=1,
                          exclude_outside_i=1)
    return _resize_11(g, _bicubic(g, input, output_size, align_corners, *scales), antialias_i=1,
                      exclude_outside_i=1, cubic_coeff_a_f=_ANTIALIASED_CUBIC_COEFF_A)


@symbolic("aten::_upsample_lanczos2d_aa", refuses=True)
def upsample_lanczos(g, *args):
    raise unsupported(g.op_kind, g.opset, "ONNX Resize has no Lanczos filter at any opset")


# -- grid_sample ---------------------------------------------------------------------------------------------
# PyTorch's interpolation_mode (0 bilinear, 1 nearest, 2 bicubic) by GridSample's names: GridSample-20 renamed the
# modes for N-D sampling (ONNX Runtime and onnx.reference refuse the old names at 20).
_GRID_MODES_16 = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_MODES_20 = {0: "linear", 1: "nearest", 2: "cubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


_GRID_SAMPLERS = ("aten::grid_sampler", "aten::grid_sampler_2d", "aten::grid_sampler_3d")


@symbolic(*_GRID_SAMPLERS, refuses=True)
def grid_sampler_before_16(g, input, *args):
    """Registered from opset 7 so that the error names the opset this input needs: 16, or 20 for a volume."""
    _require_grid_sample(g, input)


@symbolic(*_GRID_SAMPLERS, since=16)
@parse_args("v", "v", "i", "i", "b")
def grid_sampler_4d(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample as GridSample-16: 4-D input only (volumetric sampling arrived in opset 20)."""
    _require_grid_sample(g, input)
    return _grid_sample(g, input, grid, _GRID_MODES_16[interpolation_mode], padding_mode, align_corners)


def _require_grid_sample(g, input) -> None:
    if g.rank(input) == 5:
        require_opset(g, 20, "grid_sample of a 5-D input needs N-D GridSample")
    require_opset(g, 16, "grid_sample needs GridSample")


@symbolic(*_GRID_SAMPLERS, since=20)
@parse_args("v", "v", "i", "i", "b")
def grid_sampler(g, input, grid, interpolation_mode, padding_mode, align_corners):
    """F.grid_sample as GridSample-20: 4-D and 5-D (volumetric) input, modes linear / nearest / cubic."""
    return _grid_sample(g, input, grid, _GRID_MODES_20[interpolation_mode], padding_mode, align_corners)


def _grid_sample(g, input, grid, mode: str, padding_mode: int, align_corners: bool):
    """GridSample in ``mode``. float16 samples in float32, as PyTorch's kernel computes positions and weights, and
    rounds once."""
    dtype = g.dtype(input)
    work = dtypes.opmath_type(dtype)
    sampled = g.op("GridSample", cast(g, input, work), cast(g, grid, work), mode_s=mode,
                   padding_mode_s=_GRID_PADDING[padding_mode], align_corners_i=int(align_corners))
    return cast(g, sampled, dtype) if dtype is not None else sampled


# -- affine grids ------------------------------------------------------------------------------------------------
@symbolic("aten::affine_grid_generator", refuses=True)
def affine_grid_before_20(g, theta, size, align_corners):
    """Registered from opset 7 so that the error names the opset affine_grid needs: 20 (AffineGrid)."""
    require_opset(g, 20, "affine_grid needs AffineGrid")


@symbolic("aten::affine_grid_generator", since=20)
def affine_grid_generator(g, theta, size, align_corners):
    """F.affine_grid as AffineGrid-20 (theta, size; align_corners): theta [N, 2, 3] with size [N, C, H, W] gives
    [N, H, W, 2], theta [N, 3, 4] with size [N, C, D, H, W] gives [N, D, H, W, 3], the base grid at -1..1 across
    the pixel centres (or the corner pixels with align_corners) times theta^T, as PyTorch computes it. The size may
    be known only at run time.

    With align_corners, PyTorch puts the one position of a spatial dim of size 1 at 0, where the spec divides by
    size - 1 = 0 (ONNX Runtime gives 1, onnx.reference -1, both finite): theta's column for each such dim is zeroed,
    which takes that coordinate as 0 whatever the runtime made of it."""
    corners = bool(constant_value(align_corners))
    sizes = to_int64_list_value(g, size)
    mask = _columns_of_non_unit_dims(g, theta, size, sizes) if corners else None
    if mask is not None:
        theta = g.op("Mul", theta, mask)
    grid = g.op("AffineGrid", theta, sizes, align_corners_i=int(corners))
    if isinstance(size, (list, tuple)):  # its length is the grid's rank
        known = [int(constant_value(s)) if not is_value(s) or s.const is not None else None for s in size]
        grid.shape = (known[0], *known[2:], len(known) - 2)
    return grid


def _columns_of_non_unit_dims(g, theta, size, sizes):
    """1 for each column of theta whose spatial dim has a size other than 1, and for the translation column; 0 for
    the others (None where a static size has no dim of 1). Theta's columns run x, y(, z): the spatial dims last to
    first."""
    if isinstance(size, (list, tuple)) and all(not is_value(s) or s.const is not None for s in size):
        spatial = [int(constant_value(s)) for s in size[2:]]
        if 1 not in spatial:
            return None
        mask = np.array([float(n != 1) for n in reversed(spatial)] + [1.0], dtype=dtypes.numpy_from_onnx(g.dtype(theta)))
        return g.const(mask)
    reversed_spatial = g.op("Slice", sizes, g.const([-1], torch.int64), g.const([1], torch.int64),
                            g.const([0], torch.int64), g.const([-1], torch.int64))
    non_unit = cast(g, g.op("Not", g.op("Equal", reversed_spatial, g.const([1], torch.int64))), g.dtype(theta))
    return g.op("Concat", non_unit, g.const(np.ones(1, dtype=dtypes.numpy_from_onnx(g.dtype(theta)))), axis_i=0)
