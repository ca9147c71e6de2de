"""Cases for dtype conversions: every aten::to overload, type_as, _to_copy, the tensor-method shorthands,
scripted code (where TorchScript records no result type) and the dtypes PyTorch's promotion gives scalars."""

import torch

from opcases import OpCase


def floats(k):
    return (torch.randn(3 + k, 4) * 10,)


def ints(k):
    return (torch.randint(-100, 100, (3 + k, 4)),)


class ScriptedTo(torch.nn.Module):
    def forward(self, x, y):
        return x.to(torch.float64) + 1, x.to(y), x.long(), y.type_as(x)


def scripted():
    return torch.jit.script(ScriptedTo())


CASES = [
    OpCase("to", floats, sample="dtype_int32", fn=lambda x: x.to(torch.int32)),
    OpCase("to", floats, sample="device_dtype", fn=lambda x: x.to("cpu", torch.float64)),
    OpCase("to", lambda k: floats(k) + ints(k), sample="other", fn=lambda x, y: x.to(y)),
    OpCase("to", floats, sample="device_only", fn=lambda x: x.to("cpu") * 2),
    OpCase("to", floats, sample="keyword_dtype", fn=lambda x: x.to(dtype=torch.float16, copy=True)),
    OpCase("to", lambda k: floats(k) + ints(k), sample="scripted", module=scripted),
    OpCase("type_as", lambda k: ints(k) + floats(k), fn=lambda x, y: x.type_as(y)),
    OpCase("_to_copy", floats, fn=lambda x: torch.ops.aten._to_copy(x, dtype=torch.int64)),
    OpCase("float", ints, fn=lambda x: x.float()),
    OpCase("long", floats, sample="truncates", fn=lambda x: x.long()),
    OpCase("int", floats, fn=lambda x: x.int()),
    OpCase("bool", lambda k: (torch.randint(-1, 2, (3 + k, 4)).float(),), fn=lambda x: x.bool()),
    OpCase("bool", lambda k: (torch.randint(0, 2, (3 + k, 4)),), sample="to_float", fn=lambda x: x.bool().float()),
    OpCase("half", floats, fn=lambda x: x.half()),
    OpCase("double", floats, fn=lambda x: x.double()),
    OpCase("double", lambda k: (torch.randn(3 + k, 4, dtype=torch.float16),), sample="from_half",
           fn=lambda x: x.double()),
    OpCase("byte", lambda k: (torch.randint(0, 200, (3 + k, 4)),), fn=lambda x: x.byte()),
    # implicit types: what PyTorch's promotion gives to mixed operands
    OpCase("promote", ints, sample="int_div_int", fn=lambda x: x / (x.abs() + 1)),
    OpCase("promote", ints, sample="int_plus_float_scalar", fn=lambda x: x + 2.5),
    OpCase("promote", lambda k: (torch.randint(-9, 9, (3 + k, 4), dtype=torch.int32),), sample="int32_times_int_scalar",
           fn=lambda x: x * 3),
    OpCase("promote", lambda k: (torch.randn(3 + k, 4, dtype=torch.float16),), sample="half_plus_float_scalar",
           fn=lambda x: x + 0.1),
    OpCase("promote", lambda k: (torch.randn(3 + k, 4, dtype=torch.float64),), sample="double_plus_float_scalar",
           fn=lambda x: x + 0.1),
    OpCase("promote", lambda k: (torch.randn(3 + k, 4, dtype=torch.float16), torch.randn(4)), sample="half_plus_float",
           fn=lambda x, y: x + y),
    OpCase("promote", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="bool_plus_int_scalar", fn=lambda x: x + 2),
    OpCase("promote", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="bool_times_float_scalar", fn=lambda x: x * 1.5),
    OpCase("promote", lambda k: (torch.randint(-9, 9, (3 + k, 4), dtype=torch.int32), torch.randint(-9, 9, (4,))),
           sample="int32_plus_int64", fn=lambda x, y: x + y),
    OpCase("promote", lambda k: (torch.randint(-9, 9, (3 + k, 4)), torch.tensor(2.5, dtype=torch.float64)),
           sample="int_plus_0d_double", fn=lambda x, y: x + y),
]
