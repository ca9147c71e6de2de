"""The distribution comparison that random-op cases rest on must reject a wrong distribution, not only accept
a right one."""

import numpy as np

from conformance.op_runner import compare_distributions


def test_same_distribution_passes():
    rng = np.random.default_rng(0)
    verdict = compare_distributions([rng.random(4096).astype(np.float32)], [rng.random(4096).astype(np.float32)])
    assert verdict.ok, verdict.message
    assert verdict.comparison.startswith("distribution")


def test_wrong_distribution_fails():
    rng = np.random.default_rng(0)
    uniform = rng.random(4096).astype(np.float32)
    wider = (rng.random(4096) * 1.15).astype(np.float32)
    normal = rng.standard_normal(4096).astype(np.float32)
    for wrong in (wider, normal):
        verdict = compare_distributions([uniform], [wrong])
        assert not verdict.ok and "distributions differ" in verdict.message


def test_shape_and_dtype_must_match():
    draws = np.random.default_rng(0).random((64, 64))
    verdict = compare_distributions([draws], [draws.astype(np.float32)])
    assert not verdict.ok and "float32" in verdict.message
    assert not compare_distributions([draws], [draws.reshape(32, 128)]).ok
