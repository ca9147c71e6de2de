"""Cases for indexing: slices, select, gathers, advanced indexing, index_put, scatters, masks, nonzero, one_hot.

Index and mask tensors are model inputs (so they are not folded away); their contents are fixed per size variant.
"""

import torch
import torch.nn.functional as F

from opcases import CUDA_EMPTY_REDUCTION, OPSETS, OpCase, random_tensor


def _idx(high, *shape):
    return torch.randint(0, high, shape, dtype=torch.int64)


def _perm(n, take):
    return torch.randperm(n)[:take]


def _mask(*shape):
    mask = torch.randn(*shape) > 0
    mask.view(-1)[0] = True  # never empty
    return mask


class _SliceList(torch.nn.Module):
    """A scripted slice of a list of tensors (aten::slice.t), resolved at export time."""

    def forward(self, x):
        parts = [x, x.t().t(), x.unsqueeze(0).squeeze(0), x.permute(1, 0).t()]
        return torch.cat(parts[1::2], 0), torch.stack(parts[:2], 0)


def _sparse(*shape):
    return torch.randn(*shape).clamp(min=0)


class _SizesLists(torch.nn.Module):
    """Slices of ``x.shape`` (aten::slice.t) and their concatenation (aten::add.t) in scripted code."""

    def forward(self, x, y):
        # x.shape[0:2] read as a tensor slice (dim 0, start 2) and x.shape + y.shape as Add were silently wrong.
        return (x.reshape(x.shape[1:3] + x.shape[0:1] + [-1]), y.new_ones(x.shape[2:] + y.shape[-1:]) * y.sum(),
                torch.zeros(x.shape[0:2] + y.shape) + x.sum())


