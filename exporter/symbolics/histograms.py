"""Histograms: histc (equal-width bins over a range, the counts in the input's type)."""

from __future__ import annotations

from exporter.dtypes import BFLOAT16, FLOAT, FLOAT16, INT64
from exporter.lowering.arithmetic import minimum_value, typed_scalar
from exporter.lowering.comparison import equal, less_equal, select
from exporter.lowering.core import cast, constant_value, is_value, reduce_op
from exporter.lowering.indexing import add_rows
from exporter.lowering.shape import reshape_to
from exporter.registry import symbolic, unsupported


@symbolic("aten::histc", since=9)
def histc(g, self, bins=100, min=0, max=0):
    """histc(self, bins, min, max): how many elements of ``self`` fall in each of ``bins`` equal-width bins over
    [min, max]; elements outside the range, and NaN, are not counted. When min == max the range is the data's own
    extremes, widened by 1 each way when those are equal too (PyTorch raises where they are NaN or infinite; the
    export has no way to). An element x falls in bin trunc((x - min) * bins / (max - min)), computed in the
    input's type in that order as PyTorch's CPU kernel does, with x == max in the last bin. The counts add up with
    ScatterND reduction 'add' from opset 16 and a one-hot MatMul below it (memory of elements x bins); Where
    (opset 9) drops the elements outside the range."""
    bins, low, high = (constant_value(a) for a in (bins, min, max))
    if any(is_value(a) for a in (bins, low, high)):
        raise unsupported(g.op_kind, g.opset, "histc's bins, min and max must be constants of the capture")
    x = reshape_to(g, g.value(self), [-1])
    low, high = _histc_range(g, x, float(low), float(high))
    inside = g.op("And", less_equal(g, low, x), less_equal(g, x, high))
    zero = typed_scalar(g, 0, x)
    position = g.op("Div", g.op("Mul", g.op("Sub", x, low), typed_scalar(g, int(bins), x)), g.op("Sub", high, low))
    position = minimum_value(g, g.op("Floor", select(g, inside, position, zero)), typed_scalar(g, int(bins) - 1, x))
    # Half-precision counts add up in float32: exact to 2**24, and ONNX Runtime has no float16 ScatterND 'add'.
    counting = FLOAT if g.dtype(x) in (FLOAT16, BFLOAT16) else g.dtype(x)
    counts = add_rows(g, g.const([[0.0]] * int(bins), counting), cast(g, position, INT64),
                      reshape_to(g, cast(g, inside, counting), [-1, 1]))
    return cast(g, reshape_to(g, counts, [int(bins)]), g.dtype(x))


def _histc_range(g, x, low: float, high: float):
    """histc's range as two scalars of ``x``'s type: the constants given, or the data's extremes when they are
    equal (widened by 1 each way when those are equal too)."""
    if low != high:
        return typed_scalar(g, low, x), typed_scalar(g, high, x)
    data_low, data_high = reduce_op(g, "ReduceMin", x, [0], False), reduce_op(g, "ReduceMax", x, [0], False)
    one, flat = typed_scalar(g, 1, x), equal(g, data_low, data_high)
    return (select(g, flat, g.op("Sub", data_low, one), data_low),
            select(g, flat, g.op("Add", data_high, one), data_high))
