"""Registry dispatch per opset, custom-layer precedence and parse_args."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exporter import ir
from exporter.errors import SymbolicValueError, UnsupportedOperatorError
from exporter.registry import MAX_OPSET, MIN_OPSET, REGISTRY, SymbolicRegistry, parse_args


def _variant(tag):
    return lambda g, *args: tag


@pytest.fixture()
def registry():
    reg = SymbolicRegistry()
    reg.register("test::op", 9, _variant("v9"))
    reg.register("test::op", 11, _variant("v11"))
    reg.register("test::op", 13, _variant("v13"))
    return reg


@pytest.mark.parametrize("opset, expected", [(9, "v9"), (10, "v9"), (11, "v11"), (12, "v11"), (13, "v13"), (16, "v13")])
def test_dispatch_picks_highest_since_at_or_below_opset(registry, opset, expected):
    assert registry.lookup("test::op", opset)(None) == expected


def test_below_lowest_variant_names_minimum_opset(registry):
    with pytest.raises(UnsupportedOperatorError) as info:
        registry.lookup("test::op", 8)
    assert str(info.value) == "test::op is not exportable at opset 8: needs opset >= 9"
    assert info.value.min_opset == 9 and info.value.opset == 8


def test_unknown_op_says_no_symbolic():
    with pytest.raises(UnsupportedOperatorError, match="no symbolic is registered"):
        SymbolicRegistry().lookup("aten::nothing_like_this", 14)


def test_custom_registration_wins_from_its_opset_and_unregister_restores(registry):
    registry.register("test::op", 12, _variant("custom12"), custom=True)
    assert registry.lookup("test::op", 11)(None) == "v11"
    assert registry.lookup("test::op", 12)(None) == "custom12"
    assert registry.lookup("test::op", 16)(None) == "custom12"
    registry.unregister("test::op", 12)
    assert registry.lookup("test::op", 16)(None) == "v13"


def test_registering_same_since_replaces_variant(registry):
    registry.register("test::op", 11, _variant("v11b"))
    assert registry.lookup("test::op", 11)(None) == "v11b"
    assert [v.since for v in registry.variants("test::op")] == [9, 11, 13]


def test_builtin_registry_covers_the_foundation_models():
    for name in ["aten::_convolution", "aten::relu", "aten::max_pool2d", "aten::adaptive_avg_pool2d", "aten::flatten",
                 "aten::linear", "aten::batch_norm", "aten::add", "aten::cat", "aten::dropout"]:
        for opset in range(MIN_OPSET, MAX_OPSET + 1):
            assert REGISTRY.is_supported(name, opset), (name, opset)


def _constant(payload):
    value = ir.Value("c")
    value.const = np.asarray(payload)
    return value


def test_parse_args_converts_constants_of_every_kind():
    seen = {}

    @parse_args("v", "i", "f", "b", "is", "fs", "s", "none")
    def symbolic(g, v, i, f, b, ints, floats, s, dropped):
        seen.update(v=v, i=i, f=f, b=b, ints=ints, floats=floats, s=s, dropped=dropped)

    marker = ir.Value("x")
    symbolic(None, marker, _constant(3), 0.5, True, [1, _constant(2)], _constant([1.5, 2.5]), "mean", "ignored")
    assert seen == dict(v=marker, i=3, f=0.5, b=True, ints=[1, 2], floats=[1.5, 2.5], s="mean", dropped=None)
    assert isinstance(seen["i"], int) and isinstance(seen["f"], float)


def test_parse_args_tensor_descriptor_gives_a_tensor():
    @parse_args("t")
    def symbolic(g, t):
        return t

    assert torch.equal(symbolic(None, _constant([1, 2])), torch.tensor([1, 2]))


def test_parse_args_rejects_dynamic_value_where_constant_needed_and_names_argument():
    @parse_args("v", "i")
    def symbolic(g, input, dim):
        return dim

    with pytest.raises(SymbolicValueError, match="argument 'dim'.*computed at run time"):
        symbolic(None, ir.Value("x"), ir.Value("dynamic"))


def test_parse_args_rejects_unknown_descriptor():
    with pytest.raises(ValueError, match="unknown parse_args descriptor"):
        parse_args("q")
