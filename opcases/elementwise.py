"""Cases for element-wise arithmetic and math: dtypes, Python scalars, broadcasting, rounding modes."""

import torch

from opcases import OpCase


def randn(*shape, dtype=torch.float32):
    """Inputs whose first dim grows by one in the dynamic size variant."""
    return lambda k: (torch.randn(shape[0] + k, *shape[1:], dtype=dtype),)


def pair(shape_a, shape_b, dtype=torch.float32, low=None, high=None):
    """Two inputs; ``b`` grows with ``a`` when both have the same rank (else it broadcasts)."""
    def make(k):
        a = (shape_a[0] + k, *shape_a[1:])
        b = (shape_b[0] + k, *shape_b[1:]) if len(shape_b) == len(shape_a) else tuple(shape_b)
        if low is not None:
            return torch.randint(low, high, a, dtype=dtype), torch.randint(low, high, b, dtype=dtype)
        return torch.randn(a, dtype=dtype), torch.randn(b, dtype=dtype)
    return make


def ints(*shape, low=-20, high=20, dtype=torch.int64):
    return lambda k: (torch.randint(low, high, (shape[0] + k, *shape[1:]), dtype=dtype),)


def nonzero_ints(*shape, dtype=torch.int64):
    """Integer divisors with both signs and no zero."""
    def make(k):
        magnitude = torch.randint(1, 7, (shape[0] + k, *shape[1:]), dtype=dtype)
        sign = torch.randint(0, 2, magnitude.shape, dtype=dtype) * 2 - 1
        return (magnitude * sign,)
    return make


def ints_and_divisors(*shape, dtype=torch.int64):
    return lambda k: ints(*shape, dtype=dtype)(k) + nonzero_ints(*shape, dtype=dtype)(k)


def with_specials(*shape, dtype=torch.float32):
    def make(k):
        x = torch.randn(shape[0] + k, *shape[1:], dtype=dtype)
        flat = x.view(-1)
        flat[0], flat[1], flat[2] = float("nan"), float("inf"), float("-inf")
        return (x,)
    return make


