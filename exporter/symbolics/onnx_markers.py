"""Ops a model's own code writes to say which ONNX it exports to, and ops libraries register with ``torch.library``:

- ``onnx_symbolic::_symbolic`` / ``_symbolic_multi_out``, the markers PyTorch's ``ops.symbolic`` and
  ``ops.symbolic_multi_out`` (its ONNX package) leave in a graph: the ONNX node they describe (domain, op type, attributes, as many outputs
  as dtypes given; the element types and shapes are the marker's, which the capture recorded);
- ``onnx::RotaryEmbedding`` and ``onnx::Attention`` (PyTorch's ``ops.rotary_embedding`` / ``ops.attention``): the ONNX
  op of opset 23. Below 23 a torch.export program decomposes them (``exporter/frontends/export/library_ops.py``);
- ``transformers::grouped_mm_fallback``, the grouped matmul of transformers' mixture-of-experts layers (its Python
  implementation loops over data-dependent group ends, which torch.export cannot trace).
"""

from __future__ import annotations

from exporter.dtypes import INT64
from exporter.errors import SymbolicValueError
from exporter.lowering.core import cast, constant_value, dim_size, reduce_op, scalar_like, unsqueeze
from exporter.lowering.definitions import check_same_definition
from exporter.lowering.shape import arange_indices, reshape_to
from exporter.registry import symbolic

_SUFFIXES = {"i": "i", "f": "f", "s": "s", "is": "is", "fs": "fs", "ss": "ss"}
ATTENTION_OPSET = 23


@symbolic("onnx_symbolic::_symbolic")
def marker(g, inputs, op_type, onnx_dtype, shape, attr_keys, attr_types, attr_pos, attr_ints, attr_floats,
           attr_strs, metadata_props_keys=(), metadata_props_values=(), domain="", version=None):
    """The ``ops.symbolic(domain_op, inputs, attrs, dtype=, shape=, version=)``: one ONNX node, one output of
    ``onnx_dtype`` (its node metadata is not kept: our nodes carry none)."""
    return _marked_node(g, inputs, op_type, [onnx_dtype], attr_keys, attr_types, attr_pos, attr_ints, attr_floats,
                        attr_strs, domain, version)


@symbolic("onnx_symbolic::_symbolic_multi_out")
def marker_multi_out(g, inputs, op_type, onnx_dtypes, shapes, attr_keys, attr_types, attr_pos, attr_ints,
                     attr_floats, attr_strs, metadata_props_keys=(), metadata_props_values=(), domain="",
                     version=None):
    """The ``ops.symbolic_multi_out`` marker: one ONNX node with one output per dtype given (a list of them)."""
    results = _marked_node(g, inputs, op_type, list(onnx_dtypes), attr_keys, attr_types, attr_pos, attr_ints,
                           attr_floats, attr_strs, domain, version)
    return list(results) if isinstance(results, tuple) else [results]


def _marked_node(g, inputs, op_type, onnx_dtypes, attr_keys, attr_types, attr_pos, attr_ints, attr_floats,
                 attr_strs, domain, version):
    inputs = list(inputs or [])
    while inputs and inputs[-1] is None:
        inputs.pop()
    pools = {"i": attr_ints, "f": attr_floats, "s": attr_strs}
    attributes = {}
    for key, kind, (start, end) in zip(attr_keys, attr_types, attr_pos, strict=True):
        if kind not in _SUFFIXES:
            raise SymbolicValueError(f"PyTorch's ONNX marker op for {op_type}: unknown attribute type {kind!r}")
        values = list(pools[kind[0]][start:end])
        attributes[f"{key}_{_SUFFIXES[kind]}"] = values if len(kind) == 2 else values[0]
    if domain in ("", "ai.onnx"):
        check_same_definition(g, op_type, version, who=f"PyTorch's ONNX marker op (version {version})",
                              input_types=[None if i is None else g.dtype(i) for i in inputs])
        name = op_type
    else:
        known = g.session.custom_opsets.setdefault(domain, version or 1)
        if version is not None and known != version:
            raise SymbolicValueError(f"domain {domain!r} is imported at version {known}; PyTorch's ONNX marker op "
                                     f"asks for version {version}")
        name = f"{domain}::{op_type}"
    results = g.op(name, *inputs, outputs=len(onnx_dtypes), **attributes)
    for value, dtype in zip(results if isinstance(results, tuple) else (results,), onnx_dtypes, strict=True):
        value.dtype = int(dtype)
    return results


