"""Cases for shape manipulation: sizes, reshapes, broadcasting, squeezes, transposes, splits, joins, flips,
padding, shuffles, sliding windows, meshgrid, triangles and diagonals.

Size variant 1 changes the sizes of the axes that should be dynamic; the ones an op needs static stay fixed.
"""

import torch
import torch.nn.functional as F

from op_tests.harness import CUDA_EMPTY_REDUCTION, OPSETS, OpCase


def _r(*shape, dtype=torch.float32):
    if dtype == torch.bool:
        return torch.randn(*shape) > 0
    if dtype.is_floating_point:
        return torch.randn(*shape).to(dtype)
    return torch.randint(-5, 5, shape, dtype=dtype)


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
    OpCase("size", lambda k: (_r(2 + k, 3),), fn=lambda x: x.reshape(x.size(0), -1, 1)),
    OpCase("size", lambda k: (_r(2, 3 + k),), sample="negative_dim", fn=lambda x: x.reshape(x.size(-1), x.size(0))),
    OpCase("numel", lambda k: (_r(2 + k, 3),), fn=lambda x: x.reshape(x.numel())),
    OpCase("_shape_as_tensor", lambda k: (_r(2 + k, 3),), fn=lambda x: torch._shape_as_tensor(x) * 2),
    OpCase("dim", lambda k: (_r(2 + k, 3),), fn=lambda x: x.reshape([-1] * 1 + [3] * (x.dim() - 1))),
    # reshapes
    OpCase("view", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.view(-1, 12)),
    OpCase("view", lambda k: (_r(2 + k, 3, 4, dtype=torch.int64),), sample="int64", fn=lambda x: x.view(x.size(0), 4, 3)),
    OpCase("reshape", lambda k: (_r(2, 3 + k, 2, dtype=torch.bool),), sample="bool", fn=lambda x: x.reshape(2, -1)),
    OpCase("view_as", lambda k: (_r(2 + k, 6), _r(2 + k, 3, 2)), fn=lambda x, y: x.view_as(y)),
    OpCase("reshape_as", lambda k: (_r(4, 3 + k), _r(3 + k, 4)), fn=lambda x, y: x.reshape_as(y)),
    OpCase("flatten", lambda k: (_r(2 + k, 3, 4, 5),), fn=lambda x: x.flatten(1)),
    OpCase("flatten", lambda k: (_r(2 + k, 3, 4, 5),), sample="middle", fn=lambda x: x.flatten(1, 2)),
    OpCase("flatten", lambda k: (_r(2, 3 + k, 4),), sample="all_negative", fn=lambda x: x.flatten(-3, -1)),
    OpCase("flatten", lambda k: (_r(2 + k, 1, 4),), sample="zero_size",
           fn=lambda x: torch.cat([x[:0].flatten(1), x[:, 0]]) * 2),
    OpCase("unflatten", lambda k: (_r(2 + k, 6, 3),), fn=lambda x: x.unflatten(1, (2, 3))),
    OpCase("unflatten", lambda k: (_r(2, 6, 3 + k),), sample="negative", fn=lambda x: x.unflatten(-2, (-1, 2))),
    # broadcasting and repetition
    OpCase("expand", lambda k: (_r(3, 1),), fn=lambda x: x.expand(3, 4)),
    OpCase("expand", lambda k: (_r(3 + k, 1),), sample="keep_and_new_dims", fn=lambda x: x.expand(2, -1, 4)),
    OpCase("broadcast_to", lambda k: (_r(3 + k, 1),), fn=lambda x: torch.broadcast_to(x, (2, -1, 4))),
    OpCase("expand", lambda k: (_r(1, 3, dtype=torch.bool),), sample="bool", fn=lambda x: x.expand(2, 3)),
    OpCase("expand", lambda k: (_r(2 + k, 1, dtype=torch.int64),), sample="dynamic_size",
           fn=lambda x: x.expand(x.size(0), 5)),
    OpCase("expand_as", lambda k: (_r(1, 4), _r(3 + k, 4)), fn=lambda x, y: x.expand_as(y)),
    OpCase("repeat", lambda k: (_r(2 + k, 3),), fn=lambda x: x.repeat(2, 3)),
    OpCase("repeat", lambda k: (_r(2, 3 + k, dtype=torch.int32),), sample="new_dims", fn=lambda x: x.repeat(2, 1, 2)),
    OpCase("repeat_interleave", lambda k: (_r(2 + k, 3),), fn=lambda x: x.repeat_interleave(2, dim=1)),
    OpCase("repeat_interleave", lambda k: (_r(2 + k, 3),), sample="negative_dim",
           fn=lambda x: torch.repeat_interleave(x, 3, dim=-2)),
    OpCase("repeat_interleave", lambda k: (_r(2 + k, 3, dtype=torch.int64),), sample="flattened",
           fn=lambda x: x.repeat_interleave(2)),
    OpCase("repeat_interleave", lambda k: (_r(2, 3 + k),), sample="tensor_count",
           fn=lambda x: x.repeat_interleave(torch.tensor(2), dim=0)),
    OpCase("repeat_interleave", lambda k: (_r(3, 2 + k),), sample="per_slice",
           fn=lambda x: x.repeat_interleave(torch.tensor([1, 0, 3]), dim=0)),
    OpCase("repeat_interleave", lambda k: (_r(2 + k, 3),), sample="size_count",
           fn=lambda x: x.repeat_interleave(x.size(0), dim=1)),
    # Repeats as an input: counts known only at run time. Gather of indices from a running sum of the counts and a
    # range of their run-time total (ConstantOfShape/NonZero from 9, Range and CumSum from 11).
    OpCase("repeat_interleave", lambda k: (_r(3 + k, 2), torch.tensor([1, 0, 3, 2][: 3 + k])),
           sample="run_time_per_slice", fn=lambda x, r: torch.repeat_interleave(x, r, dim=0), min_opset=9),
    # One count in the static export (Tile); the dynamic export's repeats has a run-time length, fed 4 counts.
    OpCase("repeat_interleave", lambda k: (_r(2, 3 + k), torch.tensor([[2], [3, 0, 1, 2]][k])),
           sample="run_time_one_or_per_slice", fn=lambda x, r: torch.repeat_interleave(x, r, dim=-1),
           dynamic_min_opset=9),
    OpCase("repeat_interleave", lambda k: (_r(2, 2 + k, dtype=torch.int64), torch.tensor([2, 0, 1, 3, 1, 1][: 4 + 2 * k])),
           sample="run_time_flattened", fn=lambda x, r: x.repeat_interleave(r), min_opset=9),
    OpCase("repeat_interleave", lambda k: (torch.tensor([2, 0, 3, 1][: 3 + k]),), sample="run_time_indices_only",
           fn=lambda r: torch.repeat_interleave(r), min_opset=9),
    OpCase("repeat_interleave", lambda k: (_r(2 + k, 3), torch.zeros(2 + k, dtype=torch.int64)),
           sample="run_time_all_zero", fn=lambda x, r: torch.repeat_interleave(x, r, dim=0), min_opset=9),
    OpCase("tile", lambda k: (_r(2 + k, 3),), fn=lambda x: x.tile(2)),
    OpCase("tile", lambda k: (_r(2, 3 + k, dtype=torch.bool),), sample="bool", fn=lambda x: x.tile((2, 1, 1))),
    # squeeze / unsqueeze
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 3, 1),), fn=lambda x: x.squeeze()),
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 3, 1),), sample="dim", fn=lambda x: x.squeeze(-1)),
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 3, 1),), sample="not_one", fn=lambda x: x.squeeze(2)),
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 3, 1, dtype=torch.int64),), sample="dims", fn=lambda x: x.squeeze((1, 3))),
    OpCase("unsqueeze", lambda k: (_r(2 + k, 3),), fn=lambda x: x.unsqueeze(1)),
    OpCase("unsqueeze", lambda k: (_r(2 + k, 3, dtype=torch.bool),), sample="negative", fn=lambda x: x.unsqueeze(-1)),
    # transposes
    OpCase("transpose", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.transpose(0, -1)),
    OpCase("permute", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.permute(2, 0, 1)),
    OpCase("permute", lambda k: (_r(2, 3 + k, 4, dtype=torch.int64),), sample="negative", fn=lambda x: x.permute(-1, -3, -2)),
    OpCase("t", lambda k: (_r(2 + k, 3),), fn=lambda x: x.t()),
    OpCase("t", lambda k: (_r(3 + k),), sample="1d", fn=lambda x: x.t() * 1),
    OpCase("movedim", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.movedim(0, -1)),
    OpCase("movedim", lambda k: (_r(2 + k, 3, 4, 5),), sample="lists", fn=lambda x: torch.movedim(x, (0, 1), (2, 0))),
    OpCase("swapaxes", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.swapaxes(1, 2)),
    OpCase("contiguous", lambda k: (_r(2 + k, 3),), fn=lambda x: x.t().contiguous()),
    # splitting
    OpCase("split", lambda k: (_r(2 + k, 7),), fn=lambda x: x.split(3, 1)),
    OpCase("split", lambda k: (_r(5 + k, 3),), sample="dynamic_dim", fn=lambda x: x.split(2, 0),
           frozen_by_trace=_PIECES_FIXED),
    OpCase("split", lambda k: (_r(2 + k, 6),), sample="sizes", fn=lambda x: x.split([1, 2, 3], -1)),
    OpCase("split_with_sizes", lambda k: (_r(6, 2 + k, dtype=torch.int64),), fn=lambda x: torch.split(x, [4, 2])),
    OpCase("chunk", lambda k: (_r(2 + k, 7),), fn=lambda x: x.chunk(3, 1)),
    OpCase("chunk", lambda k: (_r(6 + 3 * k, 2),), sample="dynamic_dim", fn=lambda x: x.chunk(3, 0),
           dynamic_known_failures={o: _DYNAMIC_CHUNKS for o in (7, 8, 9)}),
    OpCase("unbind", lambda k: (_r(2 + k, 3),), fn=lambda x: x.unbind(1)),
    OpCase("unbind", lambda k: (_r(3, 2 + k, dtype=torch.bool),), sample="dim0", fn=lambda x: x.unbind(0)),
    OpCase("unbind", lambda k: (_r(3 + k, 2),), sample="scripted_run_time_count",
           module=lambda: torch.jit.script(_UnbindAndJoin()), dynamic_min_opset=11),
    OpCase("split", lambda k: (_r(4 + 2 * k, 3),), sample="scripted_run_time_count",
           module=lambda: torch.jit.script(_SplitAndJoin()), dynamic_min_opset=11),
    OpCase("tensor_split", lambda k: (_r(2 + k, 7),), fn=lambda x: x.tensor_split(3, 1)),
    OpCase("tensor_split", lambda k: (_r(7 + k, 2),), sample="indices", fn=lambda x: x.tensor_split([1, 4], 0)),
    # joining
    OpCase("cat", lambda k: (_r(2 + k, 3), _r(2 + k, 2)), fn=lambda x, y: torch.cat([x, y], 1)),
    OpCase("cat", lambda k: (_r(2 + k, 3), _r(1, 3, dtype=torch.float64)), sample="promote", fn=lambda x, y: torch.cat([x, y], -2)),
    OpCase("cat", lambda k: (_r(2 + k, 3),), sample="all_empty",
           fn=lambda x: x.sum() + torch.cat([x.flatten()[:0], 2 * x.flatten()[:0]], 0).sum(),
           cuda_known_failures=dict.fromkeys(OPSETS, CUDA_EMPTY_REDUCTION)),
    OpCase("stack", lambda k: (_r(2 + k, 3), _r(2 + k, 3)), fn=lambda x, y: torch.stack([x, y])),
    OpCase("stack", lambda k: (_r(2 + k, dtype=torch.float16), _r(2 + k, dtype=torch.float16)), sample="float16",
           fn=lambda x, y: torch.stack([x, y], 1)),
    OpCase("stack", lambda k: (_r(2 + k, 3, dtype=torch.int64), _r(2 + k, 3, dtype=torch.int64)), sample="negative_dim",
           fn=lambda x, y: torch.stack([x, y], -1)),
    OpCase("hstack", lambda k: (_r(2 + k, 3), _r(2 + k, 1)), fn=lambda x, y: torch.hstack([x, y])),
    OpCase("hstack", lambda k: (_r(2 + k), _r(3)), sample="1d", fn=lambda x, y: torch.hstack([x, y])),
    OpCase("vstack", lambda k: (_r(3 + k), _r(3 + k)), fn=lambda x, y: torch.vstack([x, y])),
    # slicing-based rearrangements
    OpCase("narrow", lambda k: (_r(2 + k, 6),), fn=lambda x: x.narrow(1, 1, 3)),
    OpCase("narrow", lambda k: (_r(6, 2 + k, dtype=torch.int64),), sample="negative_start", fn=lambda x: x.narrow(0, -4, 2)),
    OpCase("flip", lambda k: (_r(2 + k, 3, 4),), fn=lambda x: x.flip(-1)),
    OpCase("flip", lambda k: (_r(2 + k, 3, dtype=torch.float16),), sample="float16", fn=lambda x: x.flip(1)),
    OpCase("flip", lambda k: (_r(2 + k, 3, 4, dtype=torch.int64),), sample="dynamic_dim", fn=lambda x: x.flip(0, 2),
           dynamic_min_opset=9),
    OpCase("roll", lambda k: (_r(2 + k, 5),), fn=lambda x: x.roll(2, 1)),
    OpCase("roll", lambda k: (_r(4 + k, 5),), sample="dynamic_dim_negative", fn=lambda x: x.roll(-1, 0),
           dynamic_min_opset=9),
    OpCase("roll", lambda k: (_r(2 + 3 * k, 3, dtype=torch.int64),), sample="dynamic_dim_shift_beyond_size",
           fn=lambda x: x.roll(4, 0), dynamic_min_opset=9),
    OpCase("roll", lambda k: (_r(3, 4),), sample="flat", fn=lambda x: x.roll(5)),
    OpCase("roll", lambda k: (_r(3, 4 + k),), sample="multi", fn=lambda x: x.roll((1, -1), (0, 1)),
           dynamic_min_opset=9),
    # padding
    OpCase("pad", lambda k: (_r(1 + k, 2, 5),), sample="constant", fn=lambda x: F.pad(x, (1, 2), value=1.5)),
    OpCase("pad", lambda k: (_r(1 + k, 2, 4, 5),), sample="reflect", fn=lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect")),
    OpCase("pad", lambda k: (_r(1 + k, 2, 4, 5),), sample="replicate", fn=lambda x: F.pad(x, (1, 0, 2, 3), mode="replicate")),
    OpCase("pad", lambda k: (_r(1 + k, 2, 4, 5),), sample="circular", fn=lambda x: F.pad(x, (1, 2, 2, 1), mode="circular")),
    # Negative circular pads crop first and wrap the cropped tensor (OpInfo pad.circular sample 7).
    OpCase("pad", lambda k: (_r(1 + k, 3, 4, 4),), sample="circular_negative",
           fn=lambda x: F.pad(x, (-1, 1, -2, 1), mode="circular")),
    OpCase("pad", lambda k: (_r(2 + k, 5, dtype=torch.int64),), sample="int64", fn=lambda x: F.pad(x, (2, 1), value=3)),
    OpCase("pad", lambda k: (_r(2 + k, 6),), sample="negative_crop", fn=lambda x: F.pad(x, (-1, 2))),
    OpCase("pad", lambda k: (_r(2 + k, 5),), sample="bool", fn=lambda x: F.pad(x > 0, (1, 2), value=True)),
    # Sizes computed at run time (a dynamic export): Pad takes them as an input from 11; at 9-10 the kept positions
    # are gathered and ConstantOfShape blocks concatenated. Negative sizes crop; a bool mask padded as transformers'
    # attention masks are (Pad takes bool from 13 only).
    OpCase("pad", lambda k: (_r(2 + k, 5 + k),), sample="run_time_sizes", dynamic_min_opset=9,
           fn=lambda x: F.pad(x, (x.size(0) - 1, 8 - x.shape[-1]), value=2.5)),
    OpCase("pad", lambda k: (_r(3 + k, 6 + k, dtype=torch.int64),), sample="run_time_crop", dynamic_min_opset=9,
           fn=lambda x: F.pad(x, (x.shape[1] - 4, 4 - x.shape[-1], 0, 2 - x.shape[0]), value=7)),
    OpCase("pad", lambda k: (torch.tensor([[float("nan"), -float("inf"), 1.0, float("inf"), -2.0] + [0.5] * k] * (2 + k)),),
           sample="run_time_nonfinite", dynamic_min_opset=9, fn=lambda x: F.pad(x, (x.shape[0] - 2, 8 - x.shape[-1]))),
    OpCase("pad", lambda k: (_r(2 + k, 5 + k),), sample="run_time_bool_mask", dynamic_min_opset=9,
           fn=lambda x: F.pad(x > 0, (0, 9 - x.shape[-1]))),
    OpCase("pad", lambda k: (_r(1 + k, 2, 5, dtype=torch.float16),), sample="float16_reflect",
           fn=lambda x: F.pad(x, (2, 1), mode="reflect")),
    OpCase("constant_pad_nd", lambda k: (_r(1 + k, 3, 3),), module=lambda: torch.nn.ConstantPad2d((1, 0, 0, 2), -1.0)),
    OpCase("reflection_pad1d", lambda k: (_r(1 + k, 2, 5),), module=lambda: torch.nn.ReflectionPad1d(2)),
    OpCase("reflection_pad2d", lambda k: (_r(1 + k, 2, 4, 5),), module=lambda: torch.nn.ReflectionPad2d((1, 2, 0, 3))),
    OpCase("replication_pad2d", lambda k: (_r(1 + k, 2, 4, 5),), module=lambda: torch.nn.ReplicationPad2d(2)),
    OpCase("replication_pad3d", lambda k: (_r(1 + k, 1, 3, 4, 5),), module=lambda: torch.nn.ReplicationPad3d(1)),
    # shuffles
    OpCase("pixel_shuffle", lambda k: (_r(1 + k, 8, 3, 4),), fn=lambda x: F.pixel_shuffle(x, 2)),
    OpCase("pixel_shuffle", lambda k: (_r(1, 9, 2 + k, 2, dtype=torch.int64),), sample="int64", fn=lambda x: F.pixel_shuffle(x, 3)),
    OpCase("pixel_unshuffle", lambda k: (_r(1 + k, 2, 4, 6),), fn=lambda x: F.pixel_unshuffle(x, 2)),
    OpCase("channel_shuffle", lambda k: (_r(1 + k, 6, 3, 2),), fn=lambda x: F.channel_shuffle(x, 3)),
    OpCase("channel_shuffle", lambda k: (_r(2, 4, 3 + k),), sample="3d", module=lambda: torch.nn.ChannelShuffle(2)),
    # sliding windows
    OpCase("unfold", lambda k: (_r(2 + k, 7),), fn=lambda x: x.unfold(1, 3, 2)),
    OpCase("unfold", lambda k: (_r(6, 2 + k, dtype=torch.int64),), sample="dim0", fn=lambda x: x.unfold(0, 2, 1)),
    OpCase("im2col", lambda k: (_r(1 + k, 2, 5, 6),), fn=lambda x: F.unfold(x, (2, 3), dilation=1, padding=1, stride=2)),
    OpCase("col2im", lambda k: (_r(1 + k, 2 * 6, 9),), fn=lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=2)),
    # grids, triangles, diagonals
    OpCase("meshgrid", lambda k: (_r(3 + k), _r(4)), fn=lambda x, y: torch.meshgrid(x, y, indexing="ij")),
    OpCase("meshgrid", lambda k: (_r(3 + k), _r(4), _r(2)), sample="xy", fn=lambda x, y, z: torch.meshgrid(x, y, z, indexing="xy")),
    OpCase("tril", lambda k: (_r(2 + k, 4, 5),), fn=lambda x: torch.tril(x)),
    OpCase("tril", lambda k: (_r(4, 5, dtype=torch.int64),), sample="diagonal_int", fn=lambda x: torch.tril(x, -1)),
    OpCase("triu", lambda k: (_r(3, 4 + k),), sample="dynamic", fn=lambda x: torch.triu(x, 1),
           dynamic_min_opset=9),
    OpCase("triu", lambda k: (_r(4, 4, dtype=torch.bool),), sample="bool", fn=lambda x: torch.triu(x, 2)),
    OpCase("diagonal", lambda k: (_r(2 + k, 4, 5),), fn=lambda x: torch.diagonal(x, 1, 1, 2)),
    OpCase("diagonal", lambda k: (_r(4, 2 + k, 3),), sample="negative_offset", fn=lambda x: torch.diagonal(x, -1, 0, -1)),
    OpCase("diag", lambda k: (_r(4),), fn=lambda x: torch.diag(x, 1)),
    OpCase("diag", lambda k: (_r(3, 4, dtype=torch.int64),), sample="matrix", fn=lambda x: torch.diag(x, -1)),
]

