"""``export_modules_as_functions``: each call of a chosen ``nn.Module`` becomes a call of an ONNX local function.

Works on the assembled ModelProto. The converter records, for every ONNX node, the TorchScript scope of the
node it came from (``__module.model/__module.model.layer1/...``: the module instances the trace was inside).
Innermost calls are outlined first, so a parent's function calls its children's functions. One FunctionProto
is emitted per module type (domain: the module's Python module, name: its class name). Instances whose
bodies differ only in attribute values (a constant, a stride) share it: each differing attribute becomes an
"inferred::" function attribute that the body references and each call sets, as documented. Instances whose
bodies differ in structure get one function per distinct body, named ``<Class>_1``, ``<Class>_2``, ...
Parameters and other values from outside are function inputs. Class attributes with PEP 526 annotations
(ints, floats, strings and lists of them) become attributes of the call node, as documented.
"""

from __future__ import annotations

import typing
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import onnx
import torch
from onnx import helper

from exporter.errors import ExportArgumentError

_MODULE_PREFIX = "__module."
_TRACE_WRAPPER = "model"  # capture traces the model as attribute "model" of a wrapper module


def check_request(model: Any, selection: bool | Collection[type], opset: int) -> None:
    """Fail early, with a clear message, when ``export_modules_as_functions`` cannot be honoured."""
    if opset < 15:
        raise ExportArgumentError(
            f"export_modules_as_functions needs opset >= 15 (ONNX local functions), got opset {opset}"
        )
    if not isinstance(model, torch.nn.Module) or isinstance(model, torch.jit.ScriptModule):
        raise ExportArgumentError("export_modules_as_functions needs a traced nn.Module (scopes come from tracing)")
    if selection is not True:
        _check_selection(selection)


def export_modules_as_functions(
    model_proto: onnx.ModelProto, model: Any, node_scopes: dict[str, str], selection: bool | Collection[type]
) -> None:
    """Outline the calls of the modules ``selection`` picks (True: every submodule) into local functions."""
    chosen_types = None if selection is True else _check_selection(selection)
    modules = dict(model.named_modules())
    graph = model_proto.graph
    nodes = list(graph.node)  # one wrapper object per node for the whole pass: chains are keyed by id()
    chains = {id(node): _selected_chain(node_scopes.get(node.name, ""), modules, chosen_types) for node in nodes}
    library = _FunctionLibrary({o.domain: o.version for o in model_proto.opset_import})
    graph_outputs = {o.name for o in graph.output}
    for path in _innermost_first(chains.values()):
        nodes = _outline_calls_of(path, modules[path], nodes, chains, graph_outputs, library)
    library.unify_variants(nodes)
    del graph.node[:]
    graph.node.extend(nodes)
    model_proto.functions.extend(library.functions)
    imported = {o.domain for o in model_proto.opset_import}
    for domain in sorted({f.domain for f in library.functions} - imported):
        model_proto.opset_import.append(helper.make_opsetid(domain, 1))


def _check_selection(selection: object) -> set[type]:
    """The module types a user's ``export_modules_as_functions`` (anything but True) selects, checked."""
    if isinstance(selection, (str, bytes)) or not isinstance(selection, Collection):
        raise ExportArgumentError(
            f"export_modules_as_functions must be a bool or a set of nn.Module types, got {selection!r}"
        )
    types = set(selection)
    for item in types:
        if not (isinstance(item, type) and issubclass(item, torch.nn.Module)):
            raise ExportArgumentError(
                f"export_modules_as_functions must be a bool or a set of nn.Module types, got an element {item!r}"
            )
    return types


def instance_paths(scope: str) -> list[str]:
    """``__module.model/__module.model.a/__module.model.a.lin`` -> ``["a", "a.lin"]`` (the root excluded)."""
    paths = []
    for part in scope.split("/") if scope else []:
        path = part[len(_MODULE_PREFIX):] if part.startswith(_MODULE_PREFIX) else part
        if path == _TRACE_WRAPPER:
            continue
        if path.startswith(_TRACE_WRAPPER + "."):
            path = path[len(_TRACE_WRAPPER) + 1:]
        paths.append(path)
    return paths


def _selected_chain(scope: str, modules: dict, chosen_types: set[type] | None) -> tuple[str, ...]:
    chain = []
    for path in instance_paths(scope):
        module = modules.get(path)
        if module is not None and (chosen_types is None or type(module) in chosen_types):
            chain.append(path)
    return tuple(chain)


