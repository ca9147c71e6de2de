"""Random ops: rand/randn/randint (and their _like forms), bernoulli, multinomial, normal, uniform_/normal_.

Each becomes one of ONNX's random operators, which exist from opset 1: RandomUniform/RandomNormal for a shape
known at export time, RandomUniformLike/RandomNormalLike for one known at run time (drawn "like" a tensor of
that shape), Multinomial for sampling with replacement. ONNX Runtime draws its own numbers, so an export
matches PyTorch in shape, dtype and distribution, never value by value. An explicit ``torch.Generator`` argument
becomes the ONNX ``seed`` (its initial seed), so the exported model draws the same numbers on every run.

The random operators produce float16/float/double only: other float types are drawn in float and cast.
"""

from __future__ import annotations

import torch
from onnx import TensorProto

from exporter import dtypes
from exporter.dtypes import FLOAT, INT64
from exporter.lowering.arithmetic import clamp_value
from exporter.lowering.comparison import less
from exporter.lowering.core import cast, constant_value, is_value, require_rank, squeeze, torch_dtype_arg, unsqueeze
from exporter.lowering.factories import filled
from exporter.lowering.sorting import top_k
from exporter.registry import symbolic, unsupported

_DRAWABLE = (TensorProto.FLOAT16, FLOAT, TensorProto.DOUBLE)


def _seed(g, args) -> dict:
    """``seed_f`` from a constant torch.Generator argument; nothing (ONNX Runtime picks) when none is given."""
    generator = g.argument(args, "generator")
    if isinstance(generator, torch.Generator):
        return {"seed_f": float(generator.initial_seed())}
    if generator is not None:
        raise unsupported(g.op_kind, g.opset, "a random generator computed at run time")
    return {}


def _draw(g, args, kind: str, dtype: int, shape=None, like=None, **distribution):
    """Numbers of ``kind`` ("Uniform" or "Normal") of element type ``dtype``, in a tensor of ``shape`` (a list of
    ints and/or run-time sizes, or a 1-D shape value) or of the shape of the tensor ``like``."""
    drawn = dtype if dtype in _DRAWABLE else FLOAT
    attributes = dict(dtype_i=drawn, **distribution, **_seed(g, args))
    if like is None and isinstance(shape, list) and not any(is_value(s) for s in shape):
        out = g.op(f"Random{kind}", shape_i=[int(constant_value(s)) for s in shape], **attributes)
    else:
        out = g.op(f"Random{kind}Like", like if like is not None else filled(g, shape, 0, drawn), **attributes)
    out.dtype = drawn
    return cast(g, out, dtype)


def _like(g, x):
    """What to draw "like" to get ``x``'s shape: the static shape as a list, else ``x`` itself."""
    dims = g.static_dims(x)
    return (dims, None) if dims is not None else (None, g.value(x))


def _size(size):
    """A size argument: a list (of ints and/or run-time sizes), or a 1-D shape value computed at run time."""
    if isinstance(size, (list, tuple)):
        return list(size)
    return size if is_value(size) and size.const is None else constant_value(size)


def _result_type(g, args, default: int | None) -> int:
    """The explicit ``dtype`` argument, else the type TorchScript recorded (scripts record none), else ``default``."""
    explicit = torch_dtype_arg(g.argument(args, "dtype"))
    if explicit is not None:
        return dtypes.onnx_from_torch(explicit)
    return g.output_dtype() or default or FLOAT


@symbolic("aten::rand")
def rand(g, size, *args):
    """rand(size, [generator], dtype, ...): uniform on [0, 1)."""
    return _draw(g, (size, *args), "Uniform", _result_type(g, (size, *args), FLOAT), _size(size), low_f=0.0,
                 high_f=1.0)


@symbolic("aten::randn")
def randn(g, size, *args):
    """randn(size, [generator], dtype, ...): standard normal."""
    return _draw(g, (size, *args), "Normal", _result_type(g, (size, *args), FLOAT), _size(size), mean_f=0.0,
                 scale_f=1.0)


@symbolic("aten::rand_like")
def rand_like(g, self, *args):
    """rand_like(self, dtype, ...)."""
    dtype = _result_type(g, (self, *args), g.dtype(self))
    return _draw(g, (self, *args), "Uniform", dtype, *_like(g, self), low_f=0.0, high_f=1.0)


@symbolic("aten::randn_like")
def randn_like(g, self, *args):
    """randn_like(self, dtype, ...)."""
    dtype = _result_type(g, (self, *args), g.dtype(self))
    return _draw(g, (self, *args), "Normal", dtype, *_like(g, self), mean_f=0.0, scale_f=1.0)


