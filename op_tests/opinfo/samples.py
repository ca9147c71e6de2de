"""PyTorch's OpInfo database as export cases: each sample input of each OpInfo, wrapped in a module.

An OpInfo (``torch.testing._internal.common_methods_invocations.op_db``) names an operator, the dtypes it
supports, and a generator of sample inputs (a tensor plus positional and keyword arguments). A sample becomes
a module whose forward takes the sample's tensors (wherever they sit: first argument, inside a list, in a
keyword) and calls the operator with every non-tensor argument fixed, exactly as ``torch.onnx.export`` bakes
non-tensor arguments into the graph.

Samples are generated with a fixed seed per (OpInfo, dtype), so index ``k`` always names the same inputs.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

# The dtypes tried besides float32 when the OpInfo lists them; ORT's CPU kernels cover these best.
DTYPES = (torch.float32, torch.int64, torch.bool, torch.float16)
SAMPLE_SEED = 0


@functools.lru_cache(maxsize=1)
def op_db() -> tuple:
    """Every OpInfo of the pinned torch (702 in torch 2.13); importing it takes ~15 s, so once per process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db as database
    return tuple(database)


def opinfo_key(opinfo) -> str:
    """``name`` or ``name.variant``: unique over op_db, used in case ids and the expectations file."""
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


@functools.lru_cache(maxsize=1)
def opinfos_by_key() -> dict:
    return {opinfo_key(o): o for o in op_db()}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def listed_dtypes(opinfo) -> list[torch.dtype]:
    """The dtypes of ``DTYPES`` that the OpInfo supports on CPU, float32 first."""
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in DTYPES if d in supported]


@dataclass
class OpSample:
    """One sample input of one OpInfo at one dtype: the unit the suite exports at every opset."""

    opinfo: Any
    dtype: torch.dtype
    index: int
    sample: Any  # torch.testing._internal.opinfo.core.SampleInput

    @property
    def key(self) -> str:
        return opinfo_key(self.opinfo)

    @property
    def name(self) -> str:
        """``op[.variant]/dtype/sN``: the case name in results rows."""
        return f"{self.key}/{dtype_name(self.dtype)}/s{self.index}"

    def structure(self) -> tuple[list[torch.Tensor], Callable[[list], Any]]:
        """The sample's tensors in order and a function rebuilding (input, args, kwargs) from new tensors."""
        return flatten_tensors((self.sample.input, tuple(self.sample.args), dict(self.sample.kwargs)))

    def tensors(self) -> list[torch.Tensor]:
        return self.structure()[0]

    def module(self) -> torch.nn.Module:
        return SampleModule(self.opinfo.op, self.structure()[1])

    def signature(self) -> tuple:
        """What must agree for another sample to feed this one's dynamic export: the constants baked into the
        graph (every non-tensor argument) and each tensor's dtype and rank."""
        tensors, rebuild = self.structure()
        return (repr(rebuild([_TensorMark(t.dtype, t.dim()) for t in tensors])),)

    def describe(self) -> str:
        """A short human description: shapes of the tensors and the constant arguments."""
        return _describe(self.sample)


def flatten_tensors(obj: Any) -> tuple[list[torch.Tensor], Callable[[list], Any]]:
    """Tensor leaves of nested lists, tuples (named too) and dicts, and a function rebuilding the structure from
    new leaves. Other values, tuple subclasses such as ``torch.Size`` included, are constants kept as they are."""
    leaves: list[torch.Tensor] = []

    def walk(node: Any) -> Callable[[list], Any]:
        if isinstance(node, torch.Tensor):
            index = len(leaves)
            leaves.append(node)
            return lambda flat: flat[index]
        if type(node) in (list, tuple) or (isinstance(node, tuple) and hasattr(node, "_fields")):
            parts = [walk(item) for item in node]
            kind = type(node)
            make = kind if kind in (list, tuple) else (lambda items: kind(*items))
            return lambda flat: make([p(flat) for p in parts])
        if type(node) is dict:
            items = {key: walk(value) for key, value in node.items()}
            return lambda flat: {key: p(flat) for key, p in items.items()}
        return lambda flat: node

    rebuild = walk(obj)
    return leaves, rebuild


class _TensorMark:
    """Stands for a tensor in a signature: its dtype and rank, not its sizes or values."""

    def __init__(self, dtype: torch.dtype, rank: int):
        self.text = f"Tensor[{dtype_name(dtype)}, rank {rank}]"

    def __repr__(self) -> str:
        return self.text


class SampleModule(torch.nn.Module):
    """Calls ``op`` on the sample's structure rebuilt from the forward's tensors (constants stay fixed)."""

    def __init__(self, op: Callable, rebuild: Callable[[list], Any]):
        super().__init__()
        self.op = op
        self.rebuild = rebuild

    def forward(self, *tensors):
        first, args, kwargs = self.rebuild(list(tensors))
        return self.op(first, *args, **kwargs)


def _describe(sample) -> str:
    def show(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return f"T{list(value.shape)}"
        if isinstance(value, (list, tuple)):
            inner = ", ".join(show(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner})"
        return repr(value)

    parts = [show(sample.input)] + [show(a) for a in sample.args] + [f"{k}={show(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)[:300]


def samples(opinfo, dtype: torch.dtype, limit: int | None = None) -> list[OpSample]:
    """The sample inputs of ``opinfo`` at ``dtype`` (the first ``limit``, or all), generated under a fixed seed so
    that index ``k`` always names the same inputs."""
    torch.manual_seed(SAMPLE_SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = list(itertools.islice(opinfo.sample_inputs("cpu", dtype, requires_grad=False), limit))
    return [OpSample(opinfo, dtype, index, sample) for index, sample in enumerate(generated)]


def dynamic_partner(target: OpSample, candidates: list[OpSample]) -> tuple[OpSample, dict[int, list[int]]] | None:
    """Another sample that can feed ``target``'s dynamic export, and the axes (per tensor) whose sizes differ.

    The partner bakes the same constants into the graph, has tensors of the same dtypes and ranks, and differs
    in size somewhere. Sizes 0 and 1 are never made dynamic: a trace specialises on them (broadcasting, empty
    tensors), as every tracing exporter does, so they say nothing about dynamic axes.
    """
    signature = target.signature()
    shapes = [t.shape for t in target.tensors()]
    for other in candidates:
        if other.index == target.index or other.signature() != signature:
            continue
        axes: dict[int, list[int]] = {}
        for position, (mine, theirs) in enumerate(zip(shapes, (t.shape for t in other.tensors()), strict=True)):
            differing = [axis for axis, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
            if any(min(mine[axis], theirs[axis]) <= 1 for axis in differing):
                axes = {}
                break
            if differing:
                axes[position] = differing
        if axes:
            return other, axes
    return None


def iter_samples(keys: list[str], dtypes: list[torch.dtype] | None = None) -> Iterator[tuple[OpSample, list[OpSample]]]:
    """(sample, all samples of its OpInfo and dtype) for each requested OpInfo and dtype."""
    table = opinfos_by_key()
    for key in keys:
        opinfo = table[key]
        for dtype in listed_dtypes(opinfo):
            if dtypes is not None and dtype not in dtypes:
                continue
            group = samples(opinfo, dtype)
            for sample in group:
                yield sample, group
