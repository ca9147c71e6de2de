"""Cases for shape manipulation: sizes, reshapes, broadcasting, squeezes, transposes, splits, joins, flips,
padding, shuffles, sliding windows, meshgrid, triangles and diagonals.

Size variant 1 changes the sizes of the axes that should be dynamic; the ones an op needs static stay fixed.
"""

import torch

from opcases import CUDA_EMPTY_REDUCTION, OPSETS, OpCase, random_tensor

# A trace fixes how many pieces a split of a dynamic dim makes (ONNX outputs are counted): the check of dynamic axes
# refuses such an export by default; these cases, whose two size variants make as many pieces, keep it to test the
# Slices at run-time bounds.
_PIECES_FIXED = "the trace fixes the number of pieces (the same at both size variants)"
_DYNAMIC_CHUNKS = ("chunk sizes of a dim of run-time size need Slice with input bounds (opset 10); below it the traced "
                   "size is baked into Split, which rejects another size at run time")


class _UnbindAndJoin(torch.nn.Module):
    """A scripted unbind whose piece count is only known at run time (an ONNX sequence)."""

    def forward(self, x):
        return torch.cat(x.unbind(0), 0)


class _SplitAndJoin(torch.nn.Module):
    """A scripted split whose piece count is only known at run time (an ONNX sequence)."""

    def forward(self, x):
        return torch.cat(x.split(2, 0), 1)