CASES += [
    OpCase("broadcast_tensors", lambda k: (_r(2 + k, 1, 3), _r(4, 1), _r(3)),
           fn=lambda a, b, c: torch.broadcast_tensors(a, b, c)),
    OpCase("broadcast_tensors", lambda k: (_r(2 + k, 1), _r(1, 3 + k)), sample="both_dynamic",
           fn=lambda a, b: torch.broadcast_tensors(a, b)),
    OpCase("atleast_1d", lambda k: (torch.tensor(1.5),), fn=torch.atleast_1d),
    OpCase("atleast_2d", lambda k: (torch.tensor(1.5), _r(3 + k)), sample="list",
           fn=lambda a, b: torch.atleast_2d((a, b))),
    OpCase("atleast_3d", lambda k: (_r(3 + k), _r(2 + k, 3)), sample="list",
           fn=lambda a, b: torch.atleast_3d((a, b))),
    OpCase("_dim_arange", lambda k: (_r(3 + k, 4 + k),), sample="traced", fn=lambda x: torch._dim_arange(x, 1) * 2,
           dynamic_min_opset=9),
]


def _sliding_chunks(x):
    """Longformer's (and LED's) sliding-window attention on ``x`` [seq 8, batch 2, 8] (sequence first, as its
    attention takes the projected states): the heads merged by a reshape that is a view, not contiguous ([batch *
    heads, seq, head] with strides (head, batch * heads * head, 1)), cut into windows that overlap by half by
    as_strided with that view's own strides; the values padded (a fresh, contiguous tensor) and cut likewise. The
    static shapes fix the view's layout."""
    merged = (x * 2).view(8, 2, 2, 4).transpose(0, 1).transpose(1, 2).reshape(4, 8, 4)
    chunks = merged.view(4, 2, 4, 4)
    size, stride = list(chunks.size()), list(chunks.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    padded = F.pad(merged, (0, 0, 2, 2), value=-1)
    step = padded.stride()
    return (chunks.as_strided(size=size, stride=stride),
            padded.as_strided(size=(4, 3, 6, 4), stride=(step[0], 2 * step[1], step[1], step[2])))


CASES += [
    OpCase("as_strided", lambda k: (_r(5 + k, 8, 7),), sample="overlapping_offset",
           fn=lambda x: x.as_strided((3, 3, 3), (1, 4, 2), storage_offset=2)),
    OpCase("as_strided", lambda k: (_r(8, 2, 8),), sample="sliding_chunks_of_a_view", fn=_sliding_chunks,
           dynamic=False),
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
    OpCase("roll", lambda k: (torch.randn(0, 0, 0),), sample="empty", dynamic=False, fn=lambda x: x.roll(2)),
    OpCase("unflatten", lambda k: (torch.randn(4, 0),), sample="empty", dynamic=False,
           fn=lambda x: x.unflatten(1, (2, 0, 0, 0))),
    OpCase("im2col", lambda k: (torch.randn(0, 1, 5, 5),), sample="empty_batch", dynamic=False,
           fn=lambda x: F.unfold(x, 2)),
]

# A zero-length narrow (its end is start + 0: size arithmetic must not divide by it; OpInfo narrow sample 4).
CASES += [
    OpCase("narrow", lambda k: (_r(5 + k, 5, 5),), sample="zero_length", fn=lambda x: x.narrow(1, 0, 0)),
]

# Diagonals of dims whose sizes are known only at run time: a strided Slice of the flattened matrices (opset 10;
# OpInfo diag and diagonal, dynamic mode: "diagonal needs both diagonal dims to be static").
CASES += [
    OpCase("diagonal", lambda k: (_r(3 + k, 5 + 2 * k),), sample="dynamic_dims", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x)),
    OpCase("diagonal", lambda k: (_r(2, 5 + k, 3 + 2 * k),), sample="dynamic_dims_offset", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, 2, 1, 2)),
    OpCase("diagonal", lambda k: (_r(6 + 2 * k, 3, 4 + k),), sample="dynamic_dims_negative_offset", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, -2, -1, 0)),
    OpCase("diagonal", lambda k: (_r(3 + k, 2 + k),), sample="dynamic_dims_offset_past_end", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, 5)),
    OpCase("diag", lambda k: (_r(5 + k, 3, dtype=torch.int64),), sample="matrix_dynamic", dynamic_min_opset=10,
           fn=lambda x: torch.diag(x, 1)),
]

