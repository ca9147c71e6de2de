"""Custom symbolics (register/unregister_custom_op_symbolic) and torch.autograd.Function export, per the docs.

The docs' custom op is a C++ op; here it is defined with ``torch.library`` (same TorchScript node:
``custom_ops::foo_forward``). Models whose nodes live in a custom domain cannot run on ONNX Runtime (it has no
kernel for them), so those are verified with the ONNX checker (which every export runs) and by structure;
every model made of standard ops is run on ONNX Runtime and compared with PyTorch.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

import exporter
from exporter.errors import CheckerError, ExportArgumentError, UnsupportedOperatorError
from tests.conftest import export_bytes, run_onnx


@torch.library.custom_op("custom_ops::foo_forward", mutates_args=())
def foo_forward(input1: torch.Tensor, input2: torch.Tensor, attr1: float, attr2: int) -> torch.Tensor:
    return input1 * attr1 + input2 * attr2


class FooModel(torch.nn.Module):
    def __init__(self, attr1, attr2):
        super().__init__()
        self.attr1 = attr1
        self.attr2 = attr2

    def forward(self, input1, input2):
        return torch.ops.custom_ops.foo_forward(input1, input2, self.attr1, self.attr2)


@exporter.parse_args("v", "v", "f", "i")
def symbolic_foo_forward(g, input1, input2, attr1, attr2):
    return g.op("custom_domain::Foo", input1, input2, attr1_f=attr1, attr2_i=attr2)


@exporter.parse_args("v", "v", "f", "i")
def symbolic_foo_forward_standard(g, input1, input2, attr1, attr2):
    """The same op as a composition of standard ONNX ops, so ONNX Runtime can check the numbers."""
    scaled1 = g.op("Mul", input1, g.op("Constant", value_t=torch.tensor(attr1, dtype=torch.float32)))
    scaled2 = g.op("Mul", input2, g.op("Constant", value_t=torch.tensor(float(attr2), dtype=torch.float32)))
    return g.op("Add", scaled1, scaled2)


@pytest.fixture
def registered():
    """Register symbolics for the test and always unregister them (the registry is process-wide)."""
    done = []

    def register(name, fn, opset):
        exporter.register_custom_op_symbolic(name, fn, opset)
        done.append((name, opset))

    yield register
    for name, opset in done:
        exporter.unregister_custom_op_symbolic(name, opset)


def _inputs():
    return torch.randn(2, 3), torch.randn(2, 3)


def _nodes(model: onnx.ModelProto, domain: str | None = None):
    return [n for n in model.graph.node if domain is None or n.domain == domain]


# -- the docs' custom-op example ----------------------------------------------------------------------------
def test_docs_custom_op_example_exports_into_custom_domain_with_version(registered):
    registered("custom_ops::foo_forward", symbolic_foo_forward, 9)
    _, result = export_bytes(FooModel(2.0, 3), _inputs(), custom_opsets={"custom_domain": 2})
    (foo,) = _nodes(result.model_proto, "custom_domain")
    assert foo.op_type == "Foo"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in foo.attribute}
    assert attrs == {"attr1": pytest.approx(2.0), "attr2": 3}
    assert list(foo.input) == [i.name for i in result.model_proto.graph.input]
    imports = {o.domain: o.version for o in result.model_proto.opset_import}
    assert imports == {"": exporter.DEFAULT_OPSET, "custom_domain": 2}
    onnx.checker.check_model(result.model_proto, full_check=True)


def test_v1_5_docs_example_without_a_domain_is_rejected_by_the_checker(registered, tmp_path):
    # The 1.5 docs emit g.op("Foo", ...) into the default domain, where no operator Foo exists: the full
    # checker every export runs rejects it, and nothing is written.
    @exporter.parse_args("v", "v", "f", "i")
    def symbolic_foo_forward_v15(g, input1, input2, attr1, attr2):
        return g.op("Foo", input1, input2, attr1_f=attr1, attr2_i=attr2)

    registered("custom_ops::foo_forward", symbolic_foo_forward_v15, 9)
    target = tmp_path / "model.onnx"
    with pytest.raises(CheckerError, match="Foo"):
        exporter.export(FooModel(2.0, 3), _inputs(), str(target), dynamo=False)
    assert not target.exists()


def test_custom_domain_version_defaults_to_1(registered):
    registered("custom_ops::foo_forward", symbolic_foo_forward, 9)
    _, result = export_bytes(FooModel(2.0, 3), _inputs())
    assert {o.domain: o.version for o in result.model_proto.opset_import}["custom_domain"] == 1


def test_custom_symbolic_of_standard_ops_runs_on_onnx_runtime(registered):
    registered("custom_ops::foo_forward", symbolic_foo_forward_standard, 9)
    model = FooModel(0.5, 2)
    x, y = _inputs()
    data, _ = export_bytes(model, (x, y), opset_version=9)
    (got,) = run_onnx(data, {"input1": x.numpy(), "input2": y.numpy()})
    np.testing.assert_allclose(got, model(x, y).numpy(), rtol=1e-6, atol=1e-6)


def test_custom_symbolic_applies_from_its_opset_only(registered):
    registered("custom_ops::foo_forward", symbolic_foo_forward, 11)
    message = "custom_ops::foo_forward is not exportable at opset 10: needs opset >= 11"
    with pytest.raises(UnsupportedOperatorError, match=message):
        export_bytes(FooModel(2.0, 3), _inputs(), opset_version=10)
    _, result = export_bytes(FooModel(2.0, 3), _inputs(), opset_version=16)
    assert [n.op_type for n in _nodes(result.model_proto, "custom_domain")] == ["Foo"]


def test_unregistered_custom_op_is_unsupported():
    with pytest.raises(UnsupportedOperatorError, match="custom_ops::foo_forward"):
        export_bytes(FooModel(2.0, 3), _inputs())


def test_unregister_removes_the_custom_symbolic():
    exporter.register_custom_op_symbolic("custom_ops::foo_forward", symbolic_foo_forward, 9)
    export_bytes(FooModel(2.0, 3), _inputs())
    exporter.unregister_custom_op_symbolic("custom_ops::foo_forward", 9)
    with pytest.raises(UnsupportedOperatorError):
        export_bytes(FooModel(2.0, 3), _inputs())


# -- overriding built-in symbolics --------------------------------------------------------------------------------
class ExpModel(torch.nn.Module):
    def forward(self, x):
        return torch.exp(x)


def exp_as_pow(g, x):
    """exp(x) = e ** x: a different but equivalent graph, so the test can see which symbolic ran."""
    return g.op("Pow", g.op("Constant", value_t=torch.tensor(np.e, dtype=torch.float32)), x)


def _op_types(model):
    return [n.op_type for n in model.graph.node]


def test_user_symbolic_overrides_builtin_at_its_opset_and_above(registered):
    registered("aten::exp", exp_as_pow, 12)
    x = torch.randn(3, 4)
    for opset in (12, 16):
        data, result = export_bytes(ExpModel(), (x,), opset_version=opset)
        assert "Pow" in _op_types(result.model_proto) and "Exp" not in _op_types(result.model_proto)
        (got,) = run_onnx(data, {"x": x.numpy()})
        np.testing.assert_allclose(got, torch.exp(x).numpy(), rtol=1e-5)
    _, below = export_bytes(ExpModel(), (x,), opset_version=11)
    assert _op_types(below.model_proto) == ["Exp"]


def test_unregistering_an_override_restores_the_builtin():
    exporter.register_custom_op_symbolic("aten::exp", exp_as_pow, 9)
    try:
        assert "Pow" in _op_types(export_bytes(ExpModel(), (torch.randn(2),))[1].model_proto)
    finally:
        exporter.unregister_custom_op_symbolic("aten::exp", 9)
    assert _op_types(export_bytes(ExpModel(), (torch.randn(2),))[1].model_proto) == ["Exp"]


@pytest.mark.parametrize("name", ["foo", "::foo", "custom_ops::", "a::b::c", 3])
def test_malformed_symbolic_names_are_rejected(name):
    with pytest.raises(ExportArgumentError, match="<namespace>::<op>"):
        exporter.register_custom_op_symbolic(name, symbolic_foo_forward, 9)


@pytest.mark.parametrize("opset", [6, 27])
def test_registration_opset_must_be_supported(opset):
    with pytest.raises(ExportArgumentError, match="opset"):
        exporter.register_custom_op_symbolic("custom_ops::foo_forward", symbolic_foo_forward, opset)


# -- torch.autograd.Function ---------------------------------------------------------------------------------------
class MyRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input: torch.Tensor) -> torch.Tensor:
        return input.clamp(min=0)

    @staticmethod
    def symbolic(g, input):
        return g.op("Clip", input, g.op("Constant", value_t=torch.tensor(0, dtype=torch.float)))


class MyLogExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input: torch.Tensor) -> torch.Tensor:
        h = input.exp()
        return h.log().log()


class Apply(torch.nn.Module):
    def __init__(self, *functions):
        super().__init__()
        self.functions = functions

    def forward(self, x):
        for function in self.functions:
            x = function.apply(x)
        return x


def test_docs_static_symbolic_method_is_used():
    x = torch.randn(2, 5)
    data, result = export_bytes(Apply(MyRelu), (x,), opset_version=11)
    assert _op_types(result.model_proto) == ["Constant", "Clip"]
    (got,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(got, x.clamp(min=0).numpy())


def test_docs_function_without_symbolic_is_inlined():
    x = torch.rand(2, 5) + 1.5  # log(log(exp(x))) needs x > 0
    data, result = export_bytes(Apply(MyLogExp), (x,))
    assert _op_types(result.model_proto) == ["Exp", "Log", "Log"]
    (got,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(got, MyLogExp.apply(x).numpy(), rtol=1e-5)


def test_functions_chain_symbolic_and_inlined():
    x = torch.rand(3) + 1.5
    data, result = export_bytes(Apply(MyLogExp, MyRelu), (x,))
    assert _op_types(result.model_proto) == ["Exp", "Log", "Log", "Constant", "Clip"]
    (got,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(got, MyRelu.apply(MyLogExp.apply(x)).numpy(), rtol=1e-5)


class ScaledShift(torch.autograd.Function):
    """Tensor and non-tensor arguments interleaved; the symbolic receives them in call order."""

    @staticmethod
    def forward(ctx, scale: float, x: torch.Tensor, shift: torch.Tensor, square: bool) -> torch.Tensor:
        out = x * scale + shift
        return out * out if square else out

    @staticmethod
    def symbolic(g, scale, x, shift, square):
        assert isinstance(scale, float) and isinstance(square, bool)
        out = g.op("Add", g.op("Mul", x, g.op("Constant", value_t=torch.tensor(scale))), shift)
        return g.op("Mul", out, out) if square else out


class SplitSum(torch.autograd.Function):
    """Two outputs, no symbolic: inlined."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, y: torch.Tensor):
        return x + y, x - y


