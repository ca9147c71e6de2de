"""The distribution comparison that random-op cases rest on must reject a wrong distribution, not only accept
a right one."""

import numpy as np
import torch

from op_tests.harness import compare_distributions


def test_same_distribution_passes():
    rng = np.random.default_rng(0)
    ok, message, comparison = compare_distributions([torch.from_numpy(rng.random(4096).astype(np.float32))],
                                                    [rng.random(4096).astype(np.float32)])
    assert ok, message
    assert comparison.startswith("distribution")


def test_wrong_distribution_fails():
    rng = np.random.default_rng(0)
    uniform = torch.from_numpy(rng.random(4096).astype(np.float32))
    wider = (rng.random(4096) * 1.15).astype(np.float32)
    normal = rng.standard_normal(4096).astype(np.float32)
    for wrong in (wider, normal):
        ok, message, _ = compare_distributions([uniform], [wrong])
        assert not ok and "distributions differ" in message


def test_shape_and_dtype_must_match():
    draws = np.random.default_rng(0).random((64, 64))
    ok, message, _ = compare_distributions([torch.from_numpy(draws)], [draws.astype(np.float32)])
    assert not ok and "float32" in message
    ok, message, _ = compare_distributions([torch.from_numpy(draws)], [draws.reshape(32, 128)])
    assert not ok