CASES = [
    # slice
    OpCase("slice", lambda k: (random_tensor(2 + k, 6),), fn=lambda x: x[:, 1:4]),
    OpCase("slice", lambda k: (random_tensor(2 + k, 7),), sample="step", fn=lambda x: x[:, 1::2]),
    OpCase("slice", lambda k: (random_tensor(7 + k, 3, dtype=torch.int64),), sample="step_dynamic_dim", fn=lambda x: x[1:-1:3],
           dynamic_min_opset=10),
    OpCase("slice", lambda k: (random_tensor(2 + k, 6, dtype=torch.bool),), sample="negative_bounds", fn=lambda x: x[:, -4:-1]),
    OpCase("slice", lambda k: (random_tensor(5 + k, 4),), sample="dynamic_end", fn=lambda x: x[: x.size(0) - 2],
           dynamic_min_opset=10),
    OpCase("slice", lambda k: (random_tensor(2 + k, 3),), sample="scripted_list", module=lambda: torch.jit.script(_SliceList())),
    # Sizes lists of tensors with dynamic dims are 1-d tensors: sliced as lists and concatenated (aten::add.t).
    OpCase("slice", lambda k: (random_tensor(2 + k, 3 + k, 4, 1 + k), random_tensor(1, 2 + k, 3)), sample="scripted_sizes_list",
           module=lambda: torch.jit.script(_SizesLists())),
    # select
    OpCase("select", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x[:, 1]),
    OpCase("select", lambda k: (random_tensor(2 + k, 3, 4, dtype=torch.int32),), sample="negative", fn=lambda x: x[..., -1]),
    OpCase("select", lambda k: (random_tensor(3 + k, 4),), sample="negative_dynamic_dim", fn=lambda x: x[-2]),
    OpCase("select", lambda k: (random_tensor(3 + k, 4, dtype=torch.float16),), sample="float16", fn=lambda x: x[:, 2]),
    # index_select / gather / take_along_dim
    OpCase("index_select", lambda k: (random_tensor(3, 5 + k), _idx(3, 4 + k)), fn=lambda x, i: x.index_select(0, i)),
    OpCase("index_select", lambda k: (random_tensor(3, 2 + k, dtype=torch.bool), _idx(3, 5)), sample="bool",
           fn=lambda x, i: x.index_select(0, i)),
    OpCase("index_select", lambda k: (random_tensor(3 + k, 5, dtype=torch.int64), _idx(5, 2)), sample="negative_dim",
           fn=lambda x, i: torch.index_select(x, -1, i)),
    OpCase("gather", lambda k: (random_tensor(3, 4), _idx(4, 3, 2)), fn=lambda x, i: x.gather(1, i)),
    OpCase("gather", lambda k: (random_tensor(3, 4, dtype=torch.bool), _idx(3, 2, 4)), sample="bool", fn=lambda x, i: x.gather(0, i)),
    OpCase("gather", lambda k: (random_tensor(3 + k, 4, 2), _idx(3 + k, 2, 4, 2)), sample="dim0_smaller_index",
           fn=lambda x, i: torch.gather(x, 0, i), dynamic_min_opset=9),
    OpCase("gather", lambda k: (random_tensor(3 + k, 4, dtype=torch.bool), _idx(4, 3 + k, 2)), sample="bool_dynamic",
           fn=lambda x, i: torch.gather(x, 1, i), dynamic_min_opset=10),
    OpCase("gather", lambda k: (random_tensor(3, 4, dtype=torch.int64), _idx(3, 2, 4)), sample="int64_static",
           fn=lambda x, i: torch.gather(x, -2, i)),
    OpCase("take_along_dim", lambda k: (random_tensor(3, 4), _idx(4, 3, 2)), fn=lambda x, i: torch.take_along_dim(x, i, 1)),
    OpCase("take_along_dim", lambda k: (random_tensor(1, 4), _idx(4, 3, 2)), sample="broadcast", fn=lambda x, i: torch.take_along_dim(x, i, -1)),
    OpCase("take_along_dim", lambda k: (random_tensor(3, 4), _idx(12, 5)), sample="flat", fn=lambda x, i: torch.take_along_dim(x, i)),
    # Negative indices address from the end (OpInfo take_along_dim sample 4 was wrong at opsets 7-10).
    OpCase("take_along_dim", lambda k: (random_tensor(3, 5 + k), -1 - _idx(5, 3, 5)), sample="negative",
           fn=lambda x, i: torch.take_along_dim(x, i, 1), dynamic_min_opset=9),
    # scatter family
    OpCase("scatter", lambda k: (random_tensor(3, 5), _perm(5, 3).reshape(1, 3).repeat(2, 1), random_tensor(2, 4)), min_opset=9,
           fn=lambda x, i, s: x.scatter(1, i, s)),
    OpCase("scatter", lambda k: (random_tensor(4 + k, 3, dtype=torch.int64), torch.tensor([[1, 0, 2]])), sample="value_dim0", min_opset=9,
           fn=lambda x, i: x.scatter(0, i, 7)),
    OpCase("scatter", lambda k: (random_tensor(3, 5), _idx(5, 3, 4), random_tensor(3, 4)), sample="reduce_add",
           fn=lambda x, i, s: x.scatter(1, i, s, reduce="add")),
    OpCase("scatter", lambda k: (random_tensor(3, 5), _idx(5, 3, 4), random_tensor(3, 4)), sample="reduce_multiply", min_opset=16,
           fn=lambda x, i, s: x.scatter(1, i, s, reduce="multiply")),
    OpCase("scatter_add", lambda k: (random_tensor(3, 5 + k), _idx(5, 3, 6), random_tensor(3, 6)), fn=lambda x, i, s: x.scatter_add(1, i, s),
           dynamic_min_opset=9),
    OpCase("scatter_add", lambda k: (random_tensor(4, 5, 3), _idx(4, 6, 2, 2), random_tensor(6, 3, 3)), sample="smaller_index",
           fn=lambda x, i, s: x.scatter_add(0, i, s)),
    OpCase("scatter_add", lambda k: (random_tensor(3 + k, 5, dtype=torch.int64), _idx(5, 3 + k, 4), random_tensor(3 + k, 4, dtype=torch.int64)),
           sample="int64_dynamic_rows", fn=lambda x, i, s: x.scatter_add(-1, i, s), dynamic_min_opset=9),
    OpCase("scatter_add", lambda k: (random_tensor(4, 3), _idx(4, 6, 3), random_tensor(6, 3)), sample="static_dim0",
           fn=lambda x, i, s: x.scatter_add(0, i, s)),
    OpCase("scatter_reduce", lambda k: (random_tensor(3, 5), _idx(5, 3, 4), random_tensor(3, 4)), sample="sum",
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, "sum")),
    OpCase("scatter_reduce", lambda k: (random_tensor(3, 5), _idx(5, 3, 4), random_tensor(3, 4)), sample="prod_exclude_self", min_opset=16,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, "prod", include_self=False)),
    # index_add / index_copy / index_fill
    OpCase("index_add", lambda k: (random_tensor(5, 3 + k), _idx(5, 4), random_tensor(4, 3 + k)), fn=lambda x, i, s: x.index_add(0, i, s)),
    OpCase("index_add", lambda k: (random_tensor(3 + k, 5), _idx(5, 4), random_tensor(3 + k, 4)), sample="dim1_alpha",
           fn=lambda x, i, s: x.index_add(-1, i, s, alpha=2.0)),
    OpCase("index_add", lambda k: (random_tensor(5 + k, 3), _idx(5, 4), random_tensor(4, 3)), sample="dynamic_rows",
           fn=lambda x, i, s: x.index_add(0, i, s), dynamic_min_opset=9),
    OpCase("index_copy", lambda k: (random_tensor(5, 3 + k), _perm(5, 2), random_tensor(2, 3 + k)), min_opset=9,
           fn=lambda x, i, s: x.index_copy(0, i, s)),
    OpCase("index_copy", lambda k: (random_tensor(2 + k, 5, dtype=torch.int64), _perm(5, 3), random_tensor(2 + k, 3, dtype=torch.int64)),
           sample="dim1_int64", min_opset=9, fn=lambda x, i, s: x.index_copy(1, i, s)),
    # a static KV cache's write: one position along the sequence axis of a (batch, heads, max_len, head size) buffer,
    # TensorScatter from opset 24 (ScatterElements below); the position is an input, as a decode step's is
    OpCase("index_copy", lambda k: (random_tensor(2 + k, 2, 6, 4), torch.tensor([3 + k]), random_tensor(2 + k, 2, 1, 4)),
           sample="kv_cache_write", min_opset=9, fn=lambda x, i, s: x.index_copy(2, i, s)),
    OpCase("index_copy", lambda k: (random_tensor(2 + k, 6, 4, dtype=torch.int64), torch.tensor([5 - k]),
                                    random_tensor(2 + k, 1, 4, dtype=torch.int64)),
           sample="kv_cache_write_int64_dim1", min_opset=9, fn=lambda x, i, s: x.index_copy(1, i, s)),
    OpCase("index_fill", lambda k: (random_tensor(4, 3 + k), _perm(4, 2)), min_opset=9, fn=lambda x, i: x.index_fill(0, i, -1.5)),
    OpCase("index_fill", lambda k: (random_tensor(3 + k, 4, dtype=torch.int32), _perm(4, 2)), sample="dim1_int32", min_opset=9,
           fn=lambda x, i: x.index_fill(-1, i, 9)),
    # masks and nonzero
    OpCase("masked_select", lambda k: (random_tensor(3 + k, 4), _mask(3 + k, 4)), min_opset=9, fn=lambda x, m: x.masked_select(m)),
    OpCase("masked_select", lambda k: (random_tensor(3 + k, 4, dtype=torch.int64), _mask(4)), sample="broadcast", min_opset=9,
           fn=lambda x, m: torch.masked_select(x, m)),
    OpCase("masked_scatter", lambda k: (random_tensor(3 + k, 4), _mask(3 + k, 4), random_tensor(20)), min_opset=11,
           fn=lambda x, m, s: x.masked_scatter(m, s)),
    OpCase("masked_scatter", lambda k: (random_tensor(3 + k, 4), _mask(4), random_tensor(3 + k, 4)), sample="broadcast_mask", min_opset=11,
           fn=lambda x, m, s: x.masked_scatter(m, s)),
    OpCase("nonzero", lambda k: (_sparse(3 + k, 4),), min_opset=9, fn=lambda x: torch.nonzero(x)),
    OpCase("nonzero", lambda k: (_mask(3 + k, 2, 2),), sample="bool_3d", min_opset=9, fn=lambda x: x.nonzero()),
    OpCase("nonzero", lambda k: (random_tensor(5 + k, dtype=torch.int64),), sample="as_tuple", min_opset=9,
           fn=lambda x: torch.nonzero(x, as_tuple=True)),
    OpCase("where", lambda k: (_sparse(3 + k, 4),), sample="condition_only", min_opset=9,
           fn=lambda x: torch.where(x != 0)),
    OpCase("argwhere", lambda k: (random_tensor(3 + k, 4, dtype=torch.int32),), min_opset=9, fn=lambda x: torch.argwhere(x)),
    # one_hot
    OpCase("one_hot", lambda k: (_idx(4, 3 + k),), fn=lambda x: F.one_hot(x, 5)),
    OpCase("one_hot", lambda k: (_idx(3, 2 + k, 3),), sample="infer_classes", min_opset=9, fn=lambda x: F.one_hot(x)),
]