class Mixed(torch.nn.Module):
    def forward(self, x, y):
        a, b = SplitSum.apply(x, y)
        return ScaledShift.apply(0.5, a, b, True), b


def test_function_with_scalar_arguments_and_multiple_outputs():
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    data, result = export_bytes(Mixed(), (x, y))
    assert sorted(_op_types(result.model_proto)) == sorted(["Add", "Sub", "Constant", "Mul", "Add", "Mul"])
    got = run_onnx(data, {"x": x.numpy(), "y": y.numpy()})
    for actual, expected in zip(got, Mixed()(x, y), strict=True):
        np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-5, atol=1e-6)


class Outer(torch.autograd.Function):
    """A Function whose forward calls another Function: the nested one is handled the same way."""

    @staticmethod
    def forward(ctx, x):
        return MyLogExp.apply(x) * 2


def test_nested_functions_are_inlined():
    x = torch.rand(4) + 1.5
    data, result = export_bytes(Apply(Outer), (x,))
    assert set(_op_types(result.model_proto)) == {"Exp", "Log", "Constant", "Mul"}
    (got,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(got, Outer.apply(x).numpy(), rtol=1e-5)


@pytest.mark.parametrize(
    "export_type", [exporter.OperatorExportTypes.ONNX_FALLTHROUGH, exporter.OperatorExportTypes.ONNX_ATEN_FALLBACK]
)
def test_fallthrough_and_aten_fallback_keep_functions_without_symbolic(export_type):
    # Documented: these export types avoid inlining. The node stays a PythonOp in domain "prim": only
    # the checker can verify it (ONNX Runtime has no such op).
    _, result = export_bytes(Apply(MyLogExp, MyRelu), (torch.rand(3) + 1,), operator_export_type=export_type)
    python_op, *rest = result.model_proto.graph.node
    assert (python_op.domain, python_op.op_type) == ("prim", "PythonOp")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in python_op.attribute}
    assert attrs["name"] == b"MyLogExp"
    assert [n.op_type for n in rest] == ["Constant", "Clip"]  # MyRelu still uses its symbolic


def test_registered_python_op_symbolic_takes_over_every_function(registered):
    seen = []

    def python_op(g, *args):
        seen.append(g.node.pyname())
        return g.op("Identity", args[0])

    registered("prim::PythonOp", python_op, 9)
    x = torch.randn(3)
    data, result = export_bytes(Apply(MyRelu, MyLogExp), (x,))
    assert seen == ["MyRelu", "MyLogExp"]
    (got,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(got, x.numpy())
