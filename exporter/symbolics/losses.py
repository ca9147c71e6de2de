"""Loss functions: nll_loss (1-d, 2-d and n-d), cross_entropy_loss (class or probability targets, label smoothing),
binary_cross_entropy (with and without logits), kl_div, mse_loss and l1_loss, each with PyTorch's ``reduction`` (0 none,
1 mean, 2 sum).

They are written from elementary ops rather than ONNX's NegativeLogLikelihoodLoss/SoftmaxCrossEntropyLoss
(opset 12), so they export from the opset their pieces need: picking each target's log-probability is a Where
over ``target == class`` (Where: opset 9), which, unlike a Gather, also accepts the out-of-range targets that
``ignore_index`` marks (-100 by default) and never multiplies a -inf log-probability by zero.
"""

from __future__ import annotations

import numpy as np

from exporter.dtypes import INT64
from exporter.lowering.activations import softmax_op, stable_softplus
from exporter.lowering.arithmetic import clamp_value
from exporter.lowering.comparison import equal, select
from exporter.lowering.core import cast, dim_size, reduce_op, require_opset, require_rank, reshape, unsqueeze
from exporter.lowering.shape import arange_indices
from exporter.registry import parse_args, symbolic

_NONE, _MEAN, _SUM = 0, 1, 2


def _scalar(g, value, like):
    return g.const(np.array(value), g.dtype(like))


def _reduced(g, loss, reduction: int):
    """PyTorch's reduction of an elementwise loss: as is, its mean over every element, or its sum."""
    if reduction == _NONE:
        return loss
    if reduction == _MEAN:
        return reduce_op(g, "ReduceMean", loss, None, keepdims=False)
    return reduce_op(g, "ReduceSum", loss, None, keepdims=False)


def _class_axis_view(g, vector, rank: int):
    """A per-class vector [C] shaped to broadcast along axis 1 of a rank-``rank`` input: [C, 1, ...]."""
    return unsqueeze(g, vector, list(range(1, rank - 1))) if rank > 2 else vector


def _class_mask(g, target, classes, rank: int):
    """[N, C, d1, ...] bool: True where the class equals the sample's target."""
    class_ids = _class_axis_view(g, arange_indices(g, classes), rank)
    return equal(g, unsqueeze(g, cast(g, target, INT64), [1]), class_ids)


def _nll(g, log_probs, target, weight, reduction: int, ignore_index):
    """-weight[t] * log_probs[n, t] per sample (0 where t == ignore_index), reduced; ``mean`` divides by the
    summed weights of the samples not ignored, as PyTorch does."""
    rank = require_rank(g, log_probs)
    unbatched = rank == 1  # one sample: [C] with a 0-d target
    if unbatched:
        log_probs, target, rank = unsqueeze(g, log_probs, [0]), unsqueeze(g, target, [0]), 2
    zero = _scalar(g, 0.0, log_probs)
    mask = _class_mask(g, target, dim_size(g, log_probs, 1), rank)
    weights = cast(g, mask, g.dtype(log_probs))
    if weight is not None:
        weights = g.op("Mul", weights, _class_axis_view(g, cast(g, weight, g.dtype(log_probs)), rank))
    kept = g.op("Not", equal(g, cast(g, target, INT64), cast(g, ignore_index, INT64)))
    kept_weights = g.op("Mul", weights, unsqueeze(g, cast(g, kept, g.dtype(log_probs)), [1]))
    picked = select(g, mask, g.op("Mul", log_probs, kept_weights), zero)
    loss = g.op("Neg", reduce_op(g, "ReduceSum", picked, [1], keepdims=False))
    # Per sample: the target's shape (torch.export's program records nll_loss_nd's as 0-d with a dynamic batch).
    loss.shape = loss.shape or g.shape(target)
    if reduction == _MEAN:
        total_weight = reduce_op(g, "ReduceSum", kept_weights, None, keepdims=False)
        return g.op("Div", reduce_op(g, "ReduceSum", loss, None, keepdims=False), total_weight)
    if reduction == _NONE and unbatched:
        return reshape(g, loss, [])
    return _reduced(g, loss, reduction)


@symbolic("aten::nll_loss", "aten::nll_loss2d", "aten::nll_loss_nd", since=9)
@parse_args("v", "v", "v", "i", "v")
def nll_loss(g, self, target, weight, reduction, ignore_index):
    """nll_loss(log_probs [N, C, ...] or [C], target [N, ...] or [], weight [C], reduction, ignore_index)."""
    return _nll(g, self, target, weight, reduction, ignore_index)


@symbolic("aten::cross_entropy_loss")
@parse_args("v", "v", "v", "i", "v", "f")
def cross_entropy_loss(g, self, target, weight, reduction, ignore_index, label_smoothing=0.0):
    """cross_entropy(logits, target, weight, reduction, ignore_index, label_smoothing): log_softmax over the
    class axis then nll_loss for class targets, or the cross entropy with a probability target."""
    rank = require_rank(g, self)
    class_axis = 0 if rank == 1 else 1
    log_probs = softmax_op(g, "LogSoftmax", self, class_axis, None)
    log_probs.shape = g.shape(self)
    classes = dim_size(g, self, class_axis)
    if g.dtype(target) == g.dtype(self):  # probabilities, one per class
        return _probability_target_loss(g, log_probs, target, weight, reduction, label_smoothing, classes, rank)
    require_opset(g, 9, "picking the target classes needs Where")
    loss = _nll(g, log_probs, target, weight, reduction, ignore_index)
    if label_smoothing <= 0.0:
        return loss
    smooth = _smoothing_loss(g, log_probs, target, weight, reduction, ignore_index, rank)
    share = g.op("Div", _scalar(g, label_smoothing, loss), cast(g, classes, g.dtype(loss)))
    return g.op("Add", g.op("Mul", _scalar(g, 1.0 - label_smoothing, loss), loss), g.op("Mul", smooth, share))