@symbolic("onnx::RotaryEmbedding", since=ATTENTION_OPSET)
def rotary_embedding(g, x, cos_cache, sin_cache, position_ids=None, interleaved=False, num_heads=0,
                     rotary_embedding_dim=0):
    """The ``ops.rotary_embedding`` marker: ONNX RotaryEmbedding-23, its arguments as its attributes."""
    interleaved, num_heads, rotary_embedding_dim = (constant_value(a) for a in (interleaved, num_heads,
                                                                                 rotary_embedding_dim))
    inputs = [x, cos_cache, sin_cache] + ([position_ids] if position_ids is not None else [])
    return g.op("RotaryEmbedding", *inputs, interleaved_i=int(bool(interleaved)), num_heads_i=int(num_heads),
                rotary_embedding_dim_i=int(rotary_embedding_dim))


@symbolic("onnx::Attention", since=ATTENTION_OPSET)
def attention(g, q, k, v, attn_mask=None, past_key=None, past_value=None, is_causal=False, kv_num_heads=0,
              q_num_heads=0, qk_matmul_output_mode=0, scale=None, softcap=0.0, softmax_precision=None):
    """The ``ops.attention`` marker: ONNX Attention-23 (output, present key, present value, QK output)."""
    is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode, scale, softcap, softmax_precision = (
        constant_value(a) for a in (is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode, scale, softcap,
                                    softmax_precision))
    inputs = [q, k, v, attn_mask, past_key, past_value]
    while inputs[-1] is None:
        inputs.pop()
    attributes = {"is_causal_i": int(bool(is_causal)), "kv_num_heads_i": int(kv_num_heads),
                  "q_num_heads_i": int(q_num_heads), "qk_matmul_output_mode_i": int(qk_matmul_output_mode),
                  "softcap_f": float(softcap)}
    if scale is not None:
        attributes["scale_f"] = float(scale)
    if softmax_precision is not None:
        attributes["softmax_precision_i"] = int(softmax_precision)
    return list(g.op("Attention", *inputs, outputs=4, **attributes))


@symbolic("transformers::grouped_mm_fallback", since=9)
def grouped_mm_fallback(g, input, weight, offs):
    """``grouped_mm_fallback(input (S, in), weight (E, in, out), offs (E,))``: row s of ``input`` times the weight of
    its group, the group being how many group ends ``offs`` holds at or before s; rows past the last end stay zero
    (the loop of transformers' implementation never writes them). As ``aten::_grouped_mm``'s symbolic computes it:
    every row times every group's weight (memory E x S x out) and Gather picks each row's own group's product, exact
    for any ``offs`` the model computes at run time."""
    rows = arange_indices(g, dim_size(g, input, 0))
    groups = g.value(dim_size(g, weight, 0))
    ends = cast(g, offs, INT64)
    ended = g.op("Not", g.op("Greater", unsqueeze(g, ends, [0]), unsqueeze(g, rows, [1])))  # [S, E]: ends[e] <= s
    group = reduce_op(g, "ReduceSum", cast(g, ended, INT64), [1], keepdims=False)
    inside = g.op("Less", group, groups)
    group = g.op("Where", inside, group, g.const(0, INT64))
    products = g.op("Transpose", g.op("MatMul", g.value(input), g.value(weight)), perm_i=[1, 0, 2])  # [S, E, out]
    by_row_and_group = reshape_to(g, products, [-1, dim_size(g, weight, 2)])
    picked = g.op("Gather", by_row_and_group, g.op("Add", g.op("Mul", rows, groups), group), axis_i=0)
    return g.op("Where", unsqueeze(g, inside, [1]), picked, scalar_like(g, 0, input))
