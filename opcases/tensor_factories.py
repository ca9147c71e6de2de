"""Cases for tensor factories: zeros/ones/full/empty (+ _like, new_*), arange/range, linspace, eye, tensor().

A factory only reaches its symbolic when a size or bound depends on an input (dynamic exports) or for ``empty``;
with constant arguments the converter folds it. ``empty`` contents are undefined, so cases fill or shape-check them.
"""

import torch

from opcases import OPSETS, OpCase, random_tensor


class _Range(torch.nn.Module):
    """Scripted, because tracing records torch.range's Python-number bounds as constants."""

    def forward(self, x):
        return torch.range(1, x.size(0), 2)


class _DimArange(torch.nn.Module):
    """Scripted: torch._dim_arange(x, 0) is the range a traced ``arange(x.size(0))`` becomes in older exporters."""

    def forward(self, x):
        return x[:, 0] + torch._dim_arange(x, 0)


CASES = [
    OpCase("zeros", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x + torch.zeros(x.size(0), 3)),
    OpCase("zeros", lambda k: (random_tensor(2 + k, 3),), sample="int64", fn=lambda x: torch.zeros(x.shape, dtype=torch.int64)),
    OpCase("ones", lambda k: (random_tensor(2, 3 + k),), fn=lambda x: torch.ones(x.size(1), 2, dtype=torch.float64)),
    OpCase("ones", lambda k: (random_tensor(2, 3 + k),), sample="bool", fn=lambda x: torch.ones(x.size(1), dtype=torch.bool)),
    OpCase("full", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch.full((x.size(0), 2), 1.5)),
    OpCase("full", lambda k: (random_tensor(2 + k, 3),), sample="int_fill", fn=lambda x: torch.full((x.size(0),), 7)),
    OpCase("full", lambda k: (random_tensor(2 + k, 3),), sample="dtype_arg", fn=lambda x: torch.full((2, x.size(0)), 3, dtype=torch.int32)),
    OpCase("full", lambda k: (random_tensor(2 + k, 3),), sample="bool_dtype", fn=lambda x: torch.full(x.shape, 1, dtype=torch.bool)),
    OpCase("empty", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch.empty(x.size(0), 4).fill_(2.0)),
    OpCase("zeros_like", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch.zeros_like(x)),
    OpCase("zeros_like", lambda k: (random_tensor(2 + k, 3, dtype=torch.int32),), sample="dtype", fn=lambda x: torch.zeros_like(x, dtype=torch.float64)),
    OpCase("ones_like", lambda k: (random_tensor(2 + k, 3, dtype=torch.int64),), fn=lambda x: torch.ones_like(x)),
    OpCase("full_like", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch.full_like(x, -2.5)),
    OpCase("full_like", lambda k: (random_tensor(2 + k, 3, dtype=torch.bool),), sample="bool", fn=lambda x: torch.full_like(x, 0)),
    OpCase("empty_like", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch.empty_like(x).fill_(1.0) * 0 + torch.empty_like(x).zero_()),
    OpCase("new_zeros", lambda k: (random_tensor(2 + k, 3, dtype=torch.float64),), fn=lambda x: x.new_zeros((x.size(0), 2))),
    OpCase("new_ones", lambda k: (random_tensor(2 + k, 3, dtype=torch.int32),), fn=lambda x: x.new_ones(x.shape)),
    OpCase("new_full", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.new_full((3, x.size(0)), 4.0)),
    OpCase("new_empty", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.new_empty((x.size(0),)).fill_(3.0)),
    OpCase("arange", lambda k: (random_tensor(4 + k, 2),), fn=lambda x: torch.arange(x.size(0)),
           dynamic_min_opset=9),
    OpCase("arange", lambda k: (random_tensor(4 + k, 2),), sample="start_step", fn=lambda x: torch.arange(1, x.size(0) * 2, 3),
           dynamic_min_opset=9),
    OpCase("arange", lambda k: (random_tensor(4 + k, 2),), sample="float", fn=lambda x: torch.arange(0.5, x.size(0), 0.25),
           dynamic_min_opset=9),
    OpCase("arange", lambda k: (random_tensor(4 + k, 2),), sample="dtype", fn=lambda x: torch.arange(x.size(0), dtype=torch.float32),
           dynamic_min_opset=9),
    OpCase("arange", lambda k: (random_tensor(4 + k, 2),), sample="negative_step", fn=lambda x: torch.arange(x.size(0), -2, -1),
           dynamic_min_opset=9),
    OpCase("range", lambda k: (random_tensor(4 + k, 2),), module=lambda: torch.jit.script(_Range()),
           dynamic_min_opset=9),
    OpCase("linspace", lambda k: (random_tensor(4 + k, 2),), fn=lambda x: torch.linspace(0, x.size(0), 7)),
    OpCase("linspace", lambda k: (random_tensor(4 + k, 2),), sample="descending", fn=lambda x: torch.linspace(x.size(0), -1, 4, dtype=torch.float64)),
    OpCase("eye", lambda k: (random_tensor(3 + k, 2),), fn=lambda x: torch.eye(x.size(0)), dynamic_min_opset=9),
    OpCase("eye", lambda k: (random_tensor(3 + k, 2),), sample="rectangular_int", fn=lambda x: torch.eye(2, x.size(0), dtype=torch.int64),
           dynamic_min_opset=9),
    OpCase("logspace", lambda k: (random_tensor(3 + k, 2),), fn=lambda x: x[:1, :1] + torch.logspace(-1.5, 2.0, 5, base=3.0)),
    OpCase("_dim_arange", lambda k: (random_tensor(3 + k, 2),), module=lambda: torch.jit.script(_DimArange()),
           dynamic_min_opset=9),
]