# tensor_split by a tensor known only at run time (OpInfo tensor_split 0-3): its split points, negative ones
# counting from the end, or its 0-d section count, read in the graph (Slice with run-time bounds: opset 10). The
# dynamic export feeds other points and another length to the same model.
CASES += [
    OpCase("tensor_split", lambda k: (_r(7 + k, 3), torch.tensor([[1, 4], [-3, 2]][k])), sample="tensor_indices",
           min_opset=10, fn=lambda x, i: torch.tensor_split(x, i)),
    OpCase("tensor_split", lambda k: (_r(2, 6 + 3 * k), torch.tensor([[0, 2, 9], [5, -1, 3]][k])),
           sample="tensor_indices_dim1", min_opset=10, fn=lambda x, i: torch.tensor_split(x, i, 1)),
    OpCase("tensor_split", lambda k: (_r(7 + k, 2), torch.tensor(3)), sample="tensor_sections", min_opset=10,
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
    OpCase("squeeze", lambda k: (_r(2, 1 + k, 3),), sample="run_time_size", fn=lambda x: x.squeeze(1),
           dynamic_known_failures={o: _SQUEEZE_RUNTIME_SIZE for o in (7, 8)}),
    OpCase("squeeze", lambda k: (_r(2 + k, 1 + k, 1),), sample="run_time_size_negative_dims",
           fn=lambda x: x.squeeze((-2, 0)), dynamic_known_failures={o: _SQUEEZE_RUNTIME_SIZE for o in (7, 8)}),
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 4), 1 - 3 * k), sample="run_time_dim", min_opset=9,
           module=lambda: torch.jit.script(_SqueezeDim())),
    OpCase("squeeze", lambda k: (_r(2 + k, 1, 4), -1 + k), sample="run_time_dim_not_one", min_opset=9,
           module=lambda: torch.jit.script(_SqueezeDim())),
    OpCase("unsqueeze", lambda k: (_r(2 + k, 3), 1 - 3 * k), sample="run_time_dim", min_opset=9,
           module=lambda: torch.jit.script(_UnsqueezeDim())),
    OpCase("unsqueeze", lambda k: (_r(2 + k, 3), -1 + 3 * k), sample="run_time_dim_ends", min_opset=9,
           module=lambda: torch.jit.script(_UnsqueezeDim())),
]

