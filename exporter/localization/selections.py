"""Data-dependent selections in a captured graph: the decision nodes (float data in, integers or bools out: top-k,
NMS, thresholds), every value computed after one, and the values entering them, for
:class:`exporter.verify.SelectionCheck`. Each captured graph describes its top-level nodes as :class:`Step` s (see
``exporter.localization.captured``); the analysis itself is the same for every capture."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

# Ops ranking their first input along ``dim``: exactly equal elements may come in either order.
RANKING = ("aten::topk", "aten::sort", "aten::argsort")
# Ops whose integer result depends on a float tensor's shape only: not decisions.
SHAPE_QUERIES = ("aten::size", "aten::_shape_as_tensor", "aten::numel", "aten::dim", "aten::len", "prim::shape",
                 "onnx::Shape", "aten::sym_size", "aten::sym_numel", "aten::sym_stride", "aten::sym_storage_offset")
# Ops reading some arguments (by schema position) for their shape or dtype only: those carry no data into the result.
SHAPE_ONLY_ARGUMENTS = {"aten::expand_as": (1,), "aten::view_as": (1,), "aten::reshape_as": (1,),
                        "aten::type_as": (1,), "aten::zeros_like": (0,), "aten::ones_like": (0,),
                        "aten::empty_like": (0,), "aten::full_like": (0,), "aten::new_zeros": (0,),
                        "aten::new_ones": (0,), "aten::new_empty": (0,), "aten::new_full": (0,)}

# What a value is, to the analysis: a tensor of a float (non-integral) type, a tensor of an integral or bool type,
# or anything else (a number, a list, a shape).
FLOAT, INTEGRAL, OTHER = "float", "integral", "other"


@dataclass
class Step:
    """One top-level node of a captured graph, in graph order: its op kind, the values it reads for their data
    (shape-only arguments left out; its subgraphs' reads of outer values included), each with its :data:`FLOAT` /
    :data:`INTEGRAL` / :data:`OTHER` class, the values it computes, and the values that may enter a selection
    through it (every tensor it reads that is computed in the graph, not a constant)."""

    kind: str
    reads: Sequence[tuple[Hashable, str]]
    outputs: Sequence[tuple[Hashable, str]]
    frontier_reads: Sequence[Hashable] = field(default_factory=list)


@dataclass
class Selections:
    """The decisions' op kinds (one per decision node), the keys of every value computed from a decision's result
    (theirs included: *post-selection*) and the *frontier*, the pre-selection values a decision or a post-selection
    node reads."""

    decisions: list[str]
    post: set[Hashable]
    frontier: set[Hashable]


def selections(inputs: Iterable[Hashable], steps: list[Step]) -> Selections:
    """The selections of a graph whose inputs (data: the model's inputs and its state) are ``inputs``.

    A decision is a step reading a float tensor computed from the inputs' data and computing an integer or bool
    tensor. Values computed from shapes only (an image's size turned into a resize's output size) carry no data: no
    decision there.
    """
    decisions: list[str] = []
    post: set[Hashable] = set()
    data = set(inputs)
    for step in steps:
        read_keys = [key for key, _ in step.reads]
        output_keys = [key for key, _ in step.outputs]
        if step.kind not in SHAPE_QUERIES and any(key in data for key in read_keys):
            data.update(output_keys)
        if any(key in post for key in read_keys):
            post.update(output_keys)
            continue
        if (step.kind not in SHAPE_QUERIES and any(kind == FLOAT and key in data for key, kind in step.reads)
                and any(kind == INTEGRAL for _, kind in step.outputs)):
            decisions.append(step.kind)
            post.update(output_keys)
    frontier = {key for step in steps if any(out in post for out, _ in step.outputs)
                for key in step.frontier_reads if key not in post}
    return Selections(decisions, post, frontier)
