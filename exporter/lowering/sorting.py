"""TopK in the form the target opset allows (k as an input from opset 10, ``largest``/``sorted`` from 11)."""

from __future__ import annotations

from exporter import dtypes
from exporter.dtypes import DOUBLE, INT64
from exporter.lowering.core import cast, constant_value, is_value, slice_op, to_int64_list_value
from exporter.registry import unsupported


# -- topk and the sorts built on it ----------------------------------------------------------------------------
def top_k(g, x, k, axis, largest=True):
    """(values, int64 indices) of the ``k`` largest (or smallest) entries along ``axis``, sorted."""
    x = g.value(x)
    if g.opset < 11 and not dtypes.is_float(x.dtype):
        if x.dtype == INT64:
            raise unsupported(g.op_kind, g.opset, "int64 topk/sort needs opset >= 11")
        values, indices = top_k(g, cast(g, x, DOUBLE), k, axis, largest)
        return cast(g, values, x.dtype), indices
    if g.opset < 11 and not largest:
        values, indices = top_k(g, g.op("Neg", x), k, axis, True)
        return g.op("Neg", values), indices
    if g.opset < 10:
        if is_value(k) and not _is_constant_value(k):
            raise unsupported(g.op_kind, g.opset, "a k computed at run time needs opset >= 10")
        if int(constant_value(k)) == 0:
            # TopK-1 requires k >= 1: the k = 0 result (e.g. sorting an empty axis) is an empty slice.
            values = slice_op(g, x, [axis], [0], [0])
            values.dtype = x.dtype
            return values, cast(g, values, INT64)
        values, indices = g.op("TopK", x, k_i=int(constant_value(k)), axis_i=axis, outputs=2)
    else:
        attrs = {} if g.opset < 11 else {"largest_i": int(largest), "sorted_i": 1}
        values, indices = g.op("TopK", x, to_int64_list_value(g, [k]), axis_i=axis, outputs=2, **attrs)
    values.dtype, indices.dtype = x.dtype, INT64
    return values, indices


def _is_constant_value(x) -> bool:
    return x.const is not None and not x.is_param
