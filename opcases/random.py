"""Cases for the random ops. ONNX Runtime draws its own numbers, so these compare by shape, dtype and
distribution (``compare="distribution"``: a two-sample Kolmogorov-Smirnov test), never value by value; each
output holds a few thousand draws so that the test can tell distributions apart. Size variant 1 adds rows.
"""

import torch

from opcases import OpCase, no_kernel_from_22


def _grid(k, dtype=torch.float32):
    return (torch.rand(64 + 8 * k, 64, dtype=dtype),)


def _weights(k):
    return (torch.rand(400 + 40 * k, 6) + 0.05,)


def _random(op, inputs, fn, sample="", **kwargs):
    """A case drawing with ONNX's random ops, whose opset-22 versions ONNX Runtime 1.31 has no kernel for."""
    kwargs.setdefault("known_failures", no_kernel_from_22("RandomUniform/RandomNormal/Multinomial"))
    return OpCase(op, inputs, sample=sample, fn=fn, compare="distribution", **kwargs)


CASES = [
    _random("rand", _grid, lambda x: torch.rand(64, 64) + x * 0, dynamic=False),  # a size fixed in the model
    _random("randn", _grid, lambda x: torch.randn(x.size(), dtype=torch.double), sample="run_time_size_double"),
    _random("rand_like", _grid, lambda x: torch.rand_like(x, dtype=torch.double)),
    _random("randn_like", _grid, lambda x: torch.randn_like(x)),
    _random("randint", _grid, lambda x: torch.randint(-3, 5, x.shape)),
    _random("randint_like", _grid, lambda x: torch.randint_like(x, 7)),
    _random("bernoulli", _grid, torch.bernoulli),
    _random("bernoulli", lambda k: _grid(k, torch.double), lambda x: torch.bernoulli(x, 0.2), sample="p_double"),
    _random("bernoulli_", _grid, lambda x: torch.rand_like(x).bernoulli_(x), sample="tensor_p"),
    _random("multinomial", _weights, lambda w: torch.multinomial(w, 5, replacement=True), sample="replacement"),
    # Without replacement: the Gumbel-top-k construction.
    _random("multinomial", _weights, lambda w: torch.multinomial(w, 4), sample="no_replacement"),
    _random("normal", _grid, lambda x: torch.normal(x * 4, 2.0), sample="tensor_mean"),
    _random("normal", _grid, lambda x: torch.normal(x, x + 1), sample="tensor_mean_std"),
    _random("uniform_", _grid, lambda x: torch.empty_like(x).uniform_(-2, 5)),
    _random("normal_", _grid, lambda x: torch.empty_like(x).normal_(2, 5)),
]

# Dropout that the call itself trains (F.dropout(training=True), or nn.Dropout in a training export): elementwise
# forms compare by distribution; the feature forms drop whole channels, whose few draws a distribution test cannot
# judge, so they are checked at p = 1, where PyTorch gives zeros.
CASES += [
    _random("dropout", _grid, lambda x: torch.nn.functional.dropout(x, 0.3, training=True), sample="training_call",
            known_failures={}),  # ONNX's Dropout, whose opset-22 version ONNX Runtime runs
    _random("alpha_dropout", _grid, lambda x: torch.nn.functional.alpha_dropout(x, 0.4, training=True),
            sample="training_call"),
    OpCase("feature_dropout", lambda k: (torch.randn(2 + k, 3, 4, 4),), sample="p1_zeros",
           fn=lambda x: torch.nn.functional.dropout2d(x, 1.0, training=True)),
    OpCase("feature_alpha_dropout", lambda k: (torch.randn(2 + k, 3, 4),), sample="p1_zeros",
           fn=lambda x: torch.nn.functional.feature_alpha_dropout(x, 1.0, training=True)),
]

# One weight vector (ONNX's Multinomial draws per row of a [batch, classes] input; OpInfo multinomial sample 4).
CASES += [
    _random("multinomial", lambda k: (torch.rand(6) + 0.05,), lambda w: torch.multinomial(w, 2000, replacement=True),
            sample="1d_weights", dynamic=False),
]