CASES = [
    # add / sub / rsub
    OpCase("add", pair((2, 3), (2, 3)), fn=torch.add),
    OpCase("add", pair((2, 3, 4), (4,)), sample="broadcast", fn=torch.add),
    OpCase("add", pair((2, 3), (3,)), sample="alpha", fn=lambda a, b: torch.add(a, b, alpha=2.5)),
    OpCase("add", pair((3, 4), (4,), dtype=torch.int64, low=-50, high=50), sample="int64", fn=torch.add),
    OpCase("add", ints(3, 4, dtype=torch.int32), sample="int32_scalar", fn=lambda x: x + 7),
    OpCase("add", ints(3, 4, dtype=torch.int32), sample="int_plus_float_scalar", fn=lambda x: x + 2.5),
    OpCase("add", pair((2, 3), (2, 3), dtype=torch.float64), sample="float64", fn=torch.add),
    OpCase("add", pair((2, 3), (2, 3), dtype=torch.float16), sample="float16", fn=torch.add),
    OpCase("add", ints(3, 4, low=0, high=250, dtype=torch.uint8), sample="uint8_wraps", fn=lambda x: x + x),
    OpCase("add", ints(3, 4, low=-100, high=100, dtype=torch.int8), sample="int8_alpha",
           fn=lambda x: torch.add(x, x, alpha=3)),
    OpCase("add", lambda k: (torch.rand(2 + k, 3) > 0.5, torch.rand(2 + k, 3) > 0.5), sample="bool", fn=torch.add),
    OpCase("add", lambda k: (torch.randn(2 + k, 3), torch.randint(0, 5, (3,))), sample="float_plus_int_tensor",
           fn=torch.add),
    OpCase("sub", pair((2, 3), (2, 3)), fn=torch.sub),
    OpCase("sub", pair((2, 3), (3,)), sample="alpha", fn=lambda a, b: torch.sub(a, b, alpha=0.5)),
    OpCase("sub", pair((3, 4), (4,), dtype=torch.int32, low=-50, high=50), sample="int32", fn=torch.sub),
    OpCase("rsub", randn(2, 3), sample="scalar", fn=lambda x: 1.5 - x),
    OpCase("rsub", ints(2, 3), sample="int_alpha", fn=lambda x: torch.rsub(x, 3, alpha=2)),
    # mul
    OpCase("mul", pair((2, 3, 4), (3, 1)), fn=torch.mul),
    OpCase("mul", ints(3, 4, dtype=torch.int32), sample="int32_scalar", fn=lambda x: x * 3),
    OpCase("mul", ints(3, 4), sample="int_by_float_scalar", fn=lambda x: x * 0.5),
    OpCase("mul", ints(3, 4, low=0, high=255, dtype=torch.uint8), sample="uint8_wraps", fn=lambda x: x * 3),
    OpCase("mul", lambda k: (torch.rand(2 + k, 3) > 0.5, torch.rand(2 + k, 3) > 0.5), sample="bool", fn=torch.mul),
    OpCase("mul", pair((2, 3), (2, 3), dtype=torch.float64), sample="float64", fn=torch.mul),
    # div and friends
    OpCase("div", lambda k: (torch.randn(2 + k, 3), torch.rand(3) + 0.5), fn=torch.div),
    OpCase("div", ints_and_divisors(3, 4), sample="int_true", fn=torch.div),
    OpCase("div", ints(3, 4, dtype=torch.int32), sample="int_by_scalar", fn=lambda x: x / 3),
    OpCase("div", ints_and_divisors(3, 4), sample="int_floor", fn=lambda a, b: torch.div(a, b, rounding_mode="floor")),
    OpCase("div", ints_and_divisors(3, 4, dtype=torch.int32), sample="int_trunc",
           fn=lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    OpCase("div", lambda k: (torch.randn(3 + k, 4) * 5, torch.randn(4)), sample="float_floor",
           fn=lambda a, b: torch.div(a, b, rounding_mode="floor")),
    OpCase("div", lambda k: (torch.randn(3 + k, 4) * 5, torch.randn(4)), sample="float_trunc",
           fn=lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    OpCase("div", pair((2, 3), (2, 3), dtype=torch.float64), sample="float64", fn=torch.div),
    OpCase("true_divide", ints_and_divisors(3, 4), fn=torch.true_divide),
    OpCase("floor_divide", ints_and_divisors(3, 4), fn=torch.floor_divide),
    OpCase("floor_divide", lambda k: (torch.randn(3 + k, 4) * 5, torch.randn(4)), sample="float", fn=torch.floor_divide),
    OpCase("floor_divide", ints(3, 4), sample="int_scalar", fn=lambda x: x // -3),
    OpCase("remainder", ints_and_divisors(3, 4), fn=torch.remainder),
    OpCase("remainder", lambda k: (torch.randn(3 + k, 4) * 5, torch.randn(4)), sample="float", fn=torch.remainder),
    OpCase("remainder", ints(3, 4, dtype=torch.int32), sample="int_scalar", fn=lambda x: x % 3),
    OpCase("remainder", randn(3, 4), sample="float_scalar", fn=lambda x: torch.remainder(x, -1.5)),
    OpCase("fmod", ints_and_divisors(3, 4), fn=torch.fmod),
    OpCase("fmod", lambda k: (torch.randn(3 + k, 4) * 5, torch.randn(4)), sample="float", fn=torch.fmod),
    # pow
    OpCase("pow", randn(2, 3), sample="square_scalar", fn=lambda x: x ** 2),
    OpCase("pow", lambda k: (torch.rand(2 + k, 3) + 0.5, torch.randn(3)), sample="tensor_exponent", fn=torch.pow),
    OpCase("pow", ints(2, 3, low=-5, high=6), sample="int_base", fn=lambda x: x ** 3),
    OpCase("pow", lambda k: (torch.randint(-4, 5, (2 + k, 3)), torch.randint(0, 4, (3,))), sample="int_tensors",
           fn=torch.pow),
    OpCase("pow", randn(2, 3), sample="scalar_base", fn=lambda x: torch.pow(2.0, x)),
    OpCase("pow", ints(2, 3, low=0, high=10), sample="int_base_float_exponent", fn=lambda x: x ** 0.5),
    OpCase("pow", lambda k: (torch.rand(2 + k, 3, dtype=torch.float64) + 0.5,), sample="float64",
           fn=lambda x: x ** 1.7),
    OpCase("square", randn(2, 3), fn=torch.square),
    OpCase("square", ints(2, 3), sample="int", fn=torch.square),
    # sign, neg, abs
    OpCase("neg", randn(2, 3), fn=torch.neg),
    OpCase("neg", ints(2, 3, dtype=torch.int32), sample="int32", fn=torch.neg),
    OpCase("abs", randn(2, 3), fn=torch.abs),
    OpCase("abs", ints(2, 3), sample="int64", fn=torch.abs),
    OpCase("sign", lambda k: (torch.randint(-2, 3, (3 + k, 4)).float(),), fn=torch.sign),
    OpCase("sign", ints(3, 4), sample="int", fn=torch.sign),
    OpCase("sign", with_specials(3, 4), sample="nan_inf", fn=torch.sign),
    # selection
    OpCase("where", lambda k: (torch.rand(3 + k, 4) > 0.5, torch.randn(3 + k, 4), torch.randn(4)), min_opset=9,
           fn=torch.where),
    OpCase("where", lambda k: (torch.rand(3 + k, 4) > 0.5, torch.randn(3 + k, 4)), sample="scalar_other", min_opset=9,
           fn=lambda c, x: torch.where(c, x, 0.0)),
    OpCase("where", lambda k: (torch.rand(3 + k, 4) > 0.5, torch.randint(-9, 9, (3 + k, 4))), sample="int_scalar_self",
           fn=lambda c, x: torch.where(c, 5, x)),
    OpCase("where", lambda k: (torch.rand(3 + k, 4) > 0.5, torch.randint(-9, 9, (3 + k, 4), dtype=torch.int32),
                               torch.randint(-9, 9, (4,), dtype=torch.int32)), sample="int32", fn=torch.where),
    OpCase("where", lambda k: (torch.rand(3 + k, 4) > 0.5, torch.randint(-9, 9, (3 + k, 4))), sample="int_float_scalar",
           min_opset=9, fn=lambda c, x: torch.where(c, x, 0.5)),
    OpCase("masked_fill", lambda k: (torch.randn(3 + k, 4), torch.rand(3 + k, 4) > 0.5), min_opset=9,
           fn=lambda x, m: x.masked_fill(m, float("-inf"))),
    OpCase("masked_fill", lambda k: (torch.randint(-9, 9, (3 + k, 4)), torch.rand(4) > 0.5), sample="int_broadcast",
           fn=lambda x, m: x.masked_fill(m, 7)),
    OpCase("isnan", with_specials(3, 4), fn=torch.isnan),
    OpCase("isnan", ints(3, 4), sample="int", fn=torch.isnan),
    OpCase("isinf", with_specials(3, 4), fn=torch.isinf),
    OpCase("isinf", with_specials(3, 4, dtype=torch.float64), sample="float64", fn=torch.isinf),
    OpCase("isfinite", with_specials(3, 4), fn=torch.isfinite),
    OpCase("isfinite", ints(3, 4), sample="int", fn=torch.isfinite),
    OpCase("nan_to_num", with_specials(3, 4), fn=torch.nan_to_num, min_opset=9),
    OpCase("nan_to_num", with_specials(3, 4), sample="values", min_opset=9,
           fn=lambda x: torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0)),
    # fused
    OpCase("lerp", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4)), sample="scalar_weight",
           fn=lambda a, b: torch.lerp(a, b, 0.3)),
    OpCase("lerp", lambda k: (torch.randn(3 + k, 4), torch.randn(4), torch.rand(3 + k, 4)), sample="tensor_weight",
           fn=torch.lerp),
    OpCase("addcmul", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4), torch.randn(4)),
           fn=lambda a, b, c: torch.addcmul(a, b, c, value=0.5)),
    OpCase("addcdiv", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4), torch.rand(4) + 0.5),
           fn=lambda a, b, c: torch.addcdiv(a, b, c, value=2.0)),
    OpCase("hypot", pair((3, 4), (4,)), fn=torch.hypot),
    OpCase("logaddexp", lambda k: (torch.randn(3 + k, 4) * 30, torch.randn(4) * 30), fn=torch.logaddexp, min_opset=9),
    # Equal infinities: their difference is NaN, the result is that infinity (OpInfo masked.logaddexp samples).
    OpCase("logaddexp", lambda k: (torch.tensor([float("-inf"), float("inf"), 1.0] + [2.0] * k),
                                   torch.tensor([float("-inf"), float("inf"), float("-inf")] + [0.5] * k)),
           sample="infinities", fn=torch.logaddexp, min_opset=9),
    OpCase("xlogy", lambda k: (torch.tensor([0.0, 1.0, 2.0, 0.0] + [3.0] * k), torch.tensor([0.0, 2.0, 0.5, float("nan")] + [1.5] * k)),
           fn=torch.xlogy, min_opset=9),
]

