"""The special-values sweep: what real models feed ops at the edges of arithmetic, compared with PyTorch under the
non-finite rule (``exporter.numerics``: a NaN or an infinity that PyTorch does not have is a mismatch).

Fully masked attention rows (a sequence that is all padding), softmax over rows of -inf, log and division at zero,
NaN through reductions, sorting and nan_to_num, float16 overflow to infinity, and empty tensors. Where ONNX Runtime,
not the export, departs from PyTorch, the case's known failure says so and names the onnx.reference verdict.
"""

import torch
import torch.nn.functional as F

from opcases import OPSETS, OpCase

_INF = float("inf")
_NAN = float("nan")

# ONNX Runtime 1.31.1's CPU reductions skip NaN where PyTorch and onnx.reference's ReduceMax/ArgMax propagate it.
# Not worked around: flagging NaN rows (IsNaN, Cast, ReduceMax, Where) made a 512x4096 ReduceMax 16x slower
# (0.9 -> 14 ms) for data that holds NaN only when something upstream has already gone wrong.
_ORT_SKIPS_NAN = {opset: "ONNX Runtime's ReduceMax/ReduceMin/ArgMax/ArgMin skip NaN where PyTorch propagates it; "
                         "onnx.reference agrees with PyTorch (a runtime divergence)" for opset in OPSETS}
_ORT_TOPK_NAN = {opset: "ONNX Runtime's TopK ranks NaN below every number where PyTorch (and onnx.reference) rank "
                        "it above: a runtime divergence" for opset in OPSETS}
# Below opset 11 TopK has no ``largest``: an ascending sort is TopK of -x, which ranks NaN first where PyTorch puts it
# last; onnx.reference computes the same, so this is the export's limitation at 7-10, not the runtime's.
_SORT_NAN = {**_ORT_TOPK_NAN, **{opset: "an ascending sort below opset 11 is TopK of -x, which ranks NaN first where "
                                        "PyTorch puts it last (onnx.reference agrees: the export's limit at 7-10)"
                                 for opset in OPSETS if opset < 11}}
_ORT_EMPTY_MEAN = {opset: "ONNX Runtime's ReduceMean of an empty axis gives 0 where PyTorch and onnx.reference give "
                          "NaN (a runtime divergence)" for opset in OPSETS}


# -- attention with every key of a query masked ----------------------------------------------------------------
def _qkv(k, batch=2, heads=2, length=3, source=4, size=8):
    generator = torch.Generator().manual_seed(k)
    return tuple(torch.randn(batch + k, heads, rows, size, generator=generator)
                 for rows in (length, source, source))


def _bool_mask_with_empty_row(k):
    """(batch, 1, length, source): True = attend; query 1 of every batch attends to nothing."""
    mask = torch.ones(2 + k, 1, 3, 4, dtype=torch.bool)
    mask[:, :, 1] = False
    mask[0, :, 2, :2] = False
    return mask


def _float_mask_with_empty_row(k):
    """The additive form of the same mask: -inf where masked."""
    return torch.zeros(2 + k, 1, 3, 4).masked_fill(~_bool_mask_with_empty_row(k), -_INF)


def _padding_mask(k):
    """(batch, source) token mask as tokenizers give it: 1 = token, 0 = padding; sequence 1 is all padding."""
    mask = torch.ones(2 + k, 4, dtype=torch.long)
    mask[0, -1] = 0
    mask[1] = 0
    return mask


def _transformers_padding_attention(q, kk, v, padding):
    """Hugging Face's padding pattern: the 0/1 mask inverted and filled with the dtype's lowest value, added to the
    scores (finite, so an all-padding sequence attends uniformly rather than to nothing)."""
    inverted = 1.0 - padding[:, None, None, :].to(q.dtype)
    additive = inverted.masked_fill(inverted.bool(), torch.finfo(q.dtype).min)
    return F.scaled_dot_product_attention(q, kk, v, attn_mask=additive)


