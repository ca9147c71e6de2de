"""export(): argument checking, naming, dynamic axes, initializers, IR versions, files and verbose output."""

from __future__ import annotations

import io
import pathlib
import re
import signal
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch

import exporter
from exporter.errors import CaptureError, CheckerError, ExportArgumentError, OnnxExporterError, UnsupportedOperatorError
from tests.conftest import export_bytes, run_onnx
from tests.engine.test_differential_torch_onnx import LinearOfABuffer

PROJECT = pathlib.Path(__file__).resolve().parents[2]


class TwoLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def _model():
    return TwoLayer().eval()


@pytest.mark.parametrize("opset", [6, 27, 0, "14"])
def test_unsupported_opset_is_rejected_before_writing(tmp_path, opset):
    target = tmp_path / "m.onnx"
    with pytest.raises(ExportArgumentError, match="supports opsets 7 to 26"):
        exporter.export(_model(), torch.randn(2, 4), str(target), opset_version=opset, dynamo=False)
    assert not target.exists()


@pytest.mark.parametrize("key, what", [("z", "it names neither an input nor an output"),
                                       ("fc1.weight", "it names a parameter or buffer of the model, whose data fixes "
                                                      "its shape")])
def test_dynamic_axes_key_that_names_no_input_or_output_is_ignored_with_torch_onnx_warning(tmp_path, key, what):
    """As torch.onnx does (its warning, then the export goes on): a library passing one dynamic_axes dict for several
    exports of a model must not fail. The axes of the keys that name something are still honoured."""
    target = tmp_path / "m.onnx"
    with pytest.warns(UserWarning, match=f"Provided key {key} for dynamic axes is not a valid input/output name "
                                         f"\\({what}; the inputs are \\['x'\\]"):
        exporter.export(_model(), torch.randn(2, 4), str(target), input_names=["x"], output_names=["y"],
                        dynamic_axes={key: [0], "x": [0]}, dynamo=False)
    (batch,) = onnx.load(str(target)).graph.input[0].type.tensor_type.shape.dim[:1]
    assert batch.dim_param == "x_dynamic_axes_1"


@pytest.mark.parametrize("options, message", [
    ({"input_names": [1]}, "input_names must be a list of str"),
    ({"input_names": "x"}, "input_names must be a list of str"),
    ({"output_names": [None]}, "output_names must be a list of str"),
    ({"dynamic_axes": ["x"]}, "dynamic_axes must be a dict"),
    ({"kwargs": [1]}, "kwargs must be a dict of keyword arguments"),
    ({"kwargs": {1: torch.ones(1)}}, "kwargs must be a dict of keyword arguments"),
])
def test_an_argument_of_the_wrong_kind_is_an_argument_error_naming_it(tmp_path, options, message):
    target = tmp_path / "m.onnx"
    with pytest.raises(ExportArgumentError, match=message):
        exporter.export(_model(), torch.randn(2, 4), str(target), dynamo=False, **options)
    assert not target.exists()


def test_a_file_object_opened_for_reading_is_refused_before_any_work(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"kept")
    with open(tmp_path / "m.onnx", "rb") as readable:
        with pytest.raises(ExportArgumentError, match="cannot be written.*'rb'"):
            exporter.export(_model(), torch.randn(2, 4), readable, dynamo=False)
    assert (tmp_path / "m.onnx").read_bytes() == b"kept"


def test_a_scripted_functions_inputs_are_named_after_its_parameters():
    @torch.jit.script
    def scaled_sum(values, scale):
        return values * scale + 1

    data, result = export_bytes(scaled_sum, (torch.randn(3), torch.tensor(2.0)))
    assert result.input_names == ["values", "scale"]
    assert [i.name for i in onnx.load_from_string(data).graph.input] == ["values", "scale"]


def test_dynamic_axes_must_be_dict_or_list():
    with pytest.raises(ExportArgumentError, match="must be a dict"):
        exporter.export(_model(), torch.randn(2, 4), io.BytesIO(), input_names=["x"], dynamic_axes={"x": 0}, dynamo=False)