CASES += [
    OpCase("bucketize", lambda k: (torch.cat([random_tensor(3 + k, 4), torch.full((1, 4), float("nan"))]),
                                   torch.tensor([-1.0, 0.0, 0.5])), fn=torch.bucketize),
    OpCase("bucketize", lambda k: (torch.tensor([[2, 5, 10], [6, 8, 3]] + [[1, 7, 0]] * k), torch.tensor([1, 5, 7, 8, 10])),
           sample="right_int32", fn=lambda x, b: torch.bucketize(x, b, right=True, out_int32=True)),
    OpCase("take", lambda k: (random_tensor(3 + k, 4), torch.tensor([[0, -1], [5, -12]])), fn=torch.take),
]

# scatter_reduce with include_self=False below opset 16 (its neutral-filled input lost its rank: OpInfo
# scatter_reduce.sum sample 11) and on 0-d tensors (ONNX's scatters need rank >= 1: samples 18-20).
CASES += [
    OpCase("scatter_reduce", lambda k: (random_tensor(3 + k, 5), _idx(5, 3 + k, 4), random_tensor(3 + k, 4)), sample="sum_exclude_self",
           min_opset=9, fn=lambda x, i, s: x.scatter_reduce(1, i, s, "sum", include_self=False)),
    OpCase("scatter_reduce", lambda k: (torch.tensor(2.0 + k), torch.tensor(0), torch.tensor(-1.5)), sample="sum_0d",
           dynamic=False, fn=lambda x, i, s: x.scatter_reduce(0, i, s, "sum")),
    OpCase("scatter_reduce", lambda k: (torch.tensor(2.0 + k), torch.tensor(0), torch.tensor(-1.5)), sample="prod_0d",
           min_opset=16, dynamic=False, fn=lambda x, i, s: x.scatter_reduce(0, i, s, "prod", include_self=False)),
]

