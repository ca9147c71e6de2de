"""Spectral ops: the short-time Fourier transform (STFT, opset 17).

ONNX has no complex numbers: its STFT gives the real and imaginary parts as a trailing axis of 2, which is what
``torch.view_as_real`` makes of PyTorch's complex result (and what the deprecated ``return_complex=False`` returns).
So ``torch.stft(..., return_complex=True)`` exports only where ``view_as_real`` is all that reads it; that
``view_as_real`` then passes the STFT's output through. Any other reader of the complex tensor is refused.
"""

from __future__ import annotations

import math

import numpy as np

from exporter import dtypes
from exporter.errors import SymbolicValueError
from exporter.lowering.core import cast, constant_value, is_value, require_opset, require_rank, squeeze, unsqueeze
from exporter.lowering.shape import pad_op, transpose_perm
from exporter.registry import symbolic, unsupported


def _argument(x, default):
    return default if x is None else constant_value(x)


@symbolic("aten::stft", refuses=True)
def stft_before_17(g, self, *args):
    """Registered from opset 7 so that the error names the opset stft needs: 17 (STFT)."""
    require_opset(g, 17, "stft needs STFT")


@symbolic("aten::stft", since=17)
def stft(g, self, n_fft, hop_length=None, win_length=None, window=None, normalized=False, onesided=None,
         return_complex=None, align_to_window=None):
    """torch.stft of a real signal ([L] or [B, L]; ``center`` has padded it already) as STFT-17 (signal [B, L, 1],
    frame_step, window, frame_length; onesided). PyTorch's window of win_length sits in the middle of n_fft samples
    (zeros around it; ones when it gives none); ``normalized`` scales by n_fft ** -0.5. STFT gives
    [B, frames, bins, 2]; PyTorch's view_as_real gives [B, bins, frames, 2]."""
    n_fft = int(constant_value(n_fft))
    hop = int(_argument(hop_length, n_fft // 4))
    win = int(_argument(win_length, n_fft))
    if bool(_argument(align_to_window, False)):
        raise unsupported(g.op_kind, g.opset, "stft with align_to_window=True has no ONNX form")
    if bool(_argument(return_complex, False)):
        readers = {kind for kind, _, _ in g.output_readers(0)}
        if readers != {"aten::view_as_real"}:
            raise unsupported(g.op_kind, g.opset, "stft's complex result exports only through torch.view_as_real "
                              f"(ONNX has no complex numbers); here it is read by {sorted(readers)}")
    rank = require_rank(g, self)
    if rank not in (1, 2) or not dtypes.is_float(g.dtype(self)):
        raise SymbolicValueError("stft exports for a real floating signal of rank 1 or 2")
    elem = g.dtype(self)
    signal = unsqueeze(g, self, [0, 2] if rank == 1 else [2])
    frames = g.op("STFT", signal, g.const(np.array(hop, dtype=np.int64)), _full_window(g, window, win, n_fft, elem),
                  g.const(np.array(n_fft, dtype=np.int64)), onesided_i=int(bool(_argument(onesided, True))))
    if bool(_argument(normalized, False)):
        frames = g.op("Mul", frames, g.const(np.array(1 / math.sqrt(n_fft), dtype=dtypes.numpy_from_onnx(elem))))
    frames.shape = (None,) * 4
    out = transpose_perm(g, frames, [0, 2, 1, 3])
    return squeeze(g, out, [0]) if rank == 1 else out


def _full_window(g, window, win: int, n_fft: int, elem: int):
    """The window over all n_fft samples, as PyTorch pads it: win_length samples in the middle, zeros around."""
    left = (n_fft - win) // 2
    numbers = dtypes.numpy_from_onnx(elem)
    if window is None or (is_value(window) and window.const is not None):
        taps = np.ones(win) if window is None else np.asarray(window.const, dtype=np.float64)
        return g.const(np.pad(taps, (left, n_fft - win - left)).astype(numbers))
    window = cast(g, window, elem)
    return window if win == n_fft else pad_op(g, window, [left, n_fft - win - left], "constant")


@symbolic("aten::view_as_real")
def view_as_real(g, self):
    """view_as_real of stft's result, which STFT already gives as real and imaginary parts on a trailing axis of 2.
    ONNX has no complex numbers: any other complex tensor is refused."""
    if g.input_producer(0)[0] != "aten::stft":
        raise unsupported(g.op_kind, g.opset, "view_as_real of a complex tensor other than stft's result "
                          "(ONNX has no complex numbers)")
    return self
