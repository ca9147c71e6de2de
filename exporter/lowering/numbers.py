"""Number building blocks for scripted code, whose ``int``, ``float`` and ``bool`` are 0-d int64, double and bool
tensors: ``extremum`` is Min/Max on the numbers' own type from opset 12 and through double before it (Min-6/Max-8
take floating types only)."""

from __future__ import annotations

from exporter import ir
from exporter.dtypes import DOUBLE, FLOAT
from exporter.lowering.core import cast
from exporter.lowering.runtime import MIN_MAX_6_DOUBLES, applies


def extremum(g, op_type: str, items: list, dtype: int) -> ir.Value:
    """Min/Max (``op_type``) of numbers of type ``dtype``: on that type from opset 12, before it through double
    for anything but float and double (exact below 2**53)."""
    compute = dtype if g.opset >= 12 or dtype in (FLOAT, DOUBLE) else DOUBLE
    if g.opset < 8 and compute == DOUBLE and applies(g, MIN_MAX_6_DOUBLES):
        compute = FLOAT  # exact below 2**24
    result = g.op(op_type, *[cast(g, x, compute) for x in items])
    return cast(g, result, dtype)