def _random_integers(g, args, low, high, dtype: int, shape=None, like=None):
    """Integers uniform on [low, high): the floor of a uniform draw on [low, high), kept below ``high`` where
    float rounding reaches it."""
    low, high = int(constant_value(low)), int(constant_value(high))
    exact = FLOAT if max(abs(low), abs(high)) <= 2**24 else TensorProto.DOUBLE  # every integer in range representable
    drawn = _draw(g, args, "Uniform", exact, shape, like, low_f=float(low), high_f=float(high))
    integers = clamp_value(g, g.op("Floor", drawn), low, high - 1)
    return cast(g, integers, dtype)


@symbolic("aten::randint")
def randint(g, *args):
    """randint(high, size, ...) / randint.low(low, high, size, ...): int64 unless a dtype is given."""
    low = g.argument(args, "low") or 0
    high, size = g.argument(args, "high"), g.argument(args, "size")
    return _random_integers(g, args, low, high, _result_type(g, args, INT64), _size(size))


@symbolic("aten::randint_like")
def randint_like(g, self, *args):
    """randint_like(self, high, ...) / randint_like.low_dtype(self, low, high, ...): self's dtype unless given."""
    args = (self, *args)
    low = g.argument(args, "low") or 0
    high = g.argument(args, "high")
    return _random_integers(g, args, low, high, _result_type(g, args, g.dtype(self)), *_like(g, self))


@symbolic("aten::bernoulli", "aten::bernoulli_")
def bernoulli(g, self, *args):
    """bernoulli(self) draws 1 with probability self; bernoulli(self, p) / self.bernoulli_(p) with probability p
    (a float or a tensor), shaped and typed like self: a uniform draw compared with the probability."""
    probability = g.argument((self, *args), "p")
    probability = self if probability is None else probability
    dtype = g.output_dtype() or g.dtype(self)
    compute = dtype if dtype in _DRAWABLE else FLOAT
    uniform = _draw(g, (self, *args), "Uniform", compute, *_like(g, self), low_f=0.0, high_f=1.0)
    return cast(g, less(g, uniform, cast(g, probability, compute)), dtype)


@symbolic("aten::multinomial")
def multinomial(g, self, num_samples, replacement=False, generator=None):
    """multinomial(weights, num_samples, replacement): ONNX Multinomial (log-weights in, int64 indices out) when
    drawing with replacement or a single sample; without replacement, the indices of the num_samples largest
    log-weights perturbed by Gumbel noise (the Gumbel-top-k construction of sampling without replacement)."""
    count = int(constant_value(num_samples))
    if require_rank(g, self) == 1:  # ONNX's Multinomial draws per row of a [batch, classes] input
        return squeeze(g, multinomial(g, unsqueeze(g, self, [0]), num_samples, replacement, generator), [0])
    seed = _seed(g, (self, num_samples, replacement, generator))
    log_weights = g.op("Log", self)
    if bool(constant_value(replacement)) or count == 1:
        samples = g.op("Multinomial", log_weights, sample_size_i=count, dtype_i=INT64, **seed)
        samples.dtype = INT64
        return samples
    uniform = g.op("RandomUniformLike", log_weights, low_f=0.0, high_f=1.0, **seed)
    gumbel = g.op("Neg", g.op("Log", g.op("Neg", g.op("Log", uniform))))
    _, indices = top_k(g, g.op("Add", log_weights, gumbel), count, require_rank(g, self) - 1)
    return indices


@symbolic("aten::normal")
def normal(g, mean, std, *args):
    """normal(mean, std[, size]): mean and std may each be a float or a tensor (the result broadcasts them)."""
    size = g.argument((mean, std, *args), "size")
    dtype = g.output_dtype() or g.dtype(mean if is_value(mean) else std) or FLOAT
    mean, std = cast(g, mean, dtype), cast(g, std, dtype)
    if size is not None:
        shape, like = _size(size), None
    else:  # the shape mean and std broadcast to
        shape, like = None, g.op("Add", mean, std)
    standard = _draw(g, (mean, std, *args), "Normal", dtype, shape, like, mean_f=0.0, scale_f=1.0)
    return g.op("Add", g.op("Mul", standard, std), mean)


@symbolic("aten::normal_", "aten::normal_functional")
def normal_(g, self, mean=0.0, std=1.0, generator=None):
    """self.normal_(mean, std): self's shape and type, normal with that mean and std."""
    dtype = g.dtype(self)
    mean, std = float(constant_value(mean)), float(constant_value(std))
    return _draw(g, (self, mean, std, generator), "Normal", dtype, *_like(g, self), mean_f=mean, scale_f=std)


@symbolic("aten::uniform_", "aten::uniform")
def uniform_(g, self, low=0.0, high=1.0, generator=None):
    """self.uniform_(from, to): self's shape and type, uniform on [from, to)."""
    dtype = g.dtype(self)
    low, high = float(constant_value(low)), float(constant_value(high))
    return _draw(g, (self, low, high, generator), "Uniform", dtype, *_like(g, self), low_f=low, high_f=high)