CASES = [
    # sizes
    OpCase("size", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.reshape(x.size(0), -1, 1)),
    OpCase("size", lambda k: (random_tensor(2, 3 + k),), sample="negative_dim", fn=lambda x: x.reshape(x.size(-1), x.size(0))),
    OpCase("numel", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.reshape(x.numel())),
    OpCase("_shape_as_tensor", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: torch._shape_as_tensor(x) * 2),
    OpCase("dim", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.reshape([-1] * 1 + [3] * (x.dim() - 1))),
    # reshapes
    OpCase("view", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.view(-1, 12)),
    OpCase("view", lambda k: (random_tensor(2 + k, 3, 4, dtype=torch.int64),), sample="int64", fn=lambda x: x.view(x.size(0), 4, 3)),
    OpCase("reshape", lambda k: (random_tensor(2, 3 + k, 2, dtype=torch.bool),), sample="bool", fn=lambda x: x.reshape(2, -1)),
    OpCase("view_as", lambda k: (random_tensor(2 + k, 6), random_tensor(2 + k, 3, 2)), fn=lambda x, y: x.view_as(y)),
    OpCase("reshape_as", lambda k: (random_tensor(4, 3 + k), random_tensor(3 + k, 4)), fn=lambda x, y: x.reshape_as(y)),
    OpCase("flatten", lambda k: (random_tensor(2 + k, 3, 4, 5),), fn=lambda x: x.flatten(1)),
    OpCase("flatten", lambda k: (random_tensor(2 + k, 3, 4, 5),), sample="middle", fn=lambda x: x.flatten(1, 2)),
    OpCase("flatten", lambda k: (random_tensor(2, 3 + k, 4),), sample="all_negative", fn=lambda x: x.flatten(-3, -1)),
    OpCase("flatten", lambda k: (random_tensor(2 + k, 1, 4),), sample="zero_size",
           fn=lambda x: torch.cat([x[:0].flatten(1), x[:, 0]]) * 2),
    OpCase("unflatten", lambda k: (random_tensor(2 + k, 6, 3),), fn=lambda x: x.unflatten(1, (2, 3))),
    OpCase("unflatten", lambda k: (random_tensor(2, 6, 3 + k),), sample="negative", fn=lambda x: x.unflatten(-2, (-1, 2))),
    # broadcasting and repetition
    OpCase("expand", lambda k: (random_tensor(3, 1),), fn=lambda x: x.expand(3, 4)),
    OpCase("expand", lambda k: (random_tensor(3 + k, 1),), sample="keep_and_new_dims", fn=lambda x: x.expand(2, -1, 4)),
    OpCase("broadcast_to", lambda k: (random_tensor(3 + k, 1),), fn=lambda x: torch.broadcast_to(x, (2, -1, 4))),
    OpCase("expand", lambda k: (random_tensor(1, 3, dtype=torch.bool),), sample="bool", fn=lambda x: x.expand(2, 3)),
    OpCase("expand", lambda k: (random_tensor(2 + k, 1, dtype=torch.int64),), sample="dynamic_size",
           fn=lambda x: x.expand(x.size(0), 5)),
    OpCase("expand_as", lambda k: (random_tensor(1, 4), random_tensor(3 + k, 4)), fn=lambda x, y: x.expand_as(y)),
    OpCase("repeat", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.repeat(2, 3)),
    OpCase("repeat", lambda k: (random_tensor(2, 3 + k, dtype=torch.int32),), sample="new_dims", fn=lambda x: x.repeat(2, 1, 2)),
    OpCase("repeat_interleave", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.repeat_interleave(2, dim=1)),
    OpCase("repeat_interleave", lambda k: (random_tensor(2 + k, 3),), sample="negative_dim",
           fn=lambda x: torch.repeat_interleave(x, 3, dim=-2)),
    OpCase("repeat_interleave", lambda k: (random_tensor(2 + k, 3, dtype=torch.int64),), sample="flattened",
           fn=lambda x: x.repeat_interleave(2)),
    OpCase("repeat_interleave", lambda k: (random_tensor(2, 3 + k),), sample="tensor_count",
           fn=lambda x: x.repeat_interleave(torch.tensor(2), dim=0)),
    OpCase("repeat_interleave", lambda k: (random_tensor(3, 2 + k),), sample="per_slice",
           fn=lambda x: x.repeat_interleave(torch.tensor([1, 0, 3]), dim=0)),
    OpCase("repeat_interleave", lambda k: (random_tensor(2 + k, 3),), sample="size_count",
           fn=lambda x: x.repeat_interleave(x.size(0), dim=1)),
    # Repeats as an input: counts known only at run time. Gather of indices from a running sum of the counts and a
    # range of their run-time total (ConstantOfShape/NonZero from 9, Range and CumSum from 11).
    OpCase("repeat_interleave", lambda k: (random_tensor(3 + k, 2), torch.tensor([1, 0, 3, 2][: 3 + k])),
           sample="run_time_per_slice", fn=lambda x, r: torch.repeat_interleave(x, r, dim=0), min_opset=9),
    # One count in the static export (Tile); the dynamic export's repeats has a run-time length, fed 4 counts.
    OpCase("repeat_interleave", lambda k: (random_tensor(2, 3 + k), torch.tensor([[2], [3, 0, 1, 2]][k])),
           sample="run_time_one_or_per_slice", fn=lambda x, r: torch.repeat_interleave(x, r, dim=-1),
           dynamic_min_opset=9),
    OpCase("repeat_interleave", lambda k: (random_tensor(2, 2 + k, dtype=torch.int64), torch.tensor([2, 0, 1, 3, 1, 1][: 4 + 2 * k])),
           sample="run_time_flattened", fn=lambda x, r: x.repeat_interleave(r), min_opset=9),
    OpCase("repeat_interleave", lambda k: (torch.tensor([2, 0, 3, 1][: 3 + k]),), sample="run_time_indices_only",
           fn=lambda r: torch.repeat_interleave(r), min_opset=9),
    OpCase("repeat_interleave", lambda k: (random_tensor(2 + k, 3), torch.zeros(2 + k, dtype=torch.int64)),
           sample="run_time_all_zero", fn=lambda x, r: torch.repeat_interleave(x, r, dim=0), min_opset=9),
    OpCase("tile", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.tile(2)),
    OpCase("tile", lambda k: (random_tensor(2, 3 + k, dtype=torch.bool),), sample="bool", fn=lambda x: x.tile((2, 1, 1))),
    # squeeze / unsqueeze
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 3, 1),), fn=lambda x: x.squeeze()),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 3, 1),), sample="dim", fn=lambda x: x.squeeze(-1)),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 3, 1),), sample="not_one", fn=lambda x: x.squeeze(2)),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 3, 1, dtype=torch.int64),), sample="dims", fn=lambda x: x.squeeze((1, 3))),
    OpCase("unsqueeze", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.unsqueeze(1)),
    OpCase("unsqueeze", lambda k: (random_tensor(2 + k, 3, dtype=torch.bool),), sample="negative", fn=lambda x: x.unsqueeze(-1)),
    # transposes
    OpCase("transpose", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.transpose(0, -1)),
    OpCase("permute", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.permute(2, 0, 1)),
    OpCase("permute", lambda k: (random_tensor(2, 3 + k, 4, dtype=torch.int64),), sample="negative", fn=lambda x: x.permute(-1, -3, -2)),
    OpCase("t", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.t()),
    OpCase("t", lambda k: (random_tensor(3 + k),), sample="1d", fn=lambda x: x.t() * 1),
    OpCase("movedim", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.movedim(0, -1)),
    OpCase("movedim", lambda k: (random_tensor(2 + k, 3, 4, 5),), sample="lists", fn=lambda x: torch.movedim(x, (0, 1), (2, 0))),
    OpCase("swapaxes", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.swapaxes(1, 2)),
    # splitting
    OpCase("split", lambda k: (random_tensor(2 + k, 7),), fn=lambda x: x.split(3, 1)),
    OpCase("split", lambda k: (random_tensor(5 + k, 3),), sample="dynamic_dim", fn=lambda x: x.split(2, 0),
           frozen_by_trace=_PIECES_FIXED),
    OpCase("split", lambda k: (random_tensor(2 + k, 6),), sample="sizes", fn=lambda x: x.split([1, 2, 3], -1)),
    OpCase("split_with_sizes", lambda k: (random_tensor(6, 2 + k, dtype=torch.int64),), fn=lambda x: torch.split(x, [4, 2])),
    OpCase("chunk", lambda k: (random_tensor(2 + k, 7),), fn=lambda x: x.chunk(3, 1)),
    OpCase("chunk", lambda k: (random_tensor(6 + 3 * k, 2),), sample="dynamic_dim", fn=lambda x: x.chunk(3, 0),
           dynamic_known_failures={o: _DYNAMIC_CHUNKS for o in (7, 8, 9)}),
    OpCase("unbind", lambda k: (random_tensor(2 + k, 3),), fn=lambda x: x.unbind(1)),
    OpCase("unbind", lambda k: (random_tensor(3, 2 + k, dtype=torch.bool),), sample="dim0", fn=lambda x: x.unbind(0)),
    OpCase("unbind", lambda k: (random_tensor(3 + k, 2),), sample="scripted_run_time_count",
           module=lambda: torch.jit.script(_UnbindAndJoin()), dynamic_min_opset=11),
    OpCase("split", lambda k: (random_tensor(4 + 2 * k, 3),), sample="scripted_run_time_count",
           module=lambda: torch.jit.script(_SplitAndJoin()), dynamic_min_opset=11),
    OpCase("tensor_split", lambda k: (random_tensor(2 + k, 7),), fn=lambda x: x.tensor_split(3, 1)),
    OpCase("tensor_split", lambda k: (random_tensor(7 + k, 2),), sample="indices", fn=lambda x: x.tensor_split([1, 4], 0)),
    # joining
    OpCase("cat", lambda k: (random_tensor(2 + k, 3), random_tensor(2 + k, 2)), fn=lambda x, y: torch.cat([x, y], 1)),
    OpCase("cat", lambda k: (random_tensor(2 + k, 3), random_tensor(1, 3, dtype=torch.float64)), sample="promote", fn=lambda x, y: torch.cat([x, y], -2)),
    OpCase("cat", lambda k: (random_tensor(2 + k, 3),), sample="all_empty",
           fn=lambda x: x.sum() + torch.cat([x.flatten()[:0], 2 * x.flatten()[:0]], 0).sum(),
           cuda_known_failures=dict.fromkeys(OPSETS, CUDA_EMPTY_REDUCTION)),
    OpCase("stack", lambda k: (random_tensor(2 + k, 3), random_tensor(2 + k, 3)), fn=lambda x, y: torch.stack([x, y])),
    OpCase("stack", lambda k: (random_tensor(2 + k, dtype=torch.float16), random_tensor(2 + k, dtype=torch.float16)), sample="float16",
           fn=lambda x, y: torch.stack([x, y], 1)),
    OpCase("stack", lambda k: (random_tensor(2 + k, 3, dtype=torch.int64), random_tensor(2 + k, 3, dtype=torch.int64)), sample="negative_dim",
           fn=lambda x, y: torch.stack([x, y], -1)),
    OpCase("hstack", lambda k: (random_tensor(2 + k, 3), random_tensor(2 + k, 1)), fn=lambda x, y: torch.hstack([x, y])),
    OpCase("hstack", lambda k: (random_tensor(2 + k), random_tensor(3)), sample="1d", fn=lambda x, y: torch.hstack([x, y])),
    OpCase("vstack", lambda k: (random_tensor(3 + k), random_tensor(3 + k)), fn=lambda x, y: torch.vstack([x, y])),
]

