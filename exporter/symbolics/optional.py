"""``x is None`` and the refinement of ``Optional[Tensor]`` values (see exporter/lowering/optional.py).

A graph value that is a tensor is never None, so ``x is None`` on it is decided at export time; on an optional
(an ``Optional[Tensor]`` input, or a value that a branch or an iteration may set to None) it is
``OptionalHasElement``, computed at run time.
"""

from __future__ import annotations

from exporter.lowering import optional
from exporter.lowering.core import is_value
from exporter.registry import symbolic


@symbolic("aten::__is__", "aten::__isnot__")
def is_(g, self, other):
    """``x is None`` / ``x is not None``: OptionalHasElement on an optional, else decided at export time (a
    tensor value is never None; two Python values compare as Python does)."""
    negate = g.op_kind == "aten::__is__"
    for maybe, other_side in ((self, other), (other, self)):
        if optional.is_optional(maybe) and other_side is None:
            holding = optional.has_element(g, maybe)
            if not negate:
                return holding
            out = g.op("Not", holding)
            out.shape, out.is_number = (), True
            return out
    same = self is other if not (is_value(self) or is_value(other)) else False
    return same if negate else not same


@symbolic("prim::unchecked_cast", "aten::_unwrap_optional", "prim::unchecked_unwrap_optional")
def unchecked_cast(g, x, *unused):
    """The tensor an optional holds, where TorchScript has established that it holds one; anything else is
    already of the refined type."""
    if optional.is_optional(x) and not g.output_is_optional(0):
        return optional.get_element(g, x)
    return x
