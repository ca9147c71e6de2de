"""Cases for comparisons, logical and bitwise ops: ties, NaN, ints vs floats, Python scalars, broadcasting."""

import torch

from opcases import OpCase

BITWISE_INT = 18  # ONNX BitwiseAnd/Or/Xor arrive at opset 18


def tied(shape_a, shape_b, dtype=torch.float32):
    """Small integer-valued operands so that equal pairs occur; ``b`` grows with ``a`` at equal rank, else broadcasts."""
    def make(k):
        a = torch.randint(-3, 4, (shape_a[0] + k, *shape_a[1:])).to(dtype)
        b = (shape_b[0] + k, *shape_b[1:]) if len(shape_b) == len(shape_a) else shape_b
        return a, torch.randint(-3, 4, b).to(dtype)
    return make


def with_nan(k):
    a = torch.randint(-2, 3, (3 + k, 4)).float()
    b = torch.randint(-2, 3, (4,)).float()
    a[0, 0] = a[1, 1] = float("nan")
    b[1] = float("nan")
    a[2, 2], b[2] = float("inf"), float("inf")
    return a, b


def masks(k):
    return torch.rand(3 + k, 4) > 0.5, torch.rand(4) > 0.5


def ints(dtype=torch.int64, low=-50, high=50):
    return lambda k: (torch.randint(low, high, (3 + k, 4), dtype=dtype), torch.randint(low, high, (4,), dtype=dtype))


CASES = []
for _name, _fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le), ("gt", torch.gt),
                   ("ge", torch.ge)]:
    CASES += [
        OpCase(_name, tied((3, 4), (4,)), fn=_fn),
        OpCase(_name, with_nan, sample="nan_inf", fn=_fn),
        OpCase(_name, tied((3, 4), (4,), torch.int64), sample="int64", fn=_fn),
        OpCase(_name, tied((3, 4), (3, 4), torch.int32), sample="int32", fn=_fn),
        OpCase(_name, tied((3, 4), (4,), torch.float64), sample="float64", fn=_fn),
        OpCase(_name, lambda k: (torch.randint(-3, 4, (3 + k, 4)),), sample="int_vs_float_scalar",
               fn=lambda x, f=_fn: f(x, 0.5)),
        OpCase(_name, lambda k: (torch.randint(-3, 4, (3 + k, 4)).float(),), sample="scalar", fn=lambda x, f=_fn: f(x, 1)),
        OpCase(_name, masks, sample="bool", fn=_fn),
        OpCase(_name, lambda k: (torch.randint(-3, 4, (3 + k, 4), dtype=torch.int8), torch.randint(-3, 4, (4,))),
               sample="int8_vs_int64", fn=_fn),
    ]

CASES += [
    OpCase("lt", ints(low=-2**62, high=2**62), sample="int64_large", fn=torch.lt),
    OpCase("eq", lambda k: (torch.randint(0, 3, (3 + k, 4), dtype=torch.uint8),), sample="uint8_scalar",
           fn=lambda x: x == 1),
    OpCase("logical_and", masks, fn=torch.logical_and),
    OpCase("logical_and", lambda k: (torch.randint(-1, 2, (3 + k, 4)).float(), torch.randint(0, 2, (4,))),
           sample="numbers", fn=torch.logical_and),
    OpCase("logical_or", masks, fn=torch.logical_or),
    OpCase("logical_or", lambda k: (torch.randint(-1, 2, (3 + k, 4)), torch.rand(3 + k, 4) > 0.5), sample="int_bool",
           fn=torch.logical_or),
    OpCase("logical_xor", masks, fn=torch.logical_xor),
    OpCase("logical_not", lambda k: (torch.randint(-1, 2, (3 + k, 4)).float(),), fn=torch.logical_not),
    OpCase("logical_not", lambda k: masks(k)[:1], sample="bool", fn=torch.logical_not),
    OpCase("bitwise_and", masks, fn=torch.bitwise_and),
    OpCase("bitwise_or", masks, fn=torch.bitwise_or),
    OpCase("bitwise_xor", masks, fn=torch.bitwise_xor),
    OpCase("__and__", masks, fn=lambda a, b: a & b),
    OpCase("__or__", masks, fn=lambda a, b: a | b),
    OpCase("__xor__", masks, fn=lambda a, b: a ^ b),
    # ``a & True`` itself fails in PyTorch's tracer (no aten::__and__ for a bool scalar); a 0-d tensor traces.
    OpCase("__and__", lambda k: (torch.rand(3 + k, 4) > 0.5,), sample="0d_tensor", fn=lambda a: a & torch.tensor(True)),
    OpCase("__invert__", lambda k: masks(k)[:1], fn=lambda a: ~a),
    OpCase("bitwise_not", lambda k: (torch.randint(-100, 100, (3 + k, 4)),), sample="int64", fn=torch.bitwise_not),
    OpCase("bitwise_not", lambda k: (torch.randint(0, 256, (3 + k, 4), dtype=torch.uint8),), sample="uint8",
           fn=torch.bitwise_not),
    OpCase("bitwise_not", lambda k: (torch.randint(-100, 100, (3 + k, 4), dtype=torch.int32),), sample="int32",
           fn=lambda x: ~x),
    OpCase("bitwise_and", ints(), sample="int64", fn=torch.bitwise_and, min_opset=BITWISE_INT),
    OpCase("bitwise_or", ints(torch.int32), sample="int32", fn=torch.bitwise_or, min_opset=BITWISE_INT),
    OpCase("__xor__", ints(), sample="int64", fn=lambda a, b: a ^ b, min_opset=BITWISE_INT),
    OpCase("bitwise_xor", ints(torch.uint8, 0, 256), sample="uint8", fn=torch.bitwise_xor, min_opset=BITWISE_INT),
    OpCase("bitwise_and", ints(torch.int8), sample="int8_scalar", fn=lambda a, b: (a & 6) | b, min_opset=BITWISE_INT),
    OpCase("bitwise_or", lambda k: (ints(torch.int16)(k)[0], torch.rand(4) > 0.5), sample="int16_bool",
           fn=torch.bitwise_or, min_opset=BITWISE_INT),
]
