"""Cases of ``exporter/symbolics/rearrange.py``: narrow, flips and rolls, padding, shuffles, sliding windows and the
other rearrangements of a tensor's elements, moved here from ``shape`` with their family."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from opcases import OpCase, random_tensor


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


# tril/triu with a diagonal that is a graph input (a scripted int): Trilu takes it as an input (opset 14); before, the
# mask compares column - row with it at run time.
class _Triangle(torch.nn.Module):
    def __init__(self, upper: bool):
        super().__init__()
        self.upper = upper

    def forward(self, x, diagonal: int):
        return torch.triu(x, diagonal=diagonal) if self.upper else torch.tril(x, diagonal=diagonal)


CASES = [
    # slicing-based rearrangements
    OpCase("narrow", lambda k: (random_tensor(2 + k, 6),), fn=lambda x: x.narrow(1, 1, 3)),
    OpCase("narrow", lambda k: (random_tensor(6, 2 + k, dtype=torch.int64),), sample="negative_start", fn=lambda x: x.narrow(0, -4, 2)),
    OpCase("flip", lambda k: (random_tensor(2 + k, 3, 4),), fn=lambda x: x.flip(-1)),
    OpCase("flip", lambda k: (random_tensor(2 + k, 3, dtype=torch.float16),), sample="float16", fn=lambda x: x.flip(1)),
    OpCase("flip", lambda k: (random_tensor(2 + k, 3, 4, dtype=torch.int64),), sample="dynamic_dim", fn=lambda x: x.flip(0, 2),
           dynamic_min_opset=9),
    OpCase("roll", lambda k: (random_tensor(2 + k, 5),), fn=lambda x: x.roll(2, 1)),
    OpCase("roll", lambda k: (random_tensor(4 + k, 5),), sample="dynamic_dim_negative", fn=lambda x: x.roll(-1, 0),
           dynamic_min_opset=9),
    OpCase("roll", lambda k: (random_tensor(2 + 3 * k, 3, dtype=torch.int64),), sample="dynamic_dim_shift_beyond_size",
           fn=lambda x: x.roll(4, 0), dynamic_min_opset=9),
    OpCase("roll", lambda k: (random_tensor(3, 4),), sample="flat", fn=lambda x: x.roll(5)),
    OpCase("roll", lambda k: (random_tensor(3, 4 + k),), sample="multi", fn=lambda x: x.roll((1, -1), (0, 1)),
           dynamic_min_opset=9),
    # padding
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 5),), sample="constant", fn=lambda x: F.pad(x, (1, 2), value=1.5)),
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 4, 5),), sample="reflect", fn=lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect")),
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 4, 5),), sample="replicate", fn=lambda x: F.pad(x, (1, 0, 2, 3), mode="replicate")),
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 4, 5),), sample="circular", fn=lambda x: F.pad(x, (1, 2, 2, 1), mode="circular")),
    # Negative circular pads crop first and wrap the cropped tensor (OpInfo pad.circular sample 7).
    OpCase("pad", lambda k: (random_tensor(1 + k, 3, 4, 4),), sample="circular_negative",
           fn=lambda x: F.pad(x, (-1, 1, -2, 1), mode="circular")),
    OpCase("pad", lambda k: (random_tensor(2 + k, 5, dtype=torch.int64),), sample="int64", fn=lambda x: F.pad(x, (2, 1), value=3)),
    OpCase("pad", lambda k: (random_tensor(2 + k, 6),), sample="negative_crop", fn=lambda x: F.pad(x, (-1, 2))),
    OpCase("pad", lambda k: (random_tensor(2 + k, 5),), sample="bool", fn=lambda x: F.pad(x > 0, (1, 2), value=True)),
    # Sizes computed at run time (a dynamic export): Pad takes them as an input from 11; at 9-10 the kept positions
    # are gathered and ConstantOfShape blocks concatenated. Negative sizes crop; a bool mask padded as transformers'
    # attention masks are (Pad takes bool from 13 only).
    OpCase("pad", lambda k: (random_tensor(2 + k, 5 + k),), sample="run_time_sizes", dynamic_min_opset=9,
           fn=lambda x: F.pad(x, (x.size(0) - 1, 8 - x.shape[-1]), value=2.5)),
    OpCase("pad", lambda k: (random_tensor(3 + k, 6 + k, dtype=torch.int64),), sample="run_time_crop", dynamic_min_opset=9,
           fn=lambda x: F.pad(x, (x.shape[1] - 4, 4 - x.shape[-1], 0, 2 - x.shape[0]), value=7)),
    OpCase("pad", lambda k: (torch.tensor([[float("nan"), -float("inf"), 1.0, float("inf"), -2.0] + [0.5] * k] * (2 + k)),),
           sample="run_time_nonfinite", dynamic_min_opset=9, fn=lambda x: F.pad(x, (x.shape[0] - 2, 8 - x.shape[-1]))),
    OpCase("pad", lambda k: (random_tensor(2 + k, 5 + k),), sample="run_time_bool_mask", dynamic_min_opset=9,
           fn=lambda x: F.pad(x > 0, (0, 9 - x.shape[-1]))),
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 5, dtype=torch.float16),), sample="float16_reflect",
           fn=lambda x: F.pad(x, (2, 1), mode="reflect")),
    OpCase("constant_pad_nd", lambda k: (random_tensor(1 + k, 3, 3),), module=lambda: torch.nn.ConstantPad2d((1, 0, 0, 2), -1.0)),
    OpCase("reflection_pad1d", lambda k: (random_tensor(1 + k, 2, 5),), module=lambda: torch.nn.ReflectionPad1d(2)),
    OpCase("reflection_pad2d", lambda k: (random_tensor(1 + k, 2, 4, 5),), module=lambda: torch.nn.ReflectionPad2d((1, 2, 0, 3))),
    OpCase("replication_pad2d", lambda k: (random_tensor(1 + k, 2, 4, 5),), module=lambda: torch.nn.ReplicationPad2d(2)),
    OpCase("replication_pad3d", lambda k: (random_tensor(1 + k, 1, 3, 4, 5),), module=lambda: torch.nn.ReplicationPad3d(1)),
    # shuffles
    OpCase("pixel_shuffle", lambda k: (random_tensor(1 + k, 8, 3, 4),), fn=lambda x: F.pixel_shuffle(x, 2)),
    OpCase("pixel_shuffle", lambda k: (random_tensor(1, 9, 2 + k, 2, dtype=torch.int64),), sample="int64", fn=lambda x: F.pixel_shuffle(x, 3)),
    OpCase("pixel_unshuffle", lambda k: (random_tensor(1 + k, 2, 4, 6),), fn=lambda x: F.pixel_unshuffle(x, 2)),
    OpCase("channel_shuffle", lambda k: (random_tensor(1 + k, 6, 3, 2),), fn=lambda x: F.channel_shuffle(x, 3)),
    OpCase("channel_shuffle", lambda k: (random_tensor(2, 4, 3 + k),), sample="3d", module=lambda: torch.nn.ChannelShuffle(2)),
    # sliding windows
    OpCase("unfold", lambda k: (random_tensor(2 + k, 7),), fn=lambda x: x.unfold(1, 3, 2)),
    OpCase("unfold", lambda k: (random_tensor(6, 2 + k, dtype=torch.int64),), sample="dim0", fn=lambda x: x.unfold(0, 2, 1)),
    OpCase("im2col", lambda k: (random_tensor(1 + k, 2, 5, 6),), fn=lambda x: F.unfold(x, (2, 3), dilation=1, padding=1, stride=2)),
    OpCase("col2im", lambda k: (random_tensor(1 + k, 2 * 6, 9),), fn=lambda x: F.fold(x, (5, 6), (2, 3), padding=1, stride=2)),
    # grids, triangles, diagonals
    OpCase("meshgrid", lambda k: (random_tensor(3 + k), random_tensor(4)), fn=lambda x, y: torch.meshgrid(x, y, indexing="ij")),
    OpCase("meshgrid", lambda k: (random_tensor(3 + k), random_tensor(4), random_tensor(2)), sample="xy", fn=lambda x, y, z: torch.meshgrid(x, y, z, indexing="xy")),
    OpCase("tril", lambda k: (random_tensor(2 + k, 4, 5),), fn=lambda x: torch.tril(x)),
    OpCase("tril", lambda k: (random_tensor(4, 5, dtype=torch.int64),), sample="diagonal_int", fn=lambda x: torch.tril(x, -1)),
    OpCase("triu", lambda k: (random_tensor(3, 4 + k),), sample="dynamic", fn=lambda x: torch.triu(x, 1),
           dynamic_min_opset=9),
    OpCase("triu", lambda k: (random_tensor(4, 4, dtype=torch.bool),), sample="bool", fn=lambda x: torch.triu(x, 2)),
    OpCase("diagonal", lambda k: (random_tensor(2 + k, 4, 5),), fn=lambda x: torch.diagonal(x, 1, 1, 2)),
    OpCase("diagonal", lambda k: (random_tensor(4, 2 + k, 3),), sample="negative_offset", fn=lambda x: torch.diagonal(x, -1, 0, -1)),
    OpCase("diag", lambda k: (random_tensor(4),), fn=lambda x: torch.diag(x, 1)),
    OpCase("diag", lambda k: (random_tensor(3, 4, dtype=torch.int64),), sample="matrix", fn=lambda x: torch.diag(x, -1)),
    OpCase("broadcast_tensors", lambda k: (random_tensor(2 + k, 1, 3), random_tensor(4, 1), random_tensor(3)),
           fn=lambda a, b, c: torch.broadcast_tensors(a, b, c)),
    OpCase("broadcast_tensors", lambda k: (random_tensor(2 + k, 1), random_tensor(1, 3 + k)), sample="both_dynamic",
           fn=lambda a, b: torch.broadcast_tensors(a, b)),
    OpCase("atleast_1d", lambda k: (torch.tensor(1.5),), fn=torch.atleast_1d),
    OpCase("atleast_2d", lambda k: (torch.tensor(1.5), random_tensor(3 + k)), sample="list",
           fn=lambda a, b: torch.atleast_2d((a, b))),
    OpCase("atleast_3d", lambda k: (random_tensor(3 + k), random_tensor(2 + k, 3)), sample="list",
           fn=lambda a, b: torch.atleast_3d((a, b))),
    OpCase("as_strided", lambda k: (random_tensor(5 + k, 8, 7),), sample="overlapping_offset",
           fn=lambda x: x.as_strided((3, 3, 3), (1, 4, 2), storage_offset=2)),
    OpCase("as_strided", lambda k: (random_tensor(8, 2, 8),), sample="sliding_chunks_of_a_view", fn=_sliding_chunks,
           dynamic=False),
    OpCase("roll", lambda k: (torch.randn(0, 0, 0),), sample="empty", dynamic=False, fn=lambda x: x.roll(2)),
    OpCase("im2col", lambda k: (torch.randn(0, 1, 5, 5),), sample="empty_batch", dynamic=False,
           fn=lambda x: F.unfold(x, 2)),
    OpCase("narrow", lambda k: (random_tensor(5 + k, 5, 5),), sample="zero_length", fn=lambda x: x.narrow(1, 0, 0)),
    OpCase("diagonal", lambda k: (random_tensor(3 + k, 5 + 2 * k),), sample="dynamic_dims", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x)),
    OpCase("diagonal", lambda k: (random_tensor(2, 5 + k, 3 + 2 * k),), sample="dynamic_dims_offset", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, 2, 1, 2)),
    OpCase("diagonal", lambda k: (random_tensor(6 + 2 * k, 3, 4 + k),), sample="dynamic_dims_negative_offset", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, -2, -1, 0)),
    OpCase("diagonal", lambda k: (random_tensor(3 + k, 2 + k),), sample="dynamic_dims_offset_past_end", dynamic_min_opset=10,
           fn=lambda x: torch.diagonal(x, 5)),
    OpCase("diag", lambda k: (random_tensor(5 + k, 3, dtype=torch.int64),), sample="matrix_dynamic", dynamic_min_opset=10,
           fn=lambda x: torch.diag(x, 1)),
    OpCase("tril", lambda k: (random_tensor(2, 3 + k, 4), [5, -1][k]), sample="run_time_diagonal",
           module=lambda: torch.jit.script(_Triangle(False)), dynamic_min_opset=9),
    OpCase("triu", lambda k: (random_tensor(2, 3 + k, 4), [1, -2][k]), sample="run_time_diagonal",
           module=lambda: torch.jit.script(_Triangle(True)), dynamic_min_opset=9),
    OpCase("col2im", lambda k: (random_tensor(2, (2 + k) * 6, 15),), sample="run_time_channels", dynamic_min_opset=18,
           fn=lambda x: F.fold(x, (5, 7), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(1, 2))),
    OpCase("col2im", lambda k: (random_tensor(3 * 4, 9 + 3 * k),), sample="unbatched", dynamic=False,
           fn=lambda x: F.fold(x, (4, 4), 2, stride=1)),
    OpCase("col2im", lambda k: (random_tensor(1 + k, 2 * 4, 9, dtype=torch.float16),), sample="float16",
           fn=lambda x: F.fold(x, (4, 4), 2, stride=1)),
    OpCase("pad", lambda k: (random_tensor(1 + k, 2, 3, 4, 5),), sample="circular_3d_whole_dims",
           fn=lambda x: F.pad(x, (5, 5, 0, 4, 3, 1), mode="circular")),
    OpCase("pad", lambda k: (random_tensor(1 + k, 3, 6, dtype=torch.int64),), sample="circular_int64_crop_one_side",
           fn=lambda x: F.pad(x, (2, -1), mode="circular")),
    OpCase("pad", lambda k: (random_tensor(2 + k, 3, 6, dtype=torch.bool),), sample="circular_bool",
           fn=lambda x: F.pad(x, (0, 4), mode="circular")),
    OpCase("_pad_circular", lambda k: (random_tensor(1 + k, 2, 5),), fn=lambda x: torch._C._nn._pad_circular(x, [1, 3])),
]