CASES += [
    # Signed shifts are Mul and a floored Div; unsigned ones need BitShift (opset 11).
    OpCase("__rshift__", lambda k: (torch.arange(-12, 12 + 2 * k).reshape(-1, 2),), sample="negative_values",
           fn=lambda x: (x >> 1, x >> torch.tensor([1, 2]))),
    OpCase("__lshift__", lambda k: (torch.arange(-6, 6 + 2 * k, dtype=torch.int32).reshape(-1, 2),
                                    torch.tensor([1, 3], dtype=torch.int32)), fn=lambda x, s: (x << 3, x << s)),
    OpCase("__rshift__", lambda k: (torch.arange(24 + 2 * k, dtype=torch.uint8).reshape(-1, 2),), sample="uint8",
           fn=lambda x: (x >> 1, x << 3), min_opset=11),
    OpCase("logit", lambda k: (torch.rand(3 + k, 4) * 1.2 - 0.1,), fn=lambda x: torch.logit(x, 1e-6)),
    OpCase("logit", lambda k: (torch.rand(3 + k, 4),), sample="no_eps", fn=torch.logit),
]

# Integer powers of 0 with negative exponents are 0 in PyTorch (ONNX's Pow gives inf, INT64_MIN once cast back):
# OpInfo __rpow__ int64 sample 4.
CASES += [
    OpCase("pow", lambda k: (torch.tensor([[0, 2, -1, 1, 0, 3]] * (2 + k)), torch.tensor([-5, -2, -3, -4, 0, 2])),
           sample="int64_zero_base_negative_exponent", fn=lambda b, e: torch.pow(b, e)),
]