# 0-d operands (ONNX's gathers, scatters, Compress and OneHot need rank >= 1: the 0-d tensor goes in as its one
# element and the result comes back 0-d), an empty gather index, and inputs broadcast to their mask (OpInfo gather
# 4-6, index_select 0, index_copy 0, index_add 0-2, index_fill 0-1, scatter 21-26, scatter_add 6, masked_select
# 2-4 and 6, masked_scatter 3, one_hot 0-1).
_0D = dict(dynamic=False)
CASES += [
    OpCase("gather", lambda k: (torch.tensor(1.5), torch.tensor([0])), sample="0d_input", **_0D,
           fn=lambda x, i: torch.gather(x, 0, i)),
    OpCase("gather", lambda k: (torch.tensor(1.5), torch.tensor(0)), sample="0d_input_0d_index", **_0D,
           fn=lambda x, i: torch.gather(x, -1, i)),
    OpCase("gather", lambda k: (random_tensor(5 + k), torch.tensor(3)), sample="0d_index", dynamic_min_opset=9,
           fn=lambda x, i: torch.gather(x, 0, i)),
    OpCase("gather", lambda k: (torch.tensor(1.5), torch.tensor([0, 0, 0])), sample="0d_input_repeated", **_0D,
           fn=lambda x, i: torch.gather(x, 0, i)),
    OpCase("gather", lambda k: (random_tensor(5), torch.zeros(2, 0, dtype=torch.int64)), sample="empty_index", **_0D,
           fn=lambda x, i: torch.gather(x, 0, i)),
    OpCase("index_select", lambda k: (torch.tensor(2.5), torch.tensor([0])), sample="0d", **_0D,
           fn=lambda x, i: torch.index_select(x, 0, i)),
    OpCase("index_copy", lambda k: (torch.tensor(2.5), torch.tensor([0]), torch.tensor(-1.0)), sample="0d", **_0D,
           min_opset=9, fn=lambda x, i, s: x.index_copy(0, i, s)),
    OpCase("index_add", lambda k: (torch.tensor(2.5), torch.tensor([0]), torch.tensor(-1.0)), sample="0d_alpha", **_0D,
           fn=lambda x, i, s: x.index_add(0, i, s, alpha=2)),
    OpCase("index_fill", lambda k: (torch.tensor(2.5), torch.tensor([-1])), sample="0d", **_0D, min_opset=9,
           fn=lambda x, i: x.index_fill(0, i, -8.5)),
    OpCase("scatter", lambda k: (torch.tensor(2.5), torch.tensor(0), torch.tensor(-1.0)), sample="0d", **_0D,
           min_opset=9, fn=lambda x, i, s: x.scatter(0, i, s)),
    OpCase("scatter", lambda k: (torch.tensor(2.5), torch.tensor(0)), sample="0d_value_reduce_add", **_0D,
           fn=lambda x, i: x.scatter(0, i, 1.5, reduce="add")),
    OpCase("scatter", lambda k: (torch.tensor(2.5), torch.tensor(0), torch.tensor(-1.5)), sample="0d_reduce_multiply",
           **_0D, min_opset=16, fn=lambda x, i, s: x.scatter(0, i, s, reduce="multiply")),
    OpCase("scatter_add", lambda k: (torch.tensor(2.5), torch.tensor(0), torch.tensor(-1.0)), sample="0d", **_0D,
           fn=lambda x, i, s: x.scatter_add(0, i, s)),
    OpCase("masked_select", lambda k: (random_tensor(4), _mask(3 + k, 4)), sample="input_broadcast", min_opset=9,
           fn=lambda x, m: torch.masked_select(x, m)),
    OpCase("masked_select", lambda k: (random_tensor(3 + k, 1, 4), _mask(2, 4)), sample="both_broadcast", min_opset=9,
           fn=lambda x, m: torch.masked_select(x, m)),
    OpCase("masked_select", lambda k: (torch.tensor(2.5), torch.tensor(True)), sample="0d", **_0D, min_opset=9,
           fn=lambda x, m: torch.masked_select(x, m)),
    OpCase("masked_select", lambda k: (torch.tensor(2.5), _mask(3, 4)), sample="0d_input_2d_mask", **_0D, min_opset=9,
           fn=lambda x, m: torch.masked_select(x, m)),
    OpCase("masked_scatter", lambda k: (random_tensor(4), _mask(3 + k, 4), random_tensor(20)), sample="input_broadcast", min_opset=11,
           fn=lambda x, m, s: x.masked_scatter(m, s)),
    OpCase("one_hot", lambda k: (torch.tensor(3),), sample="0d", **_0D, fn=lambda x: F.one_hot(x, 5)),
    OpCase("one_hot", lambda k: (torch.tensor(3),), sample="0d_infer_classes", **_0D, min_opset=9,
           fn=lambda x: F.one_hot(x)),
]

