"""Whether ONNX defines an op of the default domain identically at two opsets: the rule for nodes written against
another opset than the export's (a custom_translation_table function, a torch.onnx.ops marker's ``version``), which
``onnx.checker`` applies to a model-local function's opset imports."""

from __future__ import annotations

import onnx

from exporter.errors import UnsupportedOperatorError


def check_same_definition(g, op_type: str, written_for: int | None,
                          who: str = "its custom_translation_table function") -> None:
    """Refuse a default-domain op that ``who``, written against opset ``written_for``, uses where the export's opset
    defines it otherwise (or not at all)."""
    try:
        at_export = onnx.defs.get_schema(op_type, g.opset, "").since_version
    except onnx.defs.SchemaError:
        raise UnsupportedOperatorError(g.op_kind, g.opset, reason=f"{who} uses {op_type}, which opset {g.opset} "
                                       "does not define") from None
    if written_for is None or written_for == g.opset:
        return
    try:
        written = onnx.defs.get_schema(op_type, written_for, "").since_version
    except onnx.defs.SchemaError:
        written = None
    if written != at_export:
        raise UnsupportedOperatorError(
            g.op_kind, g.opset, reason=f"{who} was written against opset {written_for}, whose {op_type} (version "
            f"{written}) differs from opset {g.opset}'s (version {at_export}): write it for opset {g.opset} or "
            f"export at opset {written_for}")
