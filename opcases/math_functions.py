"""Cases of ``exporter/symbolics/math_functions.py``: element-wise math functions (roots, exponentials, logarithms,
trigonometric and hyperbolic functions, ...), moved here from ``elementwise`` with their family."""

from __future__ import annotations

import torch

from opcases import OpCase
from opcases.elementwise import ints, nonzero_ints, pair, randn


def positive(*shape, dtype=torch.float32, offset=0.1):
    return lambda k: (torch.rand(shape[0] + k, *shape[1:], dtype=dtype) * 4 + offset,)


def uniform(*shape, low=-0.9, high=0.9, dtype=torch.float32):
    return lambda k: (torch.rand(shape[0] + k, *shape[1:], dtype=dtype) * (high - low) + low,)


CASES = [
    # unary math
    OpCase("reciprocal", positive(2, 3), fn=torch.reciprocal),
    OpCase("reciprocal", nonzero_ints(2, 3), sample="int", fn=torch.reciprocal),
    OpCase("sqrt", positive(2, 3), fn=torch.sqrt),
    OpCase("sqrt", ints(2, 3, low=0, high=50), sample="int", fn=torch.sqrt),
    OpCase("sqrt", positive(2, 3, dtype=torch.float64), sample="float64", fn=torch.sqrt),
    OpCase("sqrt", randn(3, 4), sample="negative_is_nan", fn=torch.sqrt),
    OpCase("rsqrt", positive(2, 3), fn=torch.rsqrt),
    OpCase("exp", randn(2, 3), fn=torch.exp),
    OpCase("exp", randn(2, 3, dtype=torch.float16), sample="float16", fn=torch.exp),
    OpCase("expm1", randn(2, 3), fn=torch.expm1),
    OpCase("log", positive(2, 3), fn=torch.log),
    OpCase("log", ints(2, 3, low=1, high=100), sample="int", fn=torch.log),
    OpCase("log2", positive(2, 3), fn=torch.log2),
    OpCase("log10", positive(2, 3), fn=torch.log10),
    OpCase("log1p", positive(2, 3, offset=-0.5), fn=torch.log1p),
    OpCase("sin", randn(2, 3), fn=torch.sin),
    OpCase("cos", randn(2, 3), fn=torch.cos),
    OpCase("cos", randn(2, 3, dtype=torch.float64), sample="float64", fn=torch.cos),
    OpCase("tan", uniform(2, 3, low=-1.2, high=1.2), fn=torch.tan),
    OpCase("tan", uniform(2, 3, low=-1.2, high=1.2, dtype=torch.float64), sample="float64", fn=torch.tan),
    OpCase("asin", uniform(2, 3), fn=torch.asin),
    # ONNX Runtime has no double Asin/Erf: computed in float32, which still meets the double tolerance here.
    OpCase("asin", uniform(2, 3, dtype=torch.float64), sample="float64", fn=torch.asin),
    OpCase("acos", uniform(2, 3), fn=torch.acos),
    OpCase("atan", randn(2, 3), fn=torch.atan),
    OpCase("atan2", pair((3, 4), (4,)), fn=torch.atan2, min_opset=9),
    OpCase("atan2", lambda k: (torch.tensor([0.0, 1.0, -1.0, 0.0, 2.0] + [0.5] * k), torch.tensor([0.0, 0.0, 0.0, -1.0, -3.0] + [-0.5] * k)),
           sample="axes", fn=torch.atan2, min_opset=9),
    OpCase("sinh", randn(2, 3), fn=torch.sinh),
    OpCase("sinh", randn(2, 3, dtype=torch.float64), sample="float64", fn=torch.sinh),
    OpCase("cosh", randn(2, 3), fn=torch.cosh),
    OpCase("asinh", lambda k: (torch.randn(2 + k, 3) * 5,), fn=torch.asinh),
    OpCase("asinh", lambda k: (torch.randn(2 + k, 3, dtype=torch.float64) * 5,), sample="float64", fn=torch.asinh),
    OpCase("acosh", positive(2, 3, offset=1.0), fn=torch.acosh),
    OpCase("atanh", uniform(2, 3), fn=torch.atanh),
    OpCase("atanh", uniform(2, 3, dtype=torch.float64), sample="float64", fn=torch.atanh),
    OpCase("erf", randn(2, 3), fn=torch.erf, min_opset=9),
    OpCase("erf", randn(2, 3, dtype=torch.float64), sample="float64", fn=torch.erf, min_opset=9),
]