CASES += [
    OpCase("_dim_arange", lambda k: (random_tensor(3 + k, 4 + k),), sample="traced", fn=lambda x: torch._dim_arange(x, 1) * 2,
           dynamic_min_opset=9),
]


CASES += [
]

# Broadcasting an empty axis to itself below opset 8 (Tile's repeat 0 // 0: OpInfo masked.softmax sample 17).
CASES += [
    OpCase("expand", lambda k: (torch.randn(2 + k, 0, 1),), sample="empty_axis",
           fn=lambda x: x.expand(x.size(0), 0, 3)),
]

# Squeeze and transpose of a 0-d tensor over dim 0 leave it as it is (OpInfo squeeze sample 7, transpose sample 4).
# In a static export an op whose result has no elements is an empty constant: ONNX's shape inference rejects e.g. an
# empty tensor reshaped with -1 (OpInfo roll sample 12, unflatten samples 8-9, unfold, group_norm).
CASES += [
    OpCase("squeeze", lambda k: (torch.tensor(1.5 + k),), sample="0d_dim", dynamic=False, fn=lambda x: x.squeeze(0)),
    OpCase("transpose", lambda k: (torch.tensor(1.5 + k),), sample="0d", dynamic=False, fn=lambda x: x.transpose(0, -1)),
    OpCase("unflatten", lambda k: (torch.randn(4, 0),), sample="empty", dynamic=False,
           fn=lambda x: x.unflatten(1, (2, 0, 0, 0))),
]