class _PaddedSelfAttention(torch.nn.Module):
    """nn.MultiheadAttention with a key_padding_mask that masks a whole sequence: PyTorch's kernels give NaN there
    (unlike scaled_dot_product_attention's 0), and the export must give the same NaN."""

    def __init__(self, batch_first):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)

    def forward(self, x, padding):
        return self.attention(x, x, x, key_padding_mask=padding)


def _fully_padded(k):
    mask = torch.zeros(2 + k, 4, dtype=torch.bool)
    mask[0, -1] = True
    mask[1] = True  # sequence 1: every key is padding
    return mask


def _sequences(batch_first):
    def make(k):
        x = torch.randn(2 + k, 4, 8, generator=torch.Generator().manual_seed(k))
        return (x if batch_first else x.transpose(0, 1).contiguous(), _fully_padded(k))
    return make


ATTENTION = [
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k), _bool_mask_with_empty_row(k)),
           sample="bool_mask_fully_masked_row",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m)),
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k), _float_mask_with_empty_row(k)),
           sample="float_mask_fully_masked_row",
           fn=lambda q, kk, v, m: F.scaled_dot_product_attention(q, kk, v, attn_mask=m)),
    OpCase("scaled_dot_product_attention", lambda k: (*_qkv(k), _padding_mask(k)), sample="transformers_all_padding",
           min_opset=9, fn=_transformers_padding_attention),
    OpCase("_safe_softmax", lambda k: (torch.tensor([[-_INF] * 3, [1.0, -_INF, 2.0], [_NAN, -_INF, -_INF]]
                                                    + [[0.5, 0.25, -_INF]] * k),),
           fn=lambda x: torch.ops.aten._safe_softmax(x, -1)),
    OpCase("multi_head_attention", _sequences(batch_first=True), sample="fully_padded_sequence_fast_path",
           min_opset=9, module=lambda: _PaddedSelfAttention(batch_first=True)),
    OpCase("multi_head_attention", _sequences(batch_first=False), sample="fully_padded_sequence",
           min_opset=9, module=lambda: _PaddedSelfAttention(batch_first=False)),
]


# -- softmax and masking ---------------------------------------------------------------------------------------------
def _rows_of_minus_inf(k):
    """A row of -inf only, a row with some -inf, a row with +inf, and an ordinary row."""
    return (torch.tensor([[-_INF, -_INF, -_INF], [0.5, -_INF, 1.5], [_INF, 0.0, 1.0], [0.1, 0.2, 0.3]]
                         + [[2.0, -1.0, -_INF]] * k),)


def _scores_and_mask(k):
    generator = torch.Generator().manual_seed(k)
    mask = torch.zeros(3 + k, 5, dtype=torch.bool)
    mask[0] = True  # every position of row 0 filled with -inf
    mask[1, 1:3] = True
    return torch.randn(3 + k, 5, generator=generator), mask


SOFTMAX = [
    OpCase("softmax", _rows_of_minus_inf, sample="rows_of_minus_inf", fn=lambda x: torch.softmax(x, -1)),
    OpCase("softmax", _rows_of_minus_inf, sample="rows_of_minus_inf_dim0", fn=lambda x: torch.softmax(x, 0)),
    OpCase("log_softmax", _rows_of_minus_inf, sample="rows_of_minus_inf", fn=lambda x: torch.log_softmax(x, -1)),
    OpCase("masked_fill", _scores_and_mask, sample="minus_inf_then_softmax", min_opset=9,
           fn=lambda x, m: torch.softmax(x.masked_fill(m, -_INF), -1)),
]


# -- arithmetic at zero, NaN and infinity ----------------------------------------------------------------------------
def _with_zeros_and_negatives(k):
    return (torch.tensor([0.0, -0.0, -1.0, 1.0, _INF, -_INF, _NAN] + [2.0] * k),)


def _numerators_and_zeros(k):
    return (torch.tensor([1.0, -1.0, 0.0, _NAN, _INF, 2.0] + [3.0] * k),
            torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, -0.0] + [0.0] * k))