# Integer results space the bounds truncated to integers (a start of 4.3 counts as 4), and logspace's integer
# exponents too, except with a single step (OpInfo linspace/logspace.tensor_overload int64 samples).
CASES += [
    OpCase("linspace", lambda k: (torch.tensor(4.3 + k), torch.tensor(-3)), sample="int64_float_start", dynamic=False,
           fn=lambda s, e: torch.linspace(s, e, 50, dtype=torch.int64)),
    OpCase("logspace", lambda k: (torch.tensor(4.3 + k), torch.tensor(-1.9)), sample="int64_float_bounds",
           dynamic=False, fn=lambda s, e: torch.logspace(s, e, 5, base=2.0, dtype=torch.int64)),
    OpCase("logspace", lambda k: (torch.tensor(4.3 + k), torch.tensor(-1.9)), sample="int64_one_step", dynamic=False,
           fn=lambda s, e: torch.logspace(s, e, 1, base=3.0, dtype=torch.int64)),
]

# The bounds are converted to the result type first (a float32 start of 4.3 is 4.3008 as float16), and a float16
# result is computed in float16 step by step, as torch does: onnx.reference then matches PyTorch exactly, while ONNX
# Runtime's CPU provider, which runs float16 Sub/Div/Mul/Add through float32 without rounding in between, stays
# 0.0024 off (a runtime divergence; the OpInfo suite's arbiter rules the same).
_FLOAT16_STEPS = "ONNX Runtime computes the float16 chain in float32 (onnx.reference agrees with PyTorch exactly)"
CASES += [
    OpCase("linspace", lambda k: (torch.tensor(4.3 + k), torch.tensor(-3)), sample="float16_float32_start",
           dynamic=False, fn=lambda s, e: torch.linspace(s, e, 50, dtype=torch.float16),
           known_failures={opset: _FLOAT16_STEPS for opset in OPSETS}),
]

def _fed_both_variants(inputs, fn):
    """OpCase(inputs=, fn=) with a leading tensor whose length differs between the size variants, so that the dynamic export
    also runs on variant 1's scalar arguments (they are graph inputs; the harness feeds variant 1 to dynamic exports)."""
    return dict(inputs=lambda k: (torch.zeros(1 + k), *inputs(k)), fn=lambda x, *args: fn(*args) + 0 * x.size(0))


# Run-time float bounds with an integer result, as torch's CPU kernels read them: an int64 arange truncates every
# bound first (arange(8.5) has 8 elements, a step of 1.5 counts as 1), any other integer arange counts from the bounds
# as given and steps by the truncated ones (arange(8.5, dtype=int32) has 9 elements), torch.range truncates all.
class _RangeInt64(torch.nn.Module):
    def forward(self, a, b, c):
        return torch.range(a, b, c, dtype=torch.int64)


def _float_bounds(k):
    return torch.tensor(0.5 - k), torch.tensor(8.5 + k), torch.tensor(1.5)


CASES += [
    OpCase("arange", **_fed_both_variants(lambda k: (torch.tensor(8.5 + k),), lambda e: torch.arange(e, dtype=torch.int64)),
           sample="float_end_int64", min_opset=9),
    OpCase("arange", **_fed_both_variants(_float_bounds, lambda a, b, c: torch.arange(a, b, c, dtype=torch.int64)),
           sample="float_bounds_int64", min_opset=9),
    OpCase("arange", **_fed_both_variants(_float_bounds, lambda a, b, c: torch.arange(a, b, c, dtype=torch.int32)),
           sample="float_bounds_int32", min_opset=9),
    OpCase("arange", **_fed_both_variants(_float_bounds, lambda a, b, c: torch.arange(a, b, c, dtype=torch.float64)),
           sample="float_bounds_float64", min_opset=9),
    OpCase("range", lambda k: (torch.tensor(0.2), torch.tensor(2.5 + k), torch.tensor(1.5)), sample="float_bounds_int64",
           min_opset=9, module=lambda: torch.jit.script(_RangeInt64())),
]

# linspace with a step count that is a graph input (a tensor): positions from Range/NonZero (opset 9), halves picked
# with Where; a single step gives start.
def _linspace_step_inputs(k):
    return torch.tensor(3.0 - 4 * k), torch.tensor(10.0), torch.tensor([5, 1][k], dtype=torch.int32)


CASES += [
    OpCase("linspace", **_fed_both_variants(_linspace_step_inputs, lambda s, e, n: torch.linspace(s, e, n)),
           sample="run_time_steps", min_opset=9),
    OpCase("linspace", **_fed_both_variants(lambda k: (torch.tensor(-1.5 + k), torch.tensor(8.7), torch.tensor(7 + 94 * k)),
                                           lambda s, e, n: torch.linspace(s, e, n, dtype=torch.int64)),
           sample="run_time_steps_int64", min_opset=9),
]

# hann_window of a length that is a graph input (an int argument): 0.5 - 0.5 * cos(2 pi n / d), positions from
# Range/NonZero (opset 9); periodic (d = length) and symmetric (d = length - 1).
CASES += [
    OpCase("hann_window", lambda k: (torch.randn(100 + k), 100 + k), min_opset=9,
           fn=lambda x, n: x + torch.nn.functional.relu(torch.hann_window(n))),
    OpCase("hann_window", lambda k: (torch.randn(7 + k, dtype=torch.float64), 7 + k), sample="symmetric_float64",
           min_opset=9, fn=lambda x, n: x + torch.hann_window(n, False, dtype=torch.float64)),
]