# expand sizes that are graph inputs, -1 (keep the dim) included: Expand takes 1 for that (Tile repeats once).
CASES += [
    OpCase("expand", lambda k: (_r(3), torch.tensor(-1)), sample="run_time_minus_one", fn=lambda x, s: x.expand(s)),
    OpCase("expand", lambda k: (_r(2, 1, 3), torch.tensor(-1 if k == 0 else 4)), sample="run_time_sizes",
           fn=lambda x, s: x.expand(2, s, 3)),
]

# tril/triu with a diagonal that is a graph input (a scripted int): Trilu takes it as an input (opset 14); before, the
# mask compares column - row with it at run time.
class _Triangle(torch.nn.Module):
    def __init__(self, upper: bool):
        super().__init__()
        self.upper = upper

    def forward(self, x, diagonal: int):
        return torch.triu(x, diagonal=diagonal) if self.upper else torch.tril(x, diagonal=diagonal)


CASES += [
    OpCase("tril", lambda k: (_r(2, 3 + k, 4), [5, -1][k]), sample="run_time_diagonal",
           module=lambda: torch.jit.script(_Triangle(False)), dynamic_min_opset=9),
    OpCase("triu", lambda k: (_r(2, 3 + k, 4), [1, -2][k]), sample="run_time_diagonal",
           module=lambda: torch.jit.script(_Triangle(True)), dynamic_min_opset=9),
]