ARITHMETIC = [
    OpCase("log", _with_zeros_and_negatives, sample="zero_negative_special", fn=torch.log),
    OpCase("div", _numerators_and_zeros, sample="by_zero", fn=torch.div),
    OpCase("reciprocal", _with_zeros_and_negatives, sample="zero_special", fn=torch.reciprocal),
    OpCase("sqrt", _with_zeros_and_negatives, sample="negative_special", fn=torch.sqrt),
    OpCase("nan_to_num", _with_zeros_and_negatives, sample="defaults", min_opset=9, fn=torch.nan_to_num),
    OpCase("nan_to_num", _with_zeros_and_negatives, sample="given_values", min_opset=9,
           fn=lambda x: torch.nan_to_num(x, nan=0.5, posinf=10.0, neginf=-10.0)),
    OpCase("isnan", _with_zeros_and_negatives, sample="round_trip", min_opset=9,
           fn=lambda x: torch.where(torch.isnan(x), torch.zeros_like(x), x)),
    OpCase("isinf", _with_zeros_and_negatives, sample="round_trip", min_opset=9,
           fn=lambda x: torch.where(torch.isinf(x), torch.full_like(x, 7.0), x)),
]


# -- NaN through reductions and sorting ------------------------------------------------------------------------------
def _rows_with_nan(k):
    return (torch.tensor([[1.0, _NAN, 3.0], [4.0, 5.0, 6.0], [_NAN, _NAN, _NAN], [-_INF, 2.0, _INF]]
                         + [[0.5, -0.5, 1.5]] * k),)


REDUCTIONS = [
    OpCase("amax", _rows_with_nan, sample="nan_rows", known_failures=_ORT_SKIPS_NAN, fn=lambda x: torch.amax(x, -1)),
    OpCase("amin", _rows_with_nan, sample="nan_rows", known_failures=_ORT_SKIPS_NAN, fn=lambda x: torch.amin(x, -1)),
    OpCase("max", _rows_with_nan, sample="nan_rows_dim", known_failures=_ORT_SKIPS_NAN, fn=lambda x: torch.max(x, -1)),
    OpCase("argmax", _rows_with_nan, sample="nan_rows", known_failures=_ORT_SKIPS_NAN, fn=lambda x: torch.argmax(x, -1)),
    OpCase("argmin", _rows_with_nan, sample="nan_rows", known_failures=_ORT_SKIPS_NAN, fn=lambda x: torch.argmin(x, -1)),
    OpCase("sum", _rows_with_nan, sample="nan_rows", fn=lambda x: torch.sum(x, -1)),
    OpCase("mean", _rows_with_nan, sample="nan_rows", fn=lambda x: torch.mean(x, -1)),
    OpCase("sort", _rows_with_nan, sample="nan_rows", known_failures=_SORT_NAN, fn=lambda x: torch.sort(x, -1)),
    OpCase("topk", _rows_with_nan, sample="nan_rows", known_failures=_ORT_TOPK_NAN, fn=lambda x: torch.topk(x, 2, -1)),
]


# -- float16 overflow and empty tensors ------------------------------------------------------------------------------
def _half_near_max(k):
    return (torch.tensor([100.0, 300.0, -300.0, 1.0] + [2.0] * k, dtype=torch.float16),)


OVERFLOW = [
    OpCase("mul", _half_near_max, sample="float16_overflow_to_inf", fn=lambda x: x * x),
    OpCase("exp", _half_near_max, sample="float16_overflow_to_inf", fn=torch.exp),
    OpCase("exp", lambda k: (torch.tensor([100.0, -200.0, 0.0] + [1.0] * k),), sample="float32_overflow_to_inf",
           fn=torch.exp),
]

EMPTY = [
    OpCase("sum", lambda k: (torch.zeros(0 + k, 3),), sample="empty_rows", fn=lambda x: torch.sum(x, 0)),
    OpCase("mean", lambda k: (torch.zeros(0 + k, 3),), sample="empty_rows", known_failures=_ORT_EMPTY_MEAN, fn=lambda x: torch.mean(x, 0)),
    OpCase("softmax", lambda k: (torch.zeros(0 + k, 3),), sample="empty_rows", fn=lambda x: torch.softmax(x, -1)),
]

CASES = ATTENTION + SOFTMAX + ARITHMETIC + REDUCTIONS + OVERFLOW + EMPTY