def _innermost_first(chains) -> list[str]:
    depth: dict[str, int] = {}
    for chain in chains:
        for level, path in enumerate(chain):
            depth[path] = max(depth.get(path, 0), level)
    return sorted(depth, key=lambda p: (-depth[p], p))


# -- outlining ---------------------------------------------------------------------------------------------------
def _outline_calls_of(path, module, nodes, chains, graph_outputs, library) -> list[onnx.NodeProto]:
    """Replace every contiguous run of nodes inside module instance ``path`` by one call node."""
    result: list[onnx.NodeProto] = []
    index = 0
    while index < len(nodes):
        if path not in chains[id(nodes[index])]:
            result.append(nodes[index])
            index += 1
            continue
        end = index
        while end < len(nodes) and path in chains[id(nodes[end])]:
            end += 1
        run = nodes[index:end]
        after = nodes[end:]
        call = _make_call(path, module, run, after, graph_outputs, library)
        if call is None:
            result.extend(run)
        else:
            chain = chains[id(run[0])]
            chains[id(call)] = chain[: chain.index(path)]
            result.append(call)
        index = end
    return result


def _make_call(path, module, run, later_nodes, graph_outputs, library) -> onnx.NodeProto | None:
    produced = [name for node in run for name in node.output if name]
    produced_set = set(produced)
    inputs: list[str] = []
    for node in run:
        for name in free_names(node):
            if name and name not in produced_set and name not in inputs:
                inputs.append(name)
    used_later = {name for node in later_nodes for name in free_names(node)} | graph_outputs
    outputs = [name for name in produced if name in used_later]
    if not outputs:
        return None
    attributes = _annotated_attributes(module)
    function = library.function_for(type(module), run, inputs, outputs, sorted(attributes))
    call = helper.make_node(function.name, inputs, outputs, name=library.call_name(path, function.name),
                            domain=function.domain)
    for key, value in attributes.items():
        call.attribute.append(helper.make_attribute(key, value))
    return call


def free_names(node: onnx.NodeProto) -> list[str]:
    """Names ``node`` reads, including outer-scope names its subgraphs read."""
    names = list(node.input)
    for attribute in node.attribute:
        for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
            defined = {v.name for v in sub.input} | {t.name for t in sub.initializer}
            defined |= {name for inner in sub.node for name in inner.output}
            names.extend(name for inner in sub.node for name in free_names(inner) if name not in defined)
            names.extend(o.name for o in sub.output if o.name not in defined)
    return names


def _annotated_attributes(module: torch.nn.Module) -> dict[str, Any]:
    """PEP 526-annotated class attributes (beyond nn.Module's own) with values ONNX attributes can hold."""
    try:
        hints = typing.get_type_hints(type(module))
        base = typing.get_type_hints(torch.nn.Module)
    except Exception:  # unresolvable forward references: no annotated attributes
        return {}
    attributes: dict[str, Any] = {}
    for name in hints:
        if name in base or not hasattr(module, name):
            continue
        value = getattr(module, name)
        if isinstance(value, (bool, int, float, str)):
            attributes[name] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float, str)) for v in value):
            if len({type(v) for v in value}) == 1:
                attributes[name] = list(value)
    return attributes


