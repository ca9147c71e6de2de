"""Cases for the losses: nll_loss (1-d, n-d, weights, ignore_index), cross_entropy (class and probability targets,
label smoothing), binary_cross_entropy (probabilities of exactly 0 and 1), binary_cross_entropy_with_logits (weight, pos_weight) and kl_div, with each reduction.

Size variant 1 changes the batch (and the spatial size of the n-d cases), and targets include ignored entries.
"""

import torch
import torch.nn.functional as F

from opcases import OpCase


def _classes(spatial=(), classes=4, ignored=None):
    def make(k):
        shape = (3 + k, *[s + k for s in spatial])
        target = torch.arange(torch.Size(shape).numel()).reshape(shape) % classes
        if ignored is not None:
            target.view(-1)[1] = ignored
        return torch.randn(shape[0], classes, *shape[1:]), target
    return make


def _binary(k):
    x = torch.randn(3 + k, 4) * 5
    return x, (torch.randn(3 + k, 4) > 0).float(), torch.rand(4) + 0.5


def _probabilities(k):
    """Probabilities including exactly 0 and 1, where PyTorch clamps each log at -100, and soft targets."""
    p = torch.rand(3 + k, 4)
    p[0, :2] = torch.tensor([0.0, 1.0])
    return p, torch.rand(3 + k, 4)


def _distributions(k):
    x = torch.randn(3 + k, 4)
    target = F.softmax(torch.randn(3 + k, 4), 1)
    target[0, 1] = 0.0  # a zero target contributes nothing (0 * log 0 = 0)
    return F.log_softmax(x, 1), target


_WEIGHT = torch.tensor([0.5, 1.0, 2.0, 1.5])

# Picking each sample's target class is a Where over target == class: opset 9.
CASES = [
    OpCase("nll_loss", _classes(ignored=-100), sample="mean_ignored",
           fn=lambda x, t: F.nll_loss(F.log_softmax(x, 1), t), min_opset=9),
    OpCase("nll_loss", _classes(ignored=2), sample="weight_ignore_index_none",
           fn=lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, _WEIGHT, ignore_index=2, reduction="none"), min_opset=9),
    OpCase("nll_loss_nd", _classes(spatial=(2, 3), ignored=1), sample="weight_mean",
           fn=lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, _WEIGHT, ignore_index=1), min_opset=9),
    OpCase("cross_entropy_loss", _classes(spatial=(2,), ignored=-100), sample="label_smoothing_weight_sum",
           fn=lambda x, t: F.cross_entropy(x, t, _WEIGHT, reduction="sum", label_smoothing=0.2), min_opset=9),
    OpCase("cross_entropy_loss", _classes(), sample="label_smoothing_mean",
           fn=lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), min_opset=9),
    OpCase("cross_entropy_loss", lambda k: (torch.randn(3 + k, 4), F.softmax(torch.randn(3 + k, 4), 1)),
           sample="probability_target", fn=lambda x, p: F.cross_entropy(x, p, _WEIGHT)),
    OpCase("binary_cross_entropy", _probabilities, sample="mean", fn=lambda p, y: F.binary_cross_entropy(p, y)),
    OpCase("binary_cross_entropy", _probabilities, sample="weight_sum",
           fn=lambda p, y: F.binary_cross_entropy(p, y, _WEIGHT, reduction="sum")),
    OpCase("binary_cross_entropy", _probabilities, sample="none", fn=lambda p, y: F.binary_cross_entropy(p, y, reduction="none")),
    OpCase("binary_cross_entropy_with_logits", _binary, sample="weight_pos_weight_mean",
           fn=lambda x, y, p: F.binary_cross_entropy_with_logits(x, y, _WEIGHT, pos_weight=p)),
    OpCase("binary_cross_entropy_with_logits", _binary, sample="none",
           fn=lambda x, y, p: F.binary_cross_entropy_with_logits(x, y, reduction="none") * p),
    # A zero target's 0 * log(0) needs Where (opset 9); log_target needs nothing beyond opset 7.
    OpCase("kl_div", _distributions, sample="batchmean", fn=lambda x, t: F.kl_div(x, t, reduction="batchmean"),
           min_opset=9),
    OpCase("kl_div", _distributions, sample="log_target_sum",
           fn=lambda x, t: F.kl_div(x, torch.log(t + 0.1), reduction="sum", log_target=True)),
    # Scripted, reduction="mean" runs aten::warn (mean is not batchmean), a side effect that exports to nothing.
    OpCase("kl_div", _distributions, sample="scripted_mean_warns", min_opset=9,
           module=lambda: torch.jit.script(torch.nn.KLDivLoss(reduction="mean"))),
]

# Mean squared and absolute errors, each reduction; the target broadcasts against the input (PyTorch warns).
CASES += [
    OpCase("mse_loss", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4)), fn=lambda x, t: F.mse_loss(x, t)),
    OpCase("mse_loss", lambda k: (torch.randn(3 + k, 4), torch.randn(4)), sample="broadcast_sum",
           fn=lambda x, t: F.mse_loss(x, t.expand_as(x), reduction="sum")),
    OpCase("mse_loss", lambda k: (torch.randn(2, 3 + k), torch.randn(2, 3 + k)), sample="none",
           module=lambda: torch.nn.MSELoss(reduction="none")),
    OpCase("l1_loss", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4)), fn=lambda x, t: F.l1_loss(x, t)),
    OpCase("l1_loss", lambda k: (torch.randn(3 + k, 4), torch.randn(3 + k, 4)), sample="sum",
           fn=lambda x, t: F.l1_loss(x, t, reduction="sum")),
]