# one_hot with num_classes computed at run time (OneHot's depth input, opset 9); -1 at run time: the largest index + 1.
CASES += [
    OpCase("one_hot", lambda k: (torch.arange(10 + k) % (5 + k), torch.tensor([15.0, -1.0][k:k + 1])),
           sample="run_time_classes", min_opset=9, fn=lambda x, n: torch.nn.functional.one_hot(x, n.to(torch.int32)[0])),
]

# scatter_reduce 'amax'/'amin' (ScatterElements reduces by max/min from 18 only): the updates spread over an
# index == j comparison, the type's extreme elsewhere, ReduceMax/ReduceMin, then Max/Min with self (Where: opset 9;
# integers: opset 12). Index smaller than self along the other dim too; include_self either way.
def _scatter_extremes_inputs(k):
    return torch.randn(4 + k, 6), torch.tensor([[0, 5, 2], [5, 5, 1]]), torch.randn(3, 5)


CASES += [
    OpCase("scatter_reduce", _scatter_extremes_inputs, sample="amax", min_opset=9,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amax")),
    OpCase("scatter_reduce", _scatter_extremes_inputs, sample="amin_exclude_self", min_opset=9,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amin", include_self=False)),
    OpCase("scatter_reduce", lambda k: (torch.randint(-9, 9, (4, 6 + k)), torch.tensor([[0, 3, 2], [3, 3, 1]]),
                                        torch.randint(-9, 9, (3, 5))),
           sample="amax_int64_dim0_exclude_self", min_opset=12,
           fn=lambda x, i, s: x.scatter_reduce(0, i, s, reduce="amax", include_self=False)),
    # Bools: 'amax' is any, 'amin' all (Max/Min take no bools: computed on uint8, from opset 12).
    OpCase("scatter_reduce", lambda k: (torch.rand(4, 6 + k) > 0.5, torch.tensor([[0, 3, 2], [3, 3, 1]]),
                                        torch.rand(3, 5) > 0.5),
           sample="amax_bool", min_opset=12, fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amax")),
    OpCase("scatter_reduce", lambda k: (torch.rand(4, 6 + k) > 0.5, torch.tensor([[0, 3, 2], [3, 3, 1]]),
                                        torch.rand(3, 5) > 0.5),
           sample="amin_bool_exclude_self", min_opset=12,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amin", include_self=False)),
]

# scatter_add with an index smaller than src, both of run-time shape: torch reads only src's corner of index's shape
# (a Slice to index's run-time shape from opset 10, a Gather of 0..m-1 at 9); unknown sizes once counted as equal and
# the whole src was summed in. (The same cut makes int64_dynamic_rows's dynamic export need opset 9.)
CASES += [
    OpCase("scatter_add", lambda k: (torch.zeros(3, 5), torch.tensor([[0, 1, 2, 0, 0], [1, 0, 2, 1, 2]])[:1 + k],
                                     torch.arange(15.0 + 5 * k).reshape(3 + k, 5)),
           sample="index_smaller_than_src_run_time_shapes", dynamic_min_opset=9,
           fn=lambda x, i, s: x.scatter_add(0, i, s)),
]


class _ScatterExtremesOfEmpty(torch.nn.Module):
    """Scripted (a trace folds ops on empty tensors): amax/amin of an empty scatter, whose index range is empty."""

    def forward(self, x, index, input):
        return input.scatter_reduce(0, index, x, reduce="amax"), input.scatter_reduce(0, index, x, reduce="amin")


CASES += [
    OpCase("scatter_reduce", lambda k: (torch.tensor([]), torch.tensor([], dtype=torch.int64), torch.tensor([])),
           sample="extremes_of_empty", min_opset=9, dynamic=False,
           module=lambda: torch.jit.script(_ScatterExtremesOfEmpty()),
           cuda_known_failures=dict.fromkeys(range(9, OPSETS[-1] + 1), CUDA_EMPTY_REDUCTION)),
]

# scatter_reduce 'amax'/'amin' as ScatterElements-18 max/min. ONNX leaves NaN unspecified and ONNX Runtime and
# onnx.reference keep the current value when an update is NaN; PyTorch propagates it, so from 18 a scatter of NaN flags
# marks the positions that saw one. Below 18 the index == j form reduces with ReduceMax/ReduceMin, which ONNX Runtime
# computes skipping NaN (onnx.reference agrees with PyTorch there: a runtime divergence).
_NAN = float("nan")
_ORT_REDUCE_SKIPS_NAN = {opset: "ONNX Runtime's ReduceMax/ReduceMin (the index == j form below opset 18) skip NaN where "
                                "PyTorch propagates it; onnx.reference agrees with PyTorch (a runtime divergence)"
                         for opset in range(9, 18)}
_ORT_NO_BFLOAT16 = {opset: "ONNX Runtime's CPU provider has no bfloat16 kernel for Where (the index == j form and the "
                           "NaN marking), nor for ScatterElements reduction max/min (18); onnx.reference computes it"
                    for opset in range(13, OPSETS[-1] + 1)}


class _ScatterExtremesInBfloat16(torch.nn.Module):
    def forward(self, x, index, src):
        return x.bfloat16().scatter_reduce(1, index, src.bfloat16(), reduce="amin").float()


CASES += [
    OpCase("scatter_reduce", lambda k: (torch.tensor([[1.0, _NAN, 3.0, 0.0, 5.0], [0.0] * 5] + [[2.0] * 5] * k),
                                        torch.tensor([[0, 0, 2, 3], [1, 1, 1, 4]]),
                                        torch.tensor([[_NAN, 2.0, 4.0, -1.0], [2.0, _NAN, 1.0, 7.0]])),
           sample="amax_nan", min_opset=9, known_failures=_ORT_REDUCE_SKIPS_NAN,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amax")),
    OpCase("scatter_reduce", lambda k: (torch.tensor([[1.0, _NAN, 3.0, 0.0, 5.0], [0.0] * 5]),
                                        torch.tensor([[0, 0, 2, 3], [1, 1, 1, 4]]),
                                        torch.tensor([[_NAN, 2.0, 4.0, -1.0], [2.0, _NAN, 1.0, 7.0]])),
           sample="amin_nan_exclude_self", min_opset=9, dynamic=False, known_failures=_ORT_REDUCE_SKIPS_NAN,
           fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amin", include_self=False)),
    OpCase("scatter_reduce", lambda k: (random_tensor(4 + k, 6, dtype=torch.float16), torch.tensor([[0, 5, 2], [5, 5, 1]]),
                                        random_tensor(3, 5, dtype=torch.float16)),
           sample="amax_float16", min_opset=9, fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amax")),
    OpCase("scatter_reduce", lambda k: (torch.randint(0, 200, (4, 6 + k), dtype=torch.uint8),
                                        torch.tensor([[0, 3, 2], [3, 3, 1]]), torch.randint(0, 200, (3, 5), dtype=torch.uint8)),
           sample="amin_uint8", min_opset=12, fn=lambda x, i, s: x.scatter_reduce(1, i, s, reduce="amin")),
    # (bfloat16 tensors need Cast-13)
    OpCase("scatter_reduce", _scatter_extremes_inputs, sample="amin_bfloat16", min_opset=13, known_failures=_ORT_NO_BFLOAT16,
           module=_ScatterExtremesInBfloat16),
]

# index_reduce: scatter_reduce with the 1-D index laid along dim and broadcast to source's shape ('amax'/'amin':
# ScatterElements max/min from 18, the index == j form from 9 (integers 12); 'prod': ScatterElements 'mul', 16).
# Duplicate indices reduce together; include_self either way.
def _index_reduce_inputs(k):
    return torch.randn(5, 3 + k), torch.tensor([0, 4, 0, 2]), torch.randn(4, 3 + k)


CASES += [
    OpCase("index_reduce", _index_reduce_inputs, sample="amax", min_opset=9,
           fn=lambda x, i, s: x.index_reduce(0, i, s, "amax")),
    OpCase("index_reduce", _index_reduce_inputs, sample="amin_exclude_self", min_opset=9,
           fn=lambda x, i, s: x.index_reduce(0, i, s, "amin", include_self=False)),
    OpCase("index_reduce", lambda k: (torch.randn(3 + k, 5), torch.tensor([4, 1, 4]), torch.randn(3 + k, 3)),
           sample="prod_dim1", min_opset=16, fn=lambda x, i, s: x.index_reduce(1, i, s, "prod")),
    OpCase("index_reduce", _index_reduce_inputs, sample="prod_exclude_self", min_opset=16,
           fn=lambda x, i, s: x.index_reduce(0, i, s, "prod", include_self=False)),
    OpCase("index_reduce", lambda k: (torch.randint(-9, 9, (5, 2 + k)), torch.tensor([3, 3, 0]),
                                      torch.randint(-9, 9, (3, 2 + k))),
           sample="amax_int64_exclude_self", min_opset=12,
           fn=lambda x, i, s: x.index_reduce(0, i, s, "amax", include_self=False)),
    OpCase("index_reduce", lambda k: (torch.rand(5, 3 + k) > 0.5, torch.tensor([0, 4, 0, 2]), torch.rand(4, 3 + k) > 0.5),
           sample="amin_bool", min_opset=12, fn=lambda x, i, s: x.index_reduce(0, i, s, "amin")),
]