def test_non_tensor_output_is_a_clear_error(tmp_path):
    class ReturnsInt(torch.nn.Module):
        def forward(self, x):
            return x * 2, 3

    target = tmp_path / "m.onnx"
    with pytest.raises(OnnxExporterError, match="non-tensor output of type int"):
        exporter.export(ReturnsInt(), torch.randn(2), str(target), dynamo=False)
    assert not target.exists()


def test_unsupported_operator_leaves_no_file_and_names_op(tmp_path, monkeypatch):
    from exporter.registry import REGISTRY

    monkeypatch.setattr(REGISTRY, "_builtin", {k: v for k, v in REGISTRY._builtin.items() if k != "aten::relu"})
    target = tmp_path / "m.onnx"
    with pytest.raises(UnsupportedOperatorError, match=f"aten::relu is not exportable at opset {exporter.DEFAULT_OPSET}"):
        exporter.export(_model(), torch.randn(2, 4), str(target), dynamo=False)
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_existing_file_is_kept_when_export_fails(tmp_path):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"previous")
    with pytest.raises(ExportArgumentError):
        exporter.export(_model(), torch.randn(2, 4), str(target), opset_version=27, dynamo=False)
    assert target.read_bytes() == b"previous"


def test_untraceable_model_raises_capture_error():
    class Broken(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    with pytest.raises(CaptureError, match="tracing Broken failed: RuntimeError: boom"):
        exporter.export(Broken(), torch.randn(2), io.BytesIO(), dynamo=False)


def test_missing_directory_is_rejected(tmp_path):
    with pytest.raises(ExportArgumentError, match="does not exist"):
        exporter.export(_model(), torch.randn(2, 4), str(tmp_path / "no" / "m.onnx"), dynamo=False)


def test_text_file_object_is_rejected(tmp_path):
    with open(tmp_path / "m.onnx", "w") as handle, pytest.raises(ExportArgumentError, match="binary mode"):
        exporter.export(_model(), torch.randn(2, 4), handle, dynamo=False)


def test_path_and_file_object_produce_the_same_model(tmp_path):
    model, x = _model(), torch.randn(2, 4)
    exporter.export(model, x, str(tmp_path / "a.onnx"), dynamo=False)
    with open(tmp_path / "b.onnx", "wb") as handle:
        exporter.export(model, x, handle, dynamo=False)
    a, b = onnx.load(str(tmp_path / "a.onnx")), onnx.load(str(tmp_path / "b.onnx"))
    assert a.graph == b.graph
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary files left behind"


_KILLED_MID_WRITE = """
import os, signal, sys, torch, exporter
os.replace = lambda *_: os.kill(os.getpid(), signal.SIGKILL)  # dies with the model written, before the rename
exporter.export(torch.nn.Linear(64, 64), torch.randn(2, 64), sys.argv[1], dynamo=False)
"""


def test_an_export_killed_mid_write_leaves_a_temporary_that_the_next_export_there_removes(tmp_path):
    target = tmp_path / "m.onnx"
    killed = subprocess.run([sys.executable, "-c", _KILLED_MID_WRITE, str(target)], cwd=PROJECT, timeout=300,
                            capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    left = list(tmp_path.iterdir())
    assert len(left) == 1 and re.fullmatch(r"\.m\.onnx\.\d+-[0-9a-f]{8}\.tmp", left[0].name) and left[0].stat().st_size
    exporter.export(_model(), torch.randn(2, 4), str(target), dynamo=False)
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]


def test_temporaries_of_live_exports_and_other_targets_are_left_alone(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".m.onnx.{dead.pid}-abcd1234"
    stale.mkdir()
    (stale / "m.onnx.data").write_bytes(b"x" * 10)
    kept = [tmp_path / ".m.onnx.1-abcd1234.tmp", tmp_path / f".other.onnx.{dead.pid}-abcd1234.tmp"]
    for path in kept:  # process 1 is alive; the other belongs to another target
        path.write_bytes(b"x")
    exporter.export(_model(), torch.randn(2, 4), str(tmp_path / "m.onnx"), dynamo=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([p.name for p in kept] + ["m.onnx"])


def test_default_names_come_from_forward_signature_and_state_dict():
    data, result = export_bytes(_model(), torch.randn(2, 4), keep_initializers_as_inputs=True)
    model = onnx.load_from_string(data)
    assert model.graph.input[0].name == "x"
    assert {t.name for t in model.graph.initializer} <= set(_model().state_dict())
    assert [i.name for i in model.graph.input][1:] == [t.name for t in model.graph.initializer]


def test_input_names_longer_than_inputs_name_parameters_in_state_dict_order():
    names = ["actual_input_1"] + [f"learned_{i}" for i in range(len(_model().state_dict()))]
    data, result = export_bytes(_model(), torch.randn(2, 4), input_names=names, output_names=["output1"],
                                opset_version=9, do_constant_folding=False, keep_initializers_as_inputs=True)
    model = onnx.load_from_string(data)
    state_names = [n for n, _ in result.capture.params]
    assert [i.name for i in model.graph.input][0] == "actual_input_1"
    assert model.graph.output[0].name == "output1"
    order = list(_model().state_dict())
    assert state_names == [n for n in order if n in state_names]
    renamed = {t.name for t in model.graph.initializer}
    assert renamed <= set(names[1:])


def test_keep_initializers_as_inputs_both_ways_and_forced_below_opset_9():
    x = torch.randn(2, 4)
    with_inputs = onnx.load_from_string(export_bytes(_model(), x, keep_initializers_as_inputs=True)[0])
    without = onnx.load_from_string(export_bytes(_model(), x, keep_initializers_as_inputs=False)[0])
    forced = onnx.load_from_string(export_bytes(_model(), x, opset_version=8, keep_initializers_as_inputs=False)[0])
    assert len(with_inputs.graph.input) == 1 + len(with_inputs.graph.initializer)
    assert [i.name for i in without.graph.input] == ["x"]
    init_names = {t.name for t in forced.graph.initializer}
    assert init_names and init_names <= {i.name for i in forced.graph.input}


def test_export_params_false_makes_parameters_plain_inputs():
    model, x = _model(), torch.randn(2, 4)
    data, result = export_bytes(model, x, export_params=False)
    proto = onnx.load_from_string(data)
    assert not proto.graph.initializer
    feeds = {"x": x.numpy()}
    feeds.update({name: tensor.numpy() for name, tensor in result.capture.params})
    (out,) = run_onnx(data, {k: v for k, v in feeds.items() if k in {i.name for i in proto.graph.input}})
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset, ir_version", [(7, 3), (8, 3), (9, 4), (10, 5), (11, 6), (12, 7), (13, 7), (14, 7), (15, 8),
                                               (16, 8), (17, 8), (18, 8), (19, 9), (20, 9)])
def test_ir_version_and_opset_import_follow_the_opset(opset, ir_version):
    proto = onnx.load_from_string(export_bytes(_model(), torch.randn(2, 4), opset_version=opset)[0])
    assert proto.ir_version == ir_version
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]