# chunk into a number of pieces computed at run time (a size of a dynamic dim): Slices at computed bounds (opset 10).
# (3 and 4 chunks of 5 columns are both three pieces, 2 + 2 + 1: a trace fixes the number of outputs.)
CASES += [
    OpCase("chunk", lambda k: (_r(3 + k, 5),), sample="run_time_count", dynamic_min_opset=10,
           fn=lambda x: torch.chunk(x, x.size(0), dim=1), frozen_by_trace=_PIECES_FIXED),
    OpCase("chunk", lambda k: (_r(3 + k, 5),), sample="run_time_count_negative_dim", dynamic_min_opset=10,
           fn=lambda x: torch.chunk(x, x.size(0), dim=-1), frozen_by_trace=_PIECES_FIXED),
]

# F.fold as Col2Im-18 (PyTorch's [N, C * kH * kW, L] columns are Col2Im's layout; pads [pH, pW, pH, pW]); below 18 the
# grouped ConvTranspose of one-hot kernels, which needs a static channel count: a run-time one needs Col2Im (18).
CASES += [
    OpCase("col2im", lambda k: (_r(2, (2 + k) * 6, 15),), sample="run_time_channels", dynamic_min_opset=18,
           fn=lambda x: F.fold(x, (5, 7), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2))),
    OpCase("col2im", lambda k: (_r(3 * 4, 9 + 3 * k),), sample="unbatched", dynamic=False,
           fn=lambda x: F.fold(x, (4, 4), 2, stride=1)),
    OpCase("col2im", lambda k: (_r(1 + k, 2 * 4, 9, dtype=torch.float16),), sample="float16",
           fn=lambda x: F.fold(x, (4, 4), 2, stride=1)),
]

# Circular padding as Pad-19 mode 'wrap' (negative pads crop with a Slice first: torch wraps the cropped tensor, and
# onnx.reference refuses negative 'wrap' pads); Slices and a Concat per axis below 19. Pads as large as the dim, three
# padded dims, integers, bools, and _pad_circular itself. (bfloat16 keeps the Slices: ONNX Runtime has no
# bfloat16 Pad-19, a declared workaround with its probe.)
CASES += [
    OpCase("pad", lambda k: (_r(1 + k, 2, 3, 4, 5),), sample="circular_3d_whole_dims",
           fn=lambda x: F.pad(x, (5, 5, 0, 4, 3, 1), mode="circular")),
    OpCase("pad", lambda k: (_r(1 + k, 3, 6, dtype=torch.int64),), sample="circular_int64_crop_one_side",
           fn=lambda x: F.pad(x, (2, -1), mode="circular")),
    OpCase("pad", lambda k: (_r(2 + k, 3, 6, dtype=torch.bool),), sample="circular_bool",
           fn=lambda x: F.pad(x, (0, 4), mode="circular")),
    OpCase("_pad_circular", lambda k: (_r(1 + k, 2, 5),), fn=lambda x: torch._C._nn._pad_circular(x, [1, 3])),
]
