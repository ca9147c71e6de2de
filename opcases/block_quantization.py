"""Cases for groupwise (blocked) quantization, ``quantized_decomposed``'s per-channel-group ops (int4 weight-only
and 8-bit-activation/4-bit-weight recipes): a 2-D weight cut into groups of columns, each with a scale and a zero
point. From opset 21 a constant weight whose values fit 4 bits is an INT4/UINT4 tensor behind a blocked
DequantizeLinear; below it, and for run-time weights of unknown shape, the arithmetic is written out. Both forms are
exact: every case compares with no tolerance. Size variant 1 grows the batch (and a run-time weight's rows)."""

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)

from opcases import OpCase

_EXACT = dict(rtol=0.0, atol=0.0, tolerance_reason="dequantization and quantization are exact: small integers times "
              "one scale round once, in PyTorch and in the export alike")
_GROUPS = torch.ops.quantized_decomposed


def _generator(seed):
    return torch.Generator().manual_seed(seed)


class _GroupwiseWeight(torch.nn.Module):
    """A weight [rows, columns] stored quantized in groups of ``group_size`` columns (the int4 weight-only pattern),
    dequantized at run time and scaled by the input (a per-batch factor, so the result has a dynamic axis; a matmul
    would add its own summation order to the comparison)."""

    def __init__(self, low=-8, high=7, integer=torch.int8, zero_points=True, scale_dtype=torch.float32,
                 group_size=32, scale_groups=None, columns=64, rows=8):
        super().__init__()
        groups = scale_groups or columns // group_size
        self.register_buffer("weight", torch.randint(low, high + 1, (rows, columns), generator=_generator(1)).to(integer))
        self.register_buffer("scales", (torch.rand(rows, groups, generator=_generator(2)) / 16 + 0.01).to(scale_dtype))
        points = torch.randint(max(low, -2), min(high, 2) + 1, (rows, groups), generator=_generator(3), dtype=torch.int32)
        self.register_buffer("zero_points", points if zero_points else None)
        self.low, self.high, self.integer, self.group_size = low, high, integer, group_size

    def forward(self, x):
        weight = _GROUPS.dequantize_per_channel_group(self.weight, self.scales, self.zero_points, self.low, self.high,
                                                      self.integer, self.group_size, torch.float32)
        return x * weight


def _factors(k):
    return (torch.randn(2 + k, 1, 1, generator=_generator(4)),)


def _run_time_weight(k):
    """A weight, its scales and zero points as inputs (rows grow with the size variant)."""
    rows = 6 + 2 * k
    return (torch.randint(-8, 8, (rows, 64), generator=_generator(5), dtype=torch.int8),
            torch.rand(rows, 4, generator=_generator(6)) / 8, torch.randint(-3, 4, (rows, 4), generator=_generator(7),
                                                                             dtype=torch.int32))


def _to_quantize(k):
    rows = 4 + 2 * k
    return (torch.randn(rows, 64, generator=_generator(8)) * 2, torch.rand(rows, 2, generator=_generator(9)) / 4 + 0.05,
            torch.randint(-2, 3, (rows, 2), generator=_generator(10), dtype=torch.int32))


CASES = [
    OpCase("dequantize_per_channel_group", _factors, sample="int4_weight", **_EXACT,
           module=_GroupwiseWeight),
    OpCase("dequantize_per_channel_group", _factors, sample="uint4_no_zero_point", **_EXACT,
           module=lambda: _GroupwiseWeight(low=0, high=15, integer=torch.uint8, zero_points=False)),
    OpCase("dequantize_per_channel_group", _factors, sample="int8_values", **_EXACT,
           module=lambda: _GroupwiseWeight(low=-100, high=100)),
    OpCase("dequantize_per_channel_group", _factors, sample="float16_scales", **_EXACT,
           module=lambda: _GroupwiseWeight(scale_dtype=torch.float16)),
    OpCase("dequantize_per_channel_group", _factors, sample="group_wider_than_row", **_EXACT,
           module=lambda: _GroupwiseWeight(group_size=128, scale_groups=1)),
    OpCase("dequantize_per_channel_group", _run_time_weight, sample="run_time", **_EXACT,
           fn=lambda w, s, z: _GROUPS.dequantize_per_channel_group(w, s, z, -8, 7, torch.int8, 16, torch.float32)),
    OpCase("quantize_per_channel_group", _to_quantize, sample="int4", min_opset=11, **_EXACT,
           fn=lambda x, s, z: _GROUPS.quantize_per_channel_group(x, s, z, -8, 7, torch.int8, 32)),
    OpCase("quantize_per_channel_group", _to_quantize, sample="round_trip", min_opset=11, **_EXACT,
           fn=lambda x, s, z: _GROUPS.dequantize_per_channel_group(
               _GROUPS.quantize_per_channel_group(x, s, z, -8, 7, torch.int8, 32), s, z, -8, 7, torch.int8, 32,
               torch.float32)),
]
