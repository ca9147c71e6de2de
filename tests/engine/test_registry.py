"""Registry dispatch per opset, custom-layer precedence, refusals, the declared floors, and parse_args."""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types

import numpy as np
import pytest
import torch

import exporter  # noqa: F401  (registers the symbolics)
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


def _refusal(g, *args):
    raise UnsupportedOperatorError("test::op", 8, reason="this form: needs opset >= 10")


def test_a_refusal_is_dispatched_to_but_not_counted_as_support(registry):
    registry.register("test::op", 7, _refusal, refuses=True)
    assert registry.lookup("test::op", 8) is _refusal  # its own message, not the registry's
    assert registry.has_symbolic("test::op", 8) and not registry.is_supported("test::op", 8)
    assert registry.supported_opsets("test::op") == list(range(9, MAX_OPSET + 1))
    assert registry.lowest_opset("test::op") == registry.min_opset("test::op") == 9


def test_an_op_refused_at_every_opset_is_supported_at_none():
    registry = SymbolicRegistry()
    registry.register("test::gap", MIN_OPSET, _refusal, refuses=True)
    assert registry.lookup("test::gap", MAX_OPSET) is _refusal
    assert registry.supported_opsets("test::gap") == [] and registry.lowest_opset("test::gap") is None


# The lowest opset at which some use of each op exports (None: none does), where the symbolic refuses below it.
DECLARED_FLOORS = {
    "aten::_upsample_bilinear2d_aa": 18, "aten::_upsample_bicubic2d_aa": 18,  # Resize antialias
    "aten::_upsample_lanczos2d_aa": None,  # Resize has no Lanczos filter
    "aten::affine_grid_generator": 20,  # AffineGrid
    "aten::grid_sampler": 16, "aten::grid_sampler_2d": 16, "aten::grid_sampler_3d": 16,  # GridSample
    "aten::index_put": 9, "aten::index_put_": 9, "aten::_unsafe_index_put": 9,  # Where (a mask), ScatterND (11)
    "aten::stft": 17,  # STFT
    "torchvision::deform_conv2d": 19,  # DeformConv
    "torchvision::ps_roi_align": None, "torchvision::ps_roi_pool": None,  # no ONNX operator
    "torchvision::roi_align": 10,  # RoiAlign
    "aten::gelu": 7,  # the tanh approximation exports at 7; the exact form's Erf (9) is the form's own floor
}


@pytest.mark.parametrize("name, lowest", DECLARED_FLOORS.items())
def test_the_registry_declares_where_an_op_starts_to_export(name, lowest):
    assert REGISTRY.lowest_opset(name) == lowest
    assert REGISTRY.has_symbolic(name, MIN_OPSET)  # below the floor its symbolic still gives the error


def _opset_argument(node: ast.expr, fn: types.FunctionType) -> int:
    return node.value if isinstance(node, ast.Constant) else fn.__globals__[node.id]


def _refusal_floor(fn, depth: int = 0) -> float | None:
    """The opset below which ``fn`` refuses every input, read from the statements it runs before the first one that
    may return: ``require_opset(g, N, ...)`` gives N, a ``raise`` refuses at every opset (infinity), and a call of a
    module-level helper counts as the helper's own start. None where nothing there refuses."""
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType) or depth > 3:
        return None
    for statement in ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0].body:
        if any(isinstance(node, ast.Return) for node in ast.walk(statement)):
            return None
        if isinstance(statement, ast.Raise):
            return math.inf
        call = getattr(statement, "value", None)
        if not (isinstance(statement, (ast.Expr, ast.Assign)) and isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name)):
            continue
        if call.func.id == "require_opset":
            return _opset_argument(call.args[1], fn)
        floor = _refusal_floor(fn.__globals__.get(call.func.id), depth + 1)
        if floor is not None:
            return floor
    return None


def _variant_spans():
    """(name, variant, the opset where the next variant takes over) for every built-in variant."""
    for name in REGISTRY.names():
        variants = REGISTRY.variants(name)
        for variant, following in zip(variants, variants[1:] + [None], strict=True):
            yield name, variant, following.since if following else MAX_OPSET + 1


# Symbolics that refuse every input below an opset, yet the op exports there in another way.
REFUSING_YET_EXPORTED = {
    "aten::eye": "a constant size folds at export time before any symbolic; only a run-time size reaches this one",
}


def test_the_scan_reads_a_refusing_start():
    from exporter.symbolics import resize, torchvision_ops

    assert _refusal_floor(resize.grid_sampler_before_16) == 16  # through _require_grid_sample
    assert _refusal_floor(torchvision_ops.roi_align) == 10  # after the aligned=True check
    assert _refusal_floor(torchvision_ops.position_sensitive_roi) == math.inf
    assert _refusal_floor(torchvision_ops.nms) is None


def test_no_symbolic_counted_as_support_refuses_every_input_there():
    """A symbolic that starts by refusing below opset N is registered since N, or as a refusal below it."""
    counted = [(name, variant.since, _refusal_floor(variant.fn)) for name, variant, _ in _variant_spans()
               if not variant.refuses and name not in REFUSING_YET_EXPORTED]
    overstated = [(name, since, floor) for name, since, floor in counted if (floor or 0) > since]
    assert not overstated, "(op, registered since, refuses below): " + repr(overstated)


# Refusals whose every form refuses on a branch of its own, which the scan of the start cannot see.
REFUSING_ON_EVERY_BRANCH = {"aten::index_put", "aten::index_put_", "aten::_unsafe_index_put"}


def test_every_refusal_refuses_every_input_where_it_applies():
    refusals = [(name, variant.since, until, _refusal_floor(variant.fn)) for name, variant, until in _variant_spans()
                if variant.refuses and name not in REFUSING_ON_EVERY_BRANCH]
    understated = [(name, since, until) for name, since, until, floor in refusals if (floor or 0) < until]
    assert not understated, "(op, refusal since, next variant since): " + repr(understated)


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