# float16 addcmul/addcdiv compute in float32 and round once, as PyTorch's kernels do (rounding value=3.14 and each
# step to float16 was 23 float16 ulps off after cancellation: OpInfo addcmul float16 sample 3).
CASES += [
    OpCase("addcmul", lambda k: (torch.randn(5 + k, 5).half() * 9, torch.randn(5 + k, 1).half() * 9,
                                 torch.randn(1, 5).half() * 9), sample="float16",
           fn=lambda s, a, b: torch.addcmul(s, a, b, value=3.14)),
    OpCase("addcdiv", lambda k: (torch.randn(1).half() * 9, torch.randn(5 + k, 5, 1).half() * 9,
                                 torch.randn(1, 5).half() + 3), sample="float16",
           fn=lambda s, a, b: torch.addcdiv(s, a, b, value=3.14)),
]


# IsInf-20 and IsNaN (IsNaN-20's ONNX Runtime kernel) on float16 and bfloat16: IsInf takes them only from opset 20,
# so below it they are tested in float (exact), as is a bfloat16 IsNaN below 20 (IsNaN-9 takes none, and ONNX Runtime
# has no bfloat16 IsNaN-13: a declared workaround). bfloat16 tensors need Cast-13: refused below 13, naming 13.
class _InBfloat16(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x.bfloat16())


CASES += [
    OpCase("isinf", with_specials(3, 4, dtype=torch.float16), sample="float16", fn=torch.isinf),
    OpCase("isnan", with_specials(3, 4, dtype=torch.float16), sample="float16", fn=torch.isnan),
    OpCase("isinf", with_specials(3, 4), sample="bfloat16", min_opset=13, module=lambda: _InBfloat16(torch.isinf)),
    OpCase("isnan", with_specials(3, 4), sample="bfloat16", min_opset=13, module=lambda: _InBfloat16(torch.isnan)),
]