# A zero-length narrow (its end is start + 0: size arithmetic must not divide by it; OpInfo narrow sample 4).
CASES += [
]

# Diagonals of dims whose sizes are known only at run time: a strided Slice of the flattened matrices (opset 10;
# OpInfo diag and diagonal, dynamic mode: "diagonal needs both diagonal dims to be static").
CASES += [
]

# tensor_split by a tensor known only at run time (OpInfo tensor_split 0-3): its split points, negative ones
# counting from the end, or its 0-d section count, read in the graph (Slice with run-time bounds: opset 10). The
# dynamic export feeds other points and another length to the same model.
CASES += [
    OpCase("tensor_split", lambda k: (random_tensor(7 + k, 3), torch.tensor([[1, 4], [-3, 2]][k])), sample="tensor_indices",
           min_opset=10, fn=lambda x, i: torch.tensor_split(x, i)),
    OpCase("tensor_split", lambda k: (random_tensor(2, 6 + 3 * k), torch.tensor([[0, 2, 9], [5, -1, 3]][k])),
           sample="tensor_indices_dim1", min_opset=10, fn=lambda x, i: torch.tensor_split(x, i, 1)),
    OpCase("tensor_split", lambda k: (random_tensor(7 + k, 2), torch.tensor(3)), sample="tensor_sections", min_opset=10,
           fn=lambda x, s: torch.tensor_split(x, s)),
]