def _weighted_by_class(g, log_probs, weight, rank: int):
    if weight is None:
        return log_probs
    return g.op("Mul", log_probs, _class_axis_view(g, cast(g, weight, g.dtype(log_probs)), max(rank, 2)))


def _smoothing_loss(g, log_probs, target, weight, reduction: int, ignore_index, rank: int):
    """Label smoothing's uniform part: -sum over classes of weight[c] * log_probs[n, c] per sample, zero where
    ignored; ``mean`` divides by the same total weight as the nll part."""
    class_axis = 0 if rank == 1 else 1
    per_sample = g.op("Neg", reduce_op(g, "ReduceSum", _weighted_by_class(g, log_probs, weight, rank), [class_axis],
                                       keepdims=False))
    kept = g.op("Not", equal(g, cast(g, target, INT64), cast(g, ignore_index, INT64)))
    per_sample = select(g, kept, per_sample, _scalar(g, 0.0, per_sample))
    if reduction != _MEAN:
        return _reduced(g, per_sample, reduction)
    if weight is None:
        total = reduce_op(g, "ReduceSum", cast(g, kept, g.dtype(per_sample)), None, keepdims=False)
    else:
        picked = g.op("Gather", cast(g, weight, g.dtype(per_sample)), select(g, kept, cast(g, target, INT64),
                                                                             g.const(0, INT64)), axis_i=0)
        total = reduce_op(g, "ReduceSum", g.op("Mul", picked, cast(g, kept, g.dtype(per_sample))), None,
                          keepdims=False)
    return g.op("Div", reduce_op(g, "ReduceSum", per_sample, None, keepdims=False), total)


def _probability_target_loss(g, log_probs, target, weight, reduction: int, label_smoothing: float, classes, rank):
    """-sum over classes of weight[c] * target[n, c] * log_probs[n, c]; ``mean`` averages over samples."""
    class_axis = 0 if rank == 1 else 1
    if label_smoothing > 0.0:
        share = g.op("Div", _scalar(g, label_smoothing, target), cast(g, classes, g.dtype(target)))
        target = g.op("Add", g.op("Mul", target, _scalar(g, 1.0 - label_smoothing, target)), share)
    products = _weighted_by_class(g, g.op("Mul", log_probs, target), weight, rank)
    per_sample = g.op("Neg", reduce_op(g, "ReduceSum", products, [class_axis], keepdims=False))
    return _reduced(g, per_sample, reduction)


@symbolic("aten::binary_cross_entropy")
@parse_args("v", "v", "v", "i")
def binary_cross_entropy(g, self, target, weight, reduction):
    """-(y * log(x) + (1 - y) * log(1 - x)), times weight, reduced; each log clamped at -100 as PyTorch does, so a
    probability of exactly 0 or 1 gives a finite loss."""
    one = _scalar(g, 1.0, self)
    log_x, log_rest = (clamp_value(g, g.op("Log", p), -100.0, None) for p in (self, g.op("Sub", one, self)))
    loss = g.op("Neg", g.op("Add", g.op("Mul", target, log_x), g.op("Mul", g.op("Sub", one, target), log_rest)))
    if weight is not None:
        loss = g.op("Mul", loss, cast(g, weight, g.dtype(self)))
    return _reduced(g, loss, reduction)


@symbolic("aten::binary_cross_entropy_with_logits")
@parse_args("v", "v", "v", "v", "i")
def binary_cross_entropy_with_logits(g, self, target, weight, pos_weight, reduction):
    """(1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x), times weight, reduced. softplus(-x) is
    -log_sigmoid(x) in its overflow-free form."""
    dtype = g.dtype(self)
    softplus_neg = stable_softplus(g, g.op("Neg", self))
    one = _scalar(g, 1.0, self)
    if pos_weight is not None:
        scale = g.op("Add", one, g.op("Mul", g.op("Sub", cast(g, pos_weight, dtype), one), target))
        softplus_neg = g.op("Mul", scale, softplus_neg)
    loss = g.op("Add", g.op("Mul", g.op("Sub", one, target), self), softplus_neg)
    if weight is not None:
        loss = g.op("Mul", loss, cast(g, weight, dtype))
    return _reduced(g, loss, reduction)


@symbolic("aten::kl_div")
@parse_args("v", "v", "i", "b")
def kl_div(g, self, target, reduction, log_target=False):
    """kl_div(input (log-probabilities), target, reduction, log_target): target * (log(target) - input), where a
    zero target contributes 0 (xlogy); with log_target, exp(target) * (target - input)."""
    if log_target:
        loss = g.op("Mul", g.op("Exp", target), g.op("Sub", target, self))
    else:
        zero = _scalar(g, 0.0, target)
        entropy_term = select(g, equal(g, target, zero), zero, g.op("Mul", target, g.op("Log", target)))
        loss = g.op("Sub", entropy_term, g.op("Mul", target, self))
    return _reduced(g, loss, reduction)


@symbolic("aten::mse_loss")
@parse_args("v", "v", "i")
def mse_loss(g, self, target, reduction):
    """mse_loss(input, target, reduction): (input - target) ** 2, the two broadcast, then reduced."""
    difference = g.op("Sub", self, target)
    return _reduced(g, g.op("Mul", difference, difference), reduction)


@symbolic("aten::l1_loss")
@parse_args("v", "v", "i")
def l1_loss(g, self, target, reduction):
    """l1_loss(input, target, reduction): |input - target|, the two broadcast, then reduced."""
    return _reduced(g, g.op("Abs", g.op("Sub", self, target)), reduction)
