"""Cases for activations: float32 at every opset, float64/float16 where kernels differ, attribute values."""

import torch
import torch.nn.functional as F

from opcases import OpCase


def randn(*shape, dtype=torch.float32, scale=3.0):
    """Inputs spanning both signs, first dim one larger in the dynamic size variant."""
    return lambda k: (torch.randn(shape[0] + k, *shape[1:], dtype=dtype) * scale,)


def module(factory):
    return dict(module=factory)


CASES = [
    OpCase("relu", randn(2, 3), fn=torch.relu),
    OpCase("relu", lambda k: (torch.randint(-9, 9, (2 + k, 3)),), sample="int64", fn=torch.relu),
    OpCase("relu", randn(2, 3, dtype=torch.float64), sample="float64", fn=torch.relu),
    OpCase("relu6", randn(2, 3, 4, scale=5), **module(torch.nn.ReLU6)),
    OpCase("leaky_relu", randn(2, 3), fn=lambda x: F.leaky_relu(x, 0.2)),
    OpCase("leaky_relu", randn(2, 3, dtype=torch.float64), sample="float64", fn=lambda x: F.leaky_relu(x, 0.1)),
    OpCase("elu", randn(2, 3), fn=lambda x: F.elu(x, alpha=0.7)),
    OpCase("elu", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.elu),
    OpCase("selu", randn(2, 3), fn=F.selu),
    OpCase("selu", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.selu),
    OpCase("celu", randn(2, 3), fn=lambda x: F.celu(x, alpha=1.5)),
    OpCase("celu", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.celu),
    OpCase("gelu", randn(2, 3), fn=F.gelu, min_opset=9),
    OpCase("gelu", randn(2, 3), sample="tanh", fn=lambda x: F.gelu(x, approximate="tanh")),
    OpCase("gelu", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.gelu, min_opset=9),
    OpCase("gelu", randn(2, 3, dtype=torch.float64), sample="tanh_float64", fn=lambda x: F.gelu(x, approximate="tanh")),
    OpCase("gelu", randn(2, 3, dtype=torch.float16), sample="float16", fn=F.gelu, min_opset=9),
    OpCase("gelu", randn(2, 3, dtype=torch.float16), sample="tanh_float16", fn=lambda x: F.gelu(x, approximate="tanh")),
    OpCase("silu", randn(2, 3), fn=F.silu),
    OpCase("mish", randn(2, 3), fn=F.mish),
    OpCase("mish", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.mish),
    OpCase("mish", randn(2, 3, dtype=torch.float16), sample="float16", fn=F.mish),
    OpCase("hardswish", randn(2, 3), fn=F.hardswish),
    OpCase("hardswish", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.hardswish,
           known_failures={7: "ONNX Runtime has no double HardSigmoid, Clip, Max or Min kernel at opset 7"}),
    OpCase("hardsigmoid", randn(2, 3), fn=F.hardsigmoid),
    OpCase("hardtanh", randn(2, 3), fn=lambda x: F.hardtanh(x, -2.0, 1.5)),
    OpCase("hardtanh", randn(2, 3, dtype=torch.float16), sample="float16", fn=F.hardtanh),
    OpCase("softplus", randn(2, 3, scale=10), fn=F.softplus),
    OpCase("softplus", randn(2, 3, scale=10), sample="beta", fn=lambda x: F.softplus(x, beta=2.0)),
    OpCase("softplus", randn(2, 3, scale=10), sample="low_threshold", min_opset=9,
           fn=lambda x: F.softplus(x, beta=2.0, threshold=5.0)),
    OpCase("softplus", randn(2, 3, dtype=torch.float64, scale=10), sample="float64", fn=F.softplus),
    OpCase("softsign", randn(2, 3), fn=F.softsign),
    OpCase("softsign", randn(2, 3, dtype=torch.float64), sample="float64", fn=F.softsign),
    OpCase("prelu", randn(2, 3, 4, 5), module=lambda: torch.nn.PReLU(3, init=0.3)),
    OpCase("prelu", randn(2, 3), sample="single_weight", module=lambda: torch.nn.PReLU(init=0.1)),
    OpCase("prelu", randn(2, 4), sample="2d_channels", module=lambda: torch.nn.PReLU(4, init=0.2)),
    # A 0-d input keeps its shape (OpInfo prelu sample 7 came out with shape (1,)); not dynamic: nothing to vary.
    OpCase("prelu", lambda k: (torch.tensor(-1.5 - k), torch.tensor([0.25])), sample="0d_input",
           fn=lambda x, w: F.prelu(x, w), dynamic=False),
    OpCase("rrelu", randn(2, 3), module=lambda: torch.nn.RReLU(0.1, 0.3)),
    OpCase("threshold", randn(2, 3), fn=lambda x: F.threshold(x, 0.5, -2.0), min_opset=9),
    OpCase("threshold", lambda k: (torch.randint(-9, 9, (2 + k, 3)),), sample="int", fn=lambda x: F.threshold(x, 2, 0)),
    OpCase("logsigmoid", randn(2, 3, scale=10), fn=F.logsigmoid),
    OpCase("glu", randn(2, 6), fn=F.glu),
    OpCase("glu", randn(4, 3, 2), sample="dim0", fn=lambda x: F.glu(x, 0), dynamic=False),
    OpCase("tanhshrink", randn(2, 3), fn=F.tanhshrink),
    OpCase("softshrink", randn(2, 3), fn=lambda x: F.softshrink(x, 0.7)),
    OpCase("hardshrink", randn(2, 3), fn=lambda x: F.hardshrink(x, 0.7)),
    OpCase("sigmoid", randn(2, 3), fn=torch.sigmoid),
    OpCase("sigmoid", lambda k: (torch.randint(-5, 5, (2 + k, 3)),), sample="int", fn=torch.sigmoid),
    OpCase("tanh", randn(2, 3), fn=torch.tanh),
    OpCase("tanh", randn(2, 3, dtype=torch.float64), sample="float64", fn=torch.tanh),
    OpCase("softmax", randn(2, 3, 4), sample="last", fn=lambda x: F.softmax(x, -1)),
    OpCase("softmax", randn(2, 3, 4), sample="dim1", fn=lambda x: F.softmax(x, 1)),
    OpCase("softmax", randn(2, 3, 4), sample="dim0", fn=lambda x: F.softmax(x, 0)),
    OpCase("softmax", randn(2, 3, 4), sample="dtype", fn=lambda x: F.softmax(x, 1, dtype=torch.float64)),
    OpCase("softmax", randn(2, 3, dtype=torch.float16), sample="float16", fn=lambda x: F.softmax(x, -1)),
    OpCase("log_softmax", randn(2, 3, 4), sample="last", fn=lambda x: F.log_softmax(x, -1)),
    OpCase("log_softmax", randn(2, 3, 4), sample="dim1", fn=lambda x: F.log_softmax(x, 1)),
    OpCase("log_softmax", randn(2, 3, 4, dtype=torch.float64), sample="float64_dim0",
           fn=lambda x: F.log_softmax(x, 0)),
]

# Softmax of a 0-d tensor (ONNX's Softmax needs rank >= 1): 1, or 0 for log_softmax (OpInfo softmax sample 6).
CASES += [
    OpCase("softmax", lambda k: (torch.tensor(0.3 + k),), sample="0d", dynamic=False, fn=lambda x: torch.softmax(x, 0)),
    OpCase("log_softmax", lambda k: (torch.tensor(0.3 + k),), sample="0d_float64", dynamic=False,
           fn=lambda x: torch.log_softmax(x, -1, dtype=torch.float64)),
]

# Scripted: TorchScript records no element type for a scripted Tensor, so the result's type comes from the converter
# (glu splits its input; the Split outputs must carry the input's type, or the model's output is of type 0).
class _Glu(torch.nn.Module):
    def forward(self, x):
        return F.glu(x)


CASES += [
    OpCase("glu", randn(2, 4, 6), sample="scripted", module=lambda: torch.jit.script(_Glu())),
]
