"""Cases for spectral ops: torch.stft as STFT-17, read through torch.view_as_real (ONNX has no complex numbers)."""

import torch

from opcases import OpCase


def _stft(**kwargs):
    return lambda x, *window: torch.view_as_real(torch.stft(x, return_complex=True, window=window[0] if window else None,
                                                            **kwargs))


def _signal(*shape, dtype=torch.float32):
    return lambda k: (torch.randn(*shape[:-1], shape[-1] + 8 * k, dtype=dtype),)


_STFT = dict(min_opset=17)
CASES = [
    OpCase("stft", lambda k: (torch.randn(2 + k, 64 + 8 * k), torch.hann_window(16)), sample="hann_center",
           **_STFT, fn=_stft(n_fft=16, hop_length=4)),
    # win_length < n_fft: PyTorch centres the window in n_fft samples, zeros around (a window given as an input: Pad)
    OpCase("stft", lambda k: (torch.randn(2, 50 + 8 * k), torch.hamming_window(12)), sample="short_window_no_center",
           **_STFT, fn=_stft(n_fft=16, hop_length=5, win_length=12, center=False)),
    # no window (ones over win_length), normalized, both sides of the spectrum, a 1-D signal
    OpCase("stft", _signal(40), sample="1d_normalized_two_sided", **_STFT,
           fn=_stft(n_fft=8, win_length=6, normalized=True, onesided=False, center=False)),
    # a window built in the graph (folded to a constant), constant-padded centring, doubles
    OpCase("stft", _signal(3, 70, dtype=torch.float64), sample="float64_blackman_constant_pad", **_STFT,
           fn=lambda x: torch.view_as_real(torch.stft(x, 20, hop_length=7, window=torch.blackman_window(20,
                                                      dtype=torch.float64), pad_mode="constant", return_complex=True))),
]