def test_default_opset_is_20_as_torch_onnx():
    proto = onnx.load_from_string(export_bytes(_model(), torch.randn(2, 4))[0])
    assert proto.opset_import[0].version == exporter.DEFAULT_OPSET == 20


def test_dynamic_axes_both_forms_become_dim_params_and_work_at_other_sizes():
    model = _model()
    data, _ = export_bytes(model, torch.randn(2, 4), input_names=["x"], output_names=["y"],
                           dynamic_axes={"x": {0: "batch"}, "y": [0]})
    proto = onnx.load_from_string(data)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"
    x5 = torch.randn(5, 4)
    (out,) = run_onnx(data, {"x": x5.numpy()})
    np.testing.assert_allclose(out, model(x5).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_static_export_has_fixed_dims():
    proto = onnx.load_from_string(export_bytes(_model(), torch.randn(2, 4), input_names=["x"])[0])
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [2, 4]
    assert [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == [2, 3]


def test_constant_folding_switch():
    class WithConstantMath(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(4, 3))

        def forward(self, x):
            return x @ self.weight.transpose(0, 1)

    folded = onnx.load_from_string(export_bytes(WithConstantMath(), torch.randn(2, 3))[0])
    unfolded = onnx.load_from_string(export_bytes(WithConstantMath(), torch.randn(2, 3), do_constant_folding=False)[0])
    assert "Transpose" not in {n.op_type for n in folded.graph.node}
    assert "Transpose" in {n.op_type for n in unfolded.graph.node}


def test_verbose_prints_readable_graph(capsys):
    exporter.export(_model(), torch.randn(2, 4), io.BytesIO(), verbose=True, input_names=["actual_input_1"], dynamo=False)
    printed = capsys.readouterr().out
    assert "actual_input_1" in printed and "Gemm" in printed


def test_export_to_pretty_string():
    text = exporter.export_to_pretty_string(_model(), torch.randn(2, 4), opset_version=11)
    assert "Gemm" in text and "opset_import" in text


def test_keyword_arguments_as_trailing_dict():
    class TakesKeywords(torch.nn.Module):
        def forward(self, x, y=None, scale=2.0):
            return x * scale + (y if y is not None else 0)

    x, y = torch.randn(3), torch.randn(3)
    data, result = export_bytes(TakesKeywords(), (x, {"y": y}))
    # The default the caller left out stays the model's constant (torch.onnx's TorchScript exporter makes it an input)
    assert result.input_names == ["x", "y"]
    (out,) = run_onnx(data, {"x": x.numpy(), "y": y.numpy()})
    np.testing.assert_allclose(out, (x * 2 + y).numpy(), rtol=1e-6)


def test_checker_failure_writes_nothing(tmp_path, monkeypatch):
    from exporter import validate

    def failing_check(model):
        raise CheckerError("the exported model fails the ONNX checker: injected")

    monkeypatch.setattr(validate, "check", failing_check)
    target = tmp_path / "m.onnx"
    with pytest.raises(CheckerError):
        exporter.export(_model(), torch.randn(2, 4), str(target), dynamo=False)
    assert not target.exists()


def test_scripted_module_and_function_export():
    class Scripted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 2)

        def forward(self, x):
            return torch.relu(self.fc(x))

    module = torch.jit.script(Scripted().eval())
    x = torch.randn(4, 3)
    data, result = export_bytes(module, (x,))
    assert {n for n, _ in result.capture.params} == {"fc.weight", "fc.bias"}
    (out,) = run_onnx(data, {result.input_names[0]: x.numpy()})
    np.testing.assert_allclose(out, module(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_model_mode_is_restored_after_export():
    model = _model().train()
    exporter.export(model, torch.randn(2, 4), io.BytesIO(), dynamo=False)
    assert model.training


def test_errors_share_one_base_class():
    for error in (ExportArgumentError, CaptureError, UnsupportedOperatorError, CheckerError, exporter.SymbolicValueError):
        assert issubclass(error, OnnxExporterError)


def test_a_prepared_capture_serves_many_exports_unchanged():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU()).eval()
    args = (torch.randn(5, 4),)
    captured = exporter.prepare_capture(model, args)
    before = str(captured.graph)
    for opset in (9, 13, 16):
        fresh, reused = io.BytesIO(), io.BytesIO()
        exporter.export(model, args, fresh, opset_version=opset, dynamo=False)
        exporter.export(model, args, reused, opset_version=opset, captured=captured, dynamo=False)
        assert fresh.getvalue() == reused.getvalue(), f"opset {opset}"
    assert str(captured.graph) == before


def test_a_prepared_capture_sees_the_export_flag_and_mode():
    class Branching(torch.nn.Module):
        def forward(self, x):
            return x + 1 if exporter.is_in_onnx_export() and not self.training else x

    captured = exporter.prepare_capture(Branching().train(), (torch.zeros(2),))
    assert "aten::add" in str(captured.graph)


def test_captured_must_be_a_capture():
    with pytest.raises(ExportArgumentError, match="captured must be a Capture"):
        exporter.export(torch.nn.ReLU(), (torch.zeros(2),), io.BytesIO(), captured="not a capture", dynamo=False)


def test_ops_on_empty_tensors_fold_but_their_inputs_stay():
    """A static export folds an op on an empty tensor to an empty constant (ONNX rejects many such forms), but the
    input it read stays a model input, as in PyTorch's exporter, which keeps the op: callers feed every input."""

    class EmptyPlusOne(torch.nn.Module):
        def forward(self, x, y):
            return x + y, y * 2

    x, y = torch.randn(0), torch.randn(1)
    model_bytes, _ = export_bytes(EmptyPlusOne(), (x, y), input_names=["x", "y"], opset_version=14)
    model = onnx.load_from_string(model_bytes)
    assert [i.name for i in model.graph.input] == ["x", "y"]
    empty, doubled = run_onnx(model_bytes, {"x": x.numpy(), "y": y.numpy()})
    assert empty.shape == (0,) and empty.dtype == np.float32
    np.testing.assert_allclose(doubled, (y * 2).numpy())


class _CollectorSpy(torch.nn.Module):
    """Records whether Python's cyclic garbage collector runs while the model is traced."""

    def forward(self, x):
        import gc

        self.collector_enabled = gc.isenabled()
        return x + 1


class _Failing(torch.nn.Module):
    def forward(self, x):
        raise ValueError("boom")


def test_the_garbage_collector_is_paused_while_exporting_and_restored_after():
    import gc

    assert gc.isenabled()
    spy = _CollectorSpy()
    export_bytes(spy, (torch.randn(2),))
    assert spy.collector_enabled is False and gc.isenabled()
    with pytest.raises(CaptureError):
        exporter.export(_Failing(), (torch.randn(2),), io.BytesIO(), dynamo=False)
    assert gc.isenabled()  # restored after a failed export too
    gc.disable()
    try:
        export_bytes(spy, (torch.randn(2),))
        assert not gc.isenabled()  # a caller's choice to keep it off is kept
    finally:
        gc.enable()


class _BFloat16Slopes(torch.nn.Module):
    def forward(self, x):
        slopes = torch.tensor([0.5, 0.3, 0.1], dtype=torch.bfloat16)  # a traced constant, as Falcon's ALiBi slopes
        return (slopes * x.bfloat16()).float()


def test_a_bfloat16_constant_is_written_as_bfloat16_and_runs_right():
    x = torch.tensor([1.7, -2.3, 3.9])
    plain, _ = export_bytes(_BFloat16Slopes(), (x,), opset_version=13, runtime_workarounds=False)
    model = onnx.load_from_string(plain)
    onnx.checker.check_model(model, full_check=True)
    constants = [a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    assert onnx.TensorProto.BFLOAT16 in {t.data_type for t in constants}
    data, result = export_bytes(_BFloat16Slopes(), (x,), opset_version=13)
    assert "bfloat16_arithmetic_in_float" in result.workarounds
    (actual,) = run_onnx(data, {model.graph.input[0].name: x.numpy()})
    np.testing.assert_array_equal(actual, _BFloat16Slopes()(x).numpy())


def test_an_unnamed_input_whose_default_name_the_caller_gave_another_takes_a_suffix():
    """input_names name the inputs in order, as in torch.onnx: ``["y"]`` names the first input (x) y, and the second,
    left unnamed, cannot be y too (torch.onnx's unnamed inputs have debug names no caller gives)."""
    class Difference(torch.nn.Module):
        def forward(self, x, y):
            return x - y

    x, y = torch.randn(2, 3), torch.randn(2, 3)
    data, result = export_bytes(Difference(), (x, y), input_names=["y"])
    assert result.input_names == ["y", "y_1"]
    (out,) = run_onnx(data, {"y": x.numpy(), "y_1": y.numpy()})
    np.testing.assert_allclose(out, (x - y).numpy())


@pytest.mark.parametrize(("opset", "dynamo"), [(9, False), (14, False), (20, False), (20, True)])
def test_a_linear_layer_on_a_non_persistent_buffer_computes_what_pytorch_does(opset, dynamo):
    model, x = LinearOfABuffer().eval(), torch.randn(3)  # Swinv2's relative position bias
    data, _ = export_bytes(model, (x,), input_names=["x"], opset_version=opset, dynamo=dynamo)
    (actual,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(actual, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class _OnAConstant(torch.nn.Module):
    """``fn(constant, x)``: an op whose tensor argument is a constant of the export (a tensor the trace holds as it
    is, not a graph input) while another argument is computed at run time."""

    def __init__(self, fn, constant):
        super().__init__()
        self.fn, self.constant = fn, constant

    def forward(self, x):
        return self.fn(self.constant, x)


def _quantized_sum(constant, x):
    quantize = lambda t: torch.quantize_per_tensor(t, 0.125, 128, torch.quint8)  # noqa: E731
    return torch.ops.quantized.add(quantize(constant), quantize(x), 0.25, 128).dequantize()


_SCATTER_INDEX = torch.tensor([[0, 1, 2], [4, 3, 2]])
_CONSTANT_ARGUMENTS = {  # name: (fn, constant, x, opset); each one failed in its symbolic before
    "linear_of_a_constant_matrix": (lambda c, w: torch.nn.functional.linear(c, w), torch.randn(3, 4),
                                    torch.randn(2, 4), 9),
    "layer_norm_decomposed": (lambda c, w: torch.nn.functional.layer_norm(c, (4,), w), torch.randn(2, 4),
                              torch.randn(4), 9),
    "group_norm": (lambda c, w: torch.nn.functional.group_norm(c, 2, w), torch.randn(2, 4, 3), torch.randn(4), 13),
    "instance_norm": (lambda c, w: torch.nn.functional.instance_norm(c, weight=w), torch.randn(2, 4, 3),
                      torch.randn(4), 13),
    "attention_with_a_boolean_mask": (
        lambda q, k: torch.nn.functional.scaled_dot_product_attention(
            q, k, k, attn_mask=k[..., :1].transpose(-1, -2) < 1), torch.randn(1, 3, 4), torch.randn(1, 5, 4), 14),
    "prelu_slopes": (lambda slopes, x: torch.nn.functional.prelu(x, slopes), torch.tensor([0.1, 0.2, 0.3]),
                     torch.randn(2, 3, 4), 9),
    "integer_power_by_a_tensor": (lambda e, x: x ** e, torch.tensor([0, 1, 2, 3]), torch.randint(-3, 4, (2, 4)), 13),
    "quantized_add": (_quantized_sum, torch.randn(2, 5), torch.randn(2, 5), 13),
    "scatter_of_a_source_tensor": (lambda src, x: x.scatter(1, _SCATTER_INDEX, src), torch.randn(2, 4),
                                   torch.randn(3, 5), 11),
}


@pytest.mark.parametrize("name", list(_CONSTANT_ARGUMENTS))
def test_an_op_on_a_constant_tensor_and_a_run_time_value_computes_what_pytorch_does(name):
    """A symbolic receives a constant of the export as a torch tensor, not a graph value: it asks ``g`` for its type
    and rank (``g.dtype``, ``g.rank``), and a quantized constant reaches it as the QTensor a run-time one is."""
    fn, constant, x, opset = _CONSTANT_ARGUMENTS[name]
    model = _OnAConstant(fn, constant).eval()
    data, _ = export_bytes(model, (x,), input_names=["x"], opset_version=opset)
    (actual,) = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(actual, model(x).numpy(), rtol=1e-5, atol=1e-5)