# squeeze/unsqueeze decided at run time: a listed dim whose size is known only at run time (torch leaves it alone when
# it is not 1, so the result's rank follows the input: a Reshape to the Compressed shape from opset 9), and a dim that
# is itself a graph input (a scripted int argument).


class _SqueezeDim(torch.nn.Module):
    def forward(self, x, dim: int):
        return torch.squeeze(x, dim)


class _UnsqueezeDim(torch.nn.Module):
    def forward(self, x, dim: int):
        return torch.unsqueeze(x, dim)

_SQUEEZE_RUNTIME_SIZE = ("squeezing a dim whose size is known only at run time needs Compress (opset 9); below it "
                         "Squeeze is emitted, which fails at run time on a size other than 1")


CASES += [
    OpCase("squeeze", lambda k: (random_tensor(2, 1 + k, 3),), sample="run_time_size", fn=lambda x: x.squeeze(1),
           dynamic_known_failures={o: _SQUEEZE_RUNTIME_SIZE for o in (7, 8)}),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1 + k, 1),), sample="run_time_size_negative_dims",
           fn=lambda x: x.squeeze((-2, 0)), dynamic_known_failures={o: _SQUEEZE_RUNTIME_SIZE for o in (7, 8)}),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 4), 1 - 3 * k), sample="run_time_dim", min_opset=9,
           module=lambda: torch.jit.script(_SqueezeDim())),
    OpCase("squeeze", lambda k: (random_tensor(2 + k, 1, 4), -1 + k), sample="run_time_dim_not_one", min_opset=9,
           module=lambda: torch.jit.script(_SqueezeDim())),
    OpCase("unsqueeze", lambda k: (random_tensor(2 + k, 3), 1 - 3 * k), sample="run_time_dim", min_opset=9,
           module=lambda: torch.jit.script(_UnsqueezeDim())),
    OpCase("unsqueeze", lambda k: (random_tensor(2 + k, 3), -1 + 3 * k), sample="run_time_dim_ends", min_opset=9,
           module=lambda: torch.jit.script(_UnsqueezeDim())),
]

# expand sizes that are graph inputs, -1 (keep the dim) included: Expand takes 1 for that (Tile repeats once).
CASES += [
    OpCase("expand", lambda k: (random_tensor(3), torch.tensor(-1)), sample="run_time_minus_one", fn=lambda x, s: x.expand(s)),
    OpCase("expand", lambda k: (random_tensor(2, 1, 3), torch.tensor(-1 if k == 0 else 4)), sample="run_time_sizes",
           fn=lambda x, s: x.expand(2, s, 3)),
]


CASES += [
]

# chunk into a number of pieces computed at run time (a size of a dynamic dim): Slices at computed bounds (opset 10).
# (3 and 4 chunks of 5 columns are both three pieces, 2 + 2 + 1: a trace fixes the number of outputs.)
CASES += [
    OpCase("chunk", lambda k: (random_tensor(3 + k, 5),), sample="run_time_count", dynamic_min_opset=10,
           fn=lambda x: torch.chunk(x, x.size(0), dim=1), frozen_by_trace=_PIECES_FIXED),
    OpCase("chunk", lambda k: (random_tensor(3 + k, 5),), sample="run_time_count_negative_dim", dynamic_min_opset=10,
           fn=lambda x: torch.chunk(x, x.size(0), dim=-1), frozen_by_trace=_PIECES_FIXED),
]

# F.fold as Col2Im-18 (PyTorch's [N, C * kH * kW, L] columns are Col2Im's layout; pads [pH, pW, pH, pW]); below 18 the
# grouped ConvTranspose of one-hot kernels, which needs a static channel count: a run-time one needs Col2Im (18).
CASES += [
]

# Circular padding as Pad-19 mode 'wrap' (negative pads crop with a Slice first: torch wraps the cropped tensor, and
# onnx.reference refuses negative 'wrap' pads); Slices and a Concat per axis below 19. Pads as large as the dim, three
# padded dims, integers, bools, and _pad_circular itself. (bfloat16 keeps the Slices: ONNX Runtime has no
# bfloat16 Pad-19, a declared workaround with its probe.)
CASES += [
]