@dataclass
class _FunctionLibrary:
    """The FunctionProtos emitted so far, one per distinct body of each module type."""

    domain_versions: dict[str, int]
    functions: list[onnx.FunctionProto] = field(default_factory=list)
    _by_signature: dict[tuple, onnx.FunctionProto] = field(default_factory=dict)
    _variants: dict[type, int] = field(default_factory=dict)
    _type_names: dict[tuple[str, str], str] = field(default_factory=dict)  # (domain, function name) -> class name
    _call_names: set[str] = field(default_factory=set)

    def call_name(self, path: str, function_name: str) -> str:
        """A unique call-node name (ONNX Runtime names inlined nodes after their call node)."""
        base = f"/{path.replace('.', '/')}/{function_name}"
        name, count = base, 1
        while name in self._call_names:
            name, count = f"{base}_{count}", count + 1
        self._call_names.add(name)
        return name

    def function_for(self, module_type: type, run, inputs, outputs, attribute_names) -> onnx.FunctionProto:
        domain = module_type.__module__
        signature = (domain, module_type.__qualname__, _canonical_body(run, inputs, outputs))
        existing = self._by_signature.get(signature)
        if existing is not None:
            for name in attribute_names:
                if name not in existing.attribute:
                    existing.attribute.append(name)
            return existing
        variant = self._variants.get(module_type, 0)
        self._variants[module_type] = variant + 1
        name = module_type.__name__ if variant == 0 else f"{module_type.__name__}_{variant}"
        used_domains = sorted(_domains_of(run))
        function = helper.make_function(
            domain, name, inputs, outputs, [_copy(node) for node in run],
            opset_imports=[helper.make_opsetid(d, self.domain_versions.get(d, 1)) for d in used_domains],
            attributes=list(attribute_names),
        )
        self._by_signature[signature] = function
        self._type_names[(domain, name)] = module_type.__qualname__
        self.functions.append(function)
        return function


    def unify_variants(self, main_nodes: list[onnx.NodeProto]) -> None:
        """Merge same-type functions that differ only in attribute values, until nothing more merges.

        Merging children can make their parents mergeable (their bodies then differ only in call attributes).
        """
        while self._merge_one_group(main_nodes):
            pass

    def _merge_one_group(self, main_nodes) -> bool:
        groups: dict[tuple, list[onnx.FunctionProto]] = {}
        for function in self.functions:
            key = (function.domain, self._type_names[(function.domain, function.name)], _canonical_body(
                function.node, function.input, function.output, keep_values=False))
            groups.setdefault(key, []).append(function)
        for variants in groups.values():
            if len(variants) > 1:
                self._merge(variants, main_nodes)
                return True
        return False

    def _merge(self, variants: list[onnx.FunctionProto], main_nodes) -> None:
        base, others = variants[0], variants[1:]
        call_values: dict[str, dict[str, onnx.AttributeProto]] = {v.name: {} for v in variants}
        for index, node in enumerate(base.node):
            for position, attribute in enumerate(node.attribute):
                versions = [v.node[index].attribute[position] for v in variants]
                if attribute.ref_attr_name or len({a.SerializeToString(deterministic=True) for a in versions}) == 1:
                    continue
                reference = f"inferred::{node.op_type}_{index}_{attribute.name}"
                for variant, version in zip(variants, versions, strict=True):
                    value = onnx.AttributeProto()
                    value.CopyFrom(version)
                    value.name = reference
                    call_values[variant.name][reference] = value
                node.attribute[position].CopyFrom(
                    onnx.AttributeProto(name=attribute.name, type=attribute.type, ref_attr_name=reference))
                base.attribute.append(reference)
        for other in others:
            for name in other.attribute:
                if name not in base.attribute:
                    base.attribute.append(name)
        renamed = {(v.domain, v.name) for v in variants}
        for call in [n for f in self.functions for n in f.node] + list(main_nodes):
            if (call.domain, call.op_type) in renamed:
                for value in call_values[call.op_type].values():
                    call.attribute.append(value)
                call.op_type = base.name
        self.functions = [f for f in self.functions if not any(f is o for o in others)]


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    return copy


def _domains_of(nodes) -> set[str]:
    domains = set()
    for node in nodes:
        domains.add(node.domain)
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
                domains |= _domains_of(sub.node)
    return domains


def _canonical_body(run, inputs, outputs, keep_values: bool = True) -> bytes:
    """The run with value names replaced by positional ones and node names dropped: equal bodies compare equal.

    Without ``keep_values``, attribute values are dropped too (names, types and references remain), so
    bodies that differ only in attribute values compare equal.
    """
    mapping = {name: f"in{k}" for k, name in enumerate(inputs)}
    for node in run:
        for name in node.output:
            mapping.setdefault(name, f"v{len(mapping)}")
    canonical = onnx.GraphProto()
    for node in run:
        copy = canonical.node.add()
        copy.CopyFrom(node)
        _rename(copy, mapping)
        if not keep_values:
            for attribute in copy.attribute:
                if attribute.type != onnx.AttributeProto.GRAPH and attribute.type != onnx.AttributeProto.GRAPHS:
                    attribute.CopyFrom(onnx.AttributeProto(
                        name=attribute.name, type=attribute.type, ref_attr_name=attribute.ref_attr_name))
    canonical.output.extend(helper.make_empty_tensor_value_info(mapping[o]) for o in outputs)
    return canonical.SerializeToString(deterministic=True)


def _rename(node: onnx.NodeProto, mapping: dict[str, str]) -> None:
    node.name = ""
    node.input[:] = [mapping.get(n, n) for n in node.input]
    node.output[:] = [mapping.get(n, n) for n in node.output]
    for attribute in node.attribute:
        for sub in ([attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)):
            for inner in sub.node:
                _rename(inner, mapping)
            for out in sub.output:
                out.name = mapping.get(out.name, out.name)
