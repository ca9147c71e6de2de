"""Whether a node written against one opset of the default domain means the same at the export's opset: the rule for
nodes whose author wrote them for another opset than the export's (a custom_translation_table function, a
torch.onnx.ops marker's ``version``).

The op's schema at the export's opset must extend the one it was written for: the same inputs and outputs (new ones
only optional, at the end), the same attributes with the same defaults (new ones only optional), and each type
constraint admitting the types it admitted (or at least the element types the node's inputs have). That is how ONNX
versions an op when it only adds types (Add-14, most of opsets 19 and 21: float8, int4) or an optional attribute or
input whose default keeps the old behaviour (Cast-19's ``saturate``, Split-18's ``num_outputs``); an op whose inputs,
attributes or defaults changed (ReduceSum-13's ``axes`` input, Squeeze-13's, GridSample-20's renamed modes) is
refused, as the author's node would mean something else there.
"""

from __future__ import annotations

import onnx

from exporter.errors import UnsupportedOperatorError


def check_same_definition(g, op_type: str, written_for: int | None,
                          who: str = "its custom_translation_table function",
                          input_types: list[int | None] | None = None) -> None:
    """Refuse a default-domain op that ``who``, written against opset ``written_for``, uses where the export's opset
    does not define it or defines it otherwise (see the module docstring); ``input_types``: the ONNX element types of
    the node's inputs, where known."""
    try:
        at_export = onnx.defs.get_schema(op_type, g.opset, "")
    except onnx.defs.SchemaError:
        raise UnsupportedOperatorError(g.op_kind, g.opset, reason=f"{who} uses {op_type}, which opset {g.opset} "
                                       "does not define") from None
    if written_for is None or written_for == g.opset:
        return
    try:
        written = onnx.defs.get_schema(op_type, written_for, "")
    except onnx.defs.SchemaError:
        written = None
    if written is None or not _extends(at_export, written, input_types or []):
        raise UnsupportedOperatorError(
            g.op_kind, g.opset, reason=f"{who} was written against opset {written_for}, whose {op_type} (version "
            f"{written.since_version if written else None}) differs from opset {g.opset}'s (version "
            f"{at_export.since_version}): write it for opset {g.opset} or export at opset {written_for}")


def _extends(new, old, input_types: list[int | None]) -> bool:
    if new.since_version == old.since_version:
        return True
    return (_parameters_extend(new.inputs, old.inputs) and _parameters_extend(new.outputs, old.outputs)
            and _attributes_extend(new.attributes, old.attributes) and _types_extend(new, old, input_types))


def _parameters_extend(new, old) -> bool:
    def form(p):
        return p.name, p.type_str, p.option

    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    return ([form(p) for p in new[:len(old)]] == [form(p) for p in old]
            and all(p.option == optional for p in new[len(old):]))


def _attributes_extend(new, old) -> bool:
    for name, attribute in old.items():
        found = new.get(name)
        if found is None or found.type != attribute.type or found.required != attribute.required:
            return False
        if found.default_value.SerializeToString() != attribute.default_value.SerializeToString():
            return False
    return all(not attribute.required for name, attribute in new.items() if name not in old)


def _types_extend(new, old, input_types: list[int | None]) -> bool:
    """Whether each type constraint of ``new`` admits what ``old``'s admitted, or, where it admits less, the types of
    the inputs the constraint binds (a constraint no typed input binds must admit all it did)."""
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in new.type_constraints}
    for constraint in old.type_constraints:
        name = constraint.type_param_str
        if set(constraint.allowed_type_strs) <= allowed.get(name, set()):
            continue
        bound = [_type_string(t) for p, t in zip(old.inputs, input_types, strict=False) if p.type_str == name and t]
        if not bound or not all(t in allowed.get(name, set()) for t in bound):
            return False
    return True


def _type_string(elem_type: int) -> str:
    """"tensor(float)" for FLOAT: a type constraint's spelling."""
    return f"tensor({onnx.helper.tensor_dtype_to_string(elem_type).removeprefix('TensorProto.').lower()})"
