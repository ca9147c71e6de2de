"""Cases for quantization-aware training's fake quantization (QuantizeLinear/DequantizeLinear pairs): full 8-bit
ranges, the narrower 0..127 range of QAT activations (a clamp after dequantization), run-time scales and zero
points, and per-channel parameters (opset 13). Size variant 1 grows the batch."""


import torch

from opcases import OpCase

_SCALES = torch.tensor([0.02, 0.05, 0.01, 0.03])
_ZERO_POINTS = torch.tensor([0, 3, 10, 100], dtype=torch.int32)


def _x(k):
    return (torch.randn(2 + k, 4, 3, 3) * 2,)


CASES = [
    OpCase("fake_quantize_per_tensor_affine", _x, sample="int8", min_opset=10,
           fn=lambda x: torch.fake_quantize_per_tensor_affine(x, 1 / 127, 0, -128, 127)),
    OpCase("fake_quantize_per_tensor_affine", _x, sample="0_127_zero_point", min_opset=10,
           fn=lambda x: torch.fake_quantize_per_tensor_affine(x, 0.02, 30, 0, 127)),
    OpCase("fake_quantize_per_tensor_affine", lambda k: (*_x(k), torch.tensor(0.03), torch.tensor(5)),
           sample="run_time_parameters", min_opset=10,
           fn=lambda x, s, z: torch.fake_quantize_per_tensor_affine(x, s, z, 0, 127)),
    OpCase("fake_quantize_per_channel_affine", _x, sample="uint8_then_int8", min_opset=13,
           fn=lambda x: torch.fake_quantize_per_channel_affine(
               torch.fake_quantize_per_channel_affine(x, _SCALES, _ZERO_POINTS, 1, 0, 255),
               _SCALES, _ZERO_POINTS - 3, 1, -128, 127)),
    OpCase("fake_quantize_per_channel_affine", lambda k: (*_x(k), _SCALES, _ZERO_POINTS), sample="0_127_run_time",
           min_opset=13, fn=lambda x, s, z: torch.fake_quantize_per_channel_affine(x, s, z, 1, 0, 127)),
]


CASES += [
    OpCase("quantize_per_tensor", lambda k: (torch.randn(2 + k, 5) * 3,), sample="quint8", min_opset=10,
           fn=lambda x: torch.quantize_per_tensor(x, 0.1, 128, torch.quint8).dequantize()),
    OpCase("quantize_per_tensor", lambda k: (torch.randn(2 + k, 5) * 3,), sample="qint8", min_opset=10,
           fn=lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).dequantize()),
    OpCase("quantize_per_channel", lambda k: (torch.randn(2 + k, 4, 3) * 2,), min_opset=13,
           fn=lambda x: torch.quantize_per_channel(x, _SCALES, _ZERO_POINTS, 1, torch.quint8).dequantize()),
]

CASES += [
]
