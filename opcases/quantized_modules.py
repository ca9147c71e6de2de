"""Cases of ``exporter/symbolics/quantized_modules.py``: the ``quantized::`` ops of PyTorch's quantized modules (QDQ
form). TorchScript's capture only (see ``op_tests/torch_export_limits.py``)."""

from __future__ import annotations

import contextlib

import torch

from opcases import OpCase

# -- quantized tensors (QDQ) ------------------------------------------------------------------------------------
# Each case quantizes a float input, runs the quantized op and dequantizes the result, so the harness compares
# floats. Inputs and weights are multiples of 1/8 in quantization grids of step 1/8 or 1/4, so quantizing them is
# exact; PyTorch requantizes a result in integer arithmetic, ONNX Runtime in float32, so a result lying on a rounding
# boundary may land one output step apart: atol is one output step (_STEP).
_STEP = 0.25


_TRANSPOSED = (torch.ao.nn.quantized.ConvTranspose1d, torch.ao.nn.quantized.ConvTranspose2d,
               torch.ao.nn.quantized.ConvTranspose3d)


def _grid(*shape, seed=0):
    return torch.randint(-24, 25, shape, generator=torch.Generator().manual_seed(seed)).float() / 8


def _q(x):
    return torch.quantize_per_tensor(x, 0.125, 128, torch.quint8)


_ONE_STEP = dict(atol=_STEP, rtol=0.0, tolerance_reason="a result on a rounding boundary may requantize one output "
                 "step (0.25) apart: PyTorch requantizes in integer arithmetic, ONNX Runtime in float32")


class _OnFbgemm(torch.nn.Module):
    """Packs and runs a quantized module on the fbgemm engine. In torch 2.13 the default x86 engine (and onednn)
    computes quantized ConvTranspose2d more than 50 output steps away from its float definition, which fbgemm, qnnpack,
    ONNX Runtime and onnx.reference all agree on; which engine is in effect also depends on what ran before in
    the process, so the reference is pinned."""

    def __init__(self, build):
        super().__init__()
        with _fbgemm():
            self.inner = build()

    def forward(self, *xs):
        with _fbgemm():
            return self.inner(*xs)


@contextlib.contextmanager
def _fbgemm():
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    try:
        yield
    finally:
        torch.backends.quantized.engine = previous


_functional = lambda fn: (lambda: _Quantized(fn))  # noqa: E731


_image = lambda k: (_grid(1 + k, 4, 6, 6),)  # noqa: E731


_qnn = torch.ao.nn.quantized


# A quantized ConvTranspose3d whose output padding is not below its stride (PyTorch's quantized module accepts it, ONNX's
# ConvTranspose does not): the end pads shrink by it, the rest is appended as zeros and the bias added after.
_volume = lambda k: (_grid(1 + k, 4, 3, 3, 3),)  # noqa: E731


def _with_weights(module, weight_shape, out_scale=_STEP, out_zero_point=128):
    weight = torch.quantize_per_tensor(_grid(*weight_shape, seed=1) / 4, 1 / 32, 0, torch.qint8)
    module.set_weight_bias(weight, _grid(weight_shape[0] if not isinstance(module, _TRANSPOSED) else weight_shape[1]))
    module.scale, module.zero_point = out_scale, out_zero_point
    return _Quantized(module)


class _Quantized(torch.nn.Module):
    """quantize -> ``op`` (a quantized module or a function of quantized tensors) -> dequantize."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, *xs):
        return self.op(*[_q(x) for x in xs]).dequantize()


CASES = [
    OpCase("quantized_conv2d", _image, module=lambda: _with_weights(_qnn.Conv2d(4, 3, 3, padding=1), (3, 4, 3, 3)),
           min_opset=10, **_ONE_STEP),
    OpCase("quantized_conv2d_relu", _image, min_opset=10, **_ONE_STEP,
           module=lambda: _with_weights(torch.ao.nn.intrinsic.quantized.ConvReLU2d(4, 3, 3, stride=2), (3, 4, 3, 3))),
    OpCase("quantized_conv1d", lambda k: (_grid(1 + k, 4, 9),), min_opset=10, **_ONE_STEP,
           module=lambda: _with_weights(_qnn.Conv1d(4, 3, 3, stride=2), (3, 4, 3))),
    OpCase("quantized_conv_transpose2d", _image, min_opset=10, **_ONE_STEP,
           module=lambda: _OnFbgemm(lambda: _with_weights(_qnn.ConvTranspose2d(4, 3, 3, stride=2), (4, 3, 3, 3)))),
    OpCase("quantized_linear", lambda k: (_grid(2 + k, 6),), min_opset=10, **_ONE_STEP,
           module=lambda: _with_weights(_qnn.Linear(6, 5), (5, 6))),
    OpCase("quantized_add", lambda k: (_grid(2 + k, 5), _grid(2 + k, 5, seed=2)), min_opset=10,
           module=_functional(lambda a, b: torch.ops.quantized.add(a, b, _STEP, 128))),
    OpCase("quantized_add_relu", lambda k: (_grid(2 + k, 5), _grid(2 + k, 5, seed=2)), min_opset=10,
           module=_functional(lambda a, b: torch.ops.quantized.add_relu(a, b, _STEP, 128))),
    OpCase("quantized_mul", lambda k: (_grid(2 + k, 5), _grid(2 + k, 5, seed=2)), min_opset=10, **_ONE_STEP,
           module=_functional(lambda a, b: torch.ops.quantized.mul(a, b, _STEP, 128))),
    OpCase("quantized_cat", lambda k: (_grid(2 + k, 5), _grid(2 + k, 3, seed=2)), min_opset=10,
           module=_functional(lambda a, b: torch.ops.quantized.cat([a, b], 1, _STEP, 100))),
    OpCase("quantized_hardswish", _image, min_opset=10, **_ONE_STEP,
           module=_functional(lambda x: torch.ops.quantized.hardswish(x, _STEP / 2, 10))),
    OpCase("quantized_max_pool2d", _image, min_opset=10,
           module=_functional(lambda x: torch.nn.functional.max_pool2d(x, 2))),
    OpCase("quantized_relu_flatten", _image, min_opset=10,
           module=_functional(lambda x: torch.flatten(torch.relu(x), 1))),
    OpCase("quantized_sigmoid", _image, min_opset=10, atol=1 / 256, rtol=0.0,
           tolerance_reason="the output grid's step is 1/256 (PyTorch's fixed sigmoid quantization)",
           module=_functional(torch.sigmoid)),
    OpCase("quantized_conv_transpose3d", _volume, sample="output_padding_not_below_stride", min_opset=10, **_ONE_STEP,
           module=lambda: _OnFbgemm(lambda: _with_weights(
               _qnn.ConvTranspose3d(4, 3, [2, 3, 4], output_padding=(0, 1, 2), stride=[3, 1, 2]), (4, 3, 2, 3, 4)))),
    OpCase("quantized_conv_transpose3d", _volume, sample="output_padding_and_end_pads", min_opset=10, **_ONE_STEP,
           module=lambda: _OnFbgemm(lambda: _with_weights(_qnn.ConvTranspose3d(
               4, 3, [2, 3, 4], output_padding=(0, 1, 2), stride=[3, 1, 2], padding=(0, 1, 1)), (4, 3, 2, 3, 4)))),
]
