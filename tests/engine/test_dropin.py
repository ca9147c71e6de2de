"""Drop-in for torch.onnx callers (issue 19): their calls, enums, inputs, outputs, warnings and files behave as with
torch.onnx.export(dynamo=False). Each test names the caller's habit it covers; tests/engine/test_differential_torch_onnx.py
runs the same calls through both exporters side by side.
"""

from __future__ import annotations

import os
import pathlib
import stat
import warnings

import numpy as np
import onnx
import pytest
import torch
import torch.onnx  # the caller's module: its enums and is_in_onnx_export() (tests may use torch.onnx; the engine not)

import exporter
from exporter.errors import ExportArgumentError
from tests.conftest import export_bytes, run_onnx


def _graph_input_names(data: bytes) -> list[str]:
    model = onnx.load_from_string(data)
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n


class IgnoresSecond(torch.nn.Module):
    def forward(self, x, unused):
        return x + 1


# -- the call ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(torch.onnx.TrainingMode.__members__.values()), ids=str)
def test_torch_training_mode_is_accepted_by_member_name(mode):
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout()).train()
    _, result = export_bytes(model, (torch.randn(4, 3),), training=mode)
    ops = {n.op_type for n in result.model_proto.graph.node}
    assert ("Dropout" in ops) == (mode.name != "EVAL")  # PRESERVE keeps the model's own (training) mode


@pytest.mark.parametrize("export_type", list(torch.onnx.OperatorExportTypes.__members__.values()), ids=str)
def test_torch_operator_export_type_is_accepted_by_member_name(export_type):
    _, result = export_bytes(torch.nn.Linear(3, 3), (torch.randn(2, 3),), operator_export_type=export_type)
    aten = [n for n in result.model_proto.graph.node if n.domain == "org.pytorch.aten"]
    assert bool(aten) == (export_type.name == "ONNX_ATEN")


def test_torch_training_mode_works_with_select_model_mode_for_export():
    model = torch.nn.Dropout()
    with exporter.select_model_mode_for_export(model, torch.onnx.TrainingMode.TRAINING):
        assert model.training
    assert model.training  # restored (a new module starts in training mode)


@pytest.mark.parametrize("bad", [True, "EVAL", 7])
def test_a_value_that_is_no_training_mode_is_an_argument_error(bad):
    with pytest.raises(ExportArgumentError, match="training must be a TrainingMode"):
        export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), training=bad)


def test_dynamo_false_traces_and_dynamo_true_captures_with_torch_export():
    data, result = export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), dynamo=False)
    assert data and result.capture.capture == "trace"
    data, result = export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), dynamo=True)
    assert data and result.capture.capture == "export"
    with pytest.raises(ExportArgumentError, match="dynamo must be"):
        export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), dynamo=1)


def test_kwargs_argument_is_the_models_keyword_arguments():
    class Offset(torch.nn.Module):
        def forward(self, x, offset=None):
            return x + offset

    x, offset = torch.randn(2), torch.randn(2)
    data, result = export_bytes(Offset(), (x,), kwargs={"offset": offset})
    assert result.input_names == ["x", "offset"]
    np.testing.assert_allclose(run_onnx(data, {"x": x.numpy(), "offset": offset.numpy()})[0], (x + offset).numpy())


# -- names and dynamic axes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["input_names", "output_names"])
def test_more_names_than_values_is_an_argument_error(kind):
    names = {"input_names": ["x", "w", "b", "extra"], "output_names": ["y", "extra"]}[kind]
    with pytest.raises(ExportArgumentError, match="'extra'.*name nothing|name nothing.*'extra'"):
        export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),), **{kind: names})


# -- graph inputs ----------------------------------------------------------------------------------------------------
def test_traced_python_number_arguments_become_0d_inputs_as_in_torch_onnx():
    x = torch.randn(3)
    data, result = export_bytes(Scale(), (x, 3))
    model = onnx.load_from_string(data)
    assert result.input_names == ["x", "n"]
    assert model.graph.input[1].type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert run_onnx(data, {"x": x.numpy(), "n": np.array(5)})[0].tolist() == pytest.approx((x * 5).tolist())


def test_scripted_int_argument_stays_an_int64_input_with_its_name():
    x = torch.randn(3)
    data, _ = export_bytes(torch.jit.script(Scale()), (x, 3), input_names=["x", "n"])
    assert _graph_input_names(data) == ["x", "n"]
    assert run_onnx(data, {"x": x.numpy(), "n": np.array(4)})[0].tolist() == pytest.approx((x * 4).tolist())


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_an_unused_argument_is_no_graph_input(script):
    model = torch.jit.script(IgnoresSecond()) if script else IgnoresSecond()
    data, result = export_bytes(model, (torch.randn(2), torch.randn(3)), input_names=["a", "b"])
    assert _graph_input_names(data) == ["a"] and result.input_names == ["a"]


def test_an_argument_used_only_for_its_static_shape_is_dropped_but_kept_when_that_axis_is_dynamic():
    class AddsLength(torch.nn.Module):
        def forward(self, x, y):
            return x + y.shape[0]

    args = (torch.randn(2), torch.randn(3))
    static, _ = export_bytes(AddsLength(), args, input_names=["x", "y"])
    dynamic, _ = export_bytes(AddsLength(), args, input_names=["x", "y"], dynamic_axes={"y": [0]})
    assert _graph_input_names(static) == ["x"]
    assert _graph_input_names(dynamic) == ["x", "y"]
    out = run_onnx(dynamic, {"x": np.zeros(2, np.float32), "y": np.zeros(7, np.float32)})[0]
    assert out.tolist() == [7.0, 7.0]


class AddsItsKey(torch.nn.Module):
    def forward(self, table):
        key = next(iter(table))
        return table[key] + key


def test_a_dicts_tensor_key_is_an_input_before_its_value():
    key, value = torch.tensor(1.0), torch.randn(2, 3)
    data, result = export_bytes(AddsItsKey(), ({key: value}, {}), input_names=["key", "value"])
    assert _graph_input_names(data) == ["key", "value"]
    out = run_onnx(data, {"key": np.array(3.0, np.float32), "value": value.numpy()})[0]
    assert np.allclose(out, (value + 3).numpy())


class SplitsBySizes(torch.nn.Module):
    def forward(self, x, sizes: list[int]):
        return torch.cat(x.split(sizes), dim=0)


@pytest.mark.parametrize("provenance", [True, False], ids=["provenance", "no_provenance"])
def test_tensor_sizes_converted_by_int_stay_inputs_whatever_provenance_records(provenance):
    """PyTorch's exporter reads int(tensor) at run time, so both sizes stay inputs, even the one no node needs."""
    with exporter.provenance.recording(provenance):
        data, _ = export_bytes(SplitsBySizes(), (torch.randn(6, 2), [torch.tensor(2), torch.tensor(4)]),
                               opset_version=14)
    assert _graph_input_names(data) == ["x", "sizes_0", "sizes_1"]


class DimArange(torch.nn.Module):
    def forward(self, x):
        return torch._dim_arange(x, 1)


@pytest.mark.parametrize("opset, kept", [(9, ["x"]), (11, [])])
def test_dim_arange_keeps_its_input_where_pytorch_reads_its_shape_at_run_time(opset, kept):
    data, _ = export_bytes(DimArange(), (torch.ones(5, 6),), opset_version=opset)
    assert _graph_input_names(data) == kept
    feeds = {"x": np.ones((5, 6), np.float32)} if kept else {}
    assert run_onnx(data, feeds)[0].tolist() == list(range(6))


# -- graph outputs ---------------------------------------------------------------------------------------------------
class InputTwice(torch.nn.Module):
    def forward(self, x):
        return x, x


class ListAndNumbers(torch.nn.Module):
    def forward(self, x):
        return [x + 1, x * 2], x.size(0), x.dim() > 1


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_an_input_returned_twice_gives_two_outputs_that_load_in_onnx_runtime(script):
    model = torch.jit.script(InputTwice()) if script else InputTwice()
    x = torch.randn(3)
    data, _ = export_bytes(model, (x,))
    first, second = run_onnx(data, {"x": x.numpy()})
    assert first.tolist() == second.tolist() == pytest.approx(x.tolist())


def test_scripted_list_and_number_outputs_are_a_sequence_and_0d_tensors():
    x = torch.randn(2, 3)
    data, result = export_bytes(torch.jit.script(ListAndNumbers()), (x,))
    kinds = [o.type.WhichOneof("value") for o in result.model_proto.graph.output]
    assert kinds == ["sequence_type", "tensor_type", "tensor_type"]
    items, size, is_matrix = run_onnx(data, {"x": x.numpy()})
    np.testing.assert_allclose(items[1], (x * 2).numpy())
    assert (size.shape, int(size), is_matrix.dtype, bool(is_matrix)) == ((), 2, np.bool_, True)


def test_a_list_output_below_opset_11_names_the_opset_it_needs():
    with pytest.raises(exporter.UnsupportedOperatorError, match="list of tensors as a graph output.*opset >= 11"):
        export_bytes(torch.jit.script(ListAndNumbers()), (torch.randn(2, 3),), opset_version=9)


# -- dtypes -------------------------------------------------------------------------------------------------------
def test_bfloat16_parameters_are_written_as_bfloat16():
    model = torch.nn.Linear(4, 3).to(torch.bfloat16)
    _, result = export_bytes(model, (torch.randn(2, 4).bfloat16(),))
    weight = next(t for t in result.model_proto.graph.initializer if t.name == "weight")
    assert weight.data_type == onnx.TensorProto.BFLOAT16
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weight).astype(np.float32), model.weight.detach().float().numpy())


# -- files --------------------------------------------------------------------------------------------------------
@pytest.fixture()
def umask_027():
    previous = os.umask(0o027)
    yield
    os.umask(previous)


def test_a_new_file_gets_its_permissions_from_the_umask(tmp_path, umask_027):
    target = tmp_path / "m.onnx"
    exporter.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),), str(target), dynamo=False)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_an_existing_file_keeps_its_permissions(tmp_path, umask_027):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    target.chmod(0o604)
    exporter.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),), str(target), dynamo=False)
    assert stat.S_IMODE(target.stat().st_mode) == 0o604 and target.read_bytes() != b"old"


def _no_capture(*args, **kwargs):
    raise AssertionError("the export started although its destination was unusable")


def test_a_read_only_target_file_is_refused_before_any_work(tmp_path, monkeypatch):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"keep me")
    target.chmod(0o444)
    monkeypatch.setattr(exporter.api, "capture", _no_capture)
    with pytest.raises(ExportArgumentError, match="read-only"):
        exporter.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),), str(target), dynamo=False)
    assert target.read_bytes() == b"keep me"


@pytest.fixture()
def unwritable_dir(tmp_path):
    """A directory in which no file can be created: read-only for a regular user; for root (whom permissions do
    not stop) sysfs, which refuses new files to everyone."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        yield locked
        locked.chmod(0o755)
    elif os.path.isdir("/sys/kernel"):
        yield pathlib.Path("/sys/kernel")
    else:
        pytest.skip("running as root without sysfs: no directory refuses new files")


@pytest.mark.parametrize("where", ["unwritable_dir", "directory_as_f"])
def test_an_unusable_destination_is_a_typed_error_before_any_work(where, unwritable_dir, tmp_path, monkeypatch):
    target = unwritable_dir / "m.onnx" if where == "unwritable_dir" else tmp_path
    monkeypatch.setattr(exporter.api, "capture", _no_capture)
    with pytest.raises(ExportArgumentError, match="not writable|is a directory"):
        exporter.export(torch.nn.Linear(2, 2), (torch.randn(1, 2),), str(target), dynamo=False)
    assert not list(tmp_path.glob(".*tmp"))


def test_a_meta_device_model_is_a_typed_error_before_any_work(monkeypatch):
    monkeypatch.setattr(exporter.api, "capture", _no_capture)
    with pytest.raises(ExportArgumentError, match="'meta' device"):
        export_bytes(torch.nn.Linear(2, 2).to("meta"), (torch.randn(1, 2),))


def test_a_lazy_module_before_its_first_call_is_a_typed_error_and_exports_after_it():
    model, x = torch.nn.Sequential(torch.nn.LazyLinear(3), torch.nn.LazyBatchNorm1d()).eval(), torch.randn(2, 5)
    with pytest.raises(ExportArgumentError, match="call the model once"):
        export_bytes(model, (x,))
    model(x)
    data, result = export_bytes(model, (x,))
    np.testing.assert_allclose(run_onnx(data, {result.input_names[0]: x.numpy()})[0], model(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


# -- warnings, repr -------------------------------------------------------------------------------------------------
class Warns(torch.nn.Module):
    def forward(self, x):
        warnings.warn("the model's own warning", stacklevel=1)
        for _ in range(3):
            warnings.warn("warned in a loop", stacklevel=1)
        if x.sum() > 0:  # a data-dependent branch: the trace freezes it
            return x * 2
        return x


def test_tracer_and_model_warnings_are_shown_once_each_with_their_source_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_bytes(Warns(), (torch.randn(3),))
    shown = [(w.category.__name__, str(w.message)[:24], pathlib.Path(w.filename).name) for w in caught]
    assert sorted(shown) == sorted([
        ("UserWarning", "the model's own warning", "test_dropin.py"),
        ("UserWarning", "warned in a loop", "test_dropin.py"),
        ("TracerWarning", "Converting a tensor to a", "test_dropin.py"),
    ])
    tracer = next(w for w in caught if w.category is torch.jit.TracerWarning)
    source = pathlib.Path(__file__).read_text().splitlines()[tracer.lineno - 1]
    assert "if x.sum() > 0" in source


class WarnsOnce(torch.nn.Module):
    def forward(self, x):
        warnings.warn("warned by every call of this model", stacklevel=1)
        return x + 1


def test_a_warning_an_earlier_export_showed_is_shown_again_only_where_the_filters_say_always():
    for action, expected_count in (("default", 1), ("always", 2)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            for _ in range(2):
                export_bytes(WarnsOnce(), (torch.randn(3),))
        assert [str(w.message) for w in caught] == ["warned by every call of this model"] * expected_count, action


def test_the_tracer_warnings_of_torchs_own_shape_checks_stay_hidden_as_pytorch_hides_them():
    # nn.LSTM checks its input's size in Python: a TracerWarning from torch's code, which PyTorch's own filter ignores.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_bytes(torch.nn.LSTM(4, 3), (torch.randn(2, 1, 4),))
    assert [str(w.message) for w in caught] == []


def test_torchscripts_own_deprecation_noise_stays_hidden():
    scripted = torch.jit.script(torch.nn.Linear(2, 2))  # the caller's own call: torch warns them about it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_bytes(scripted, (torch.randn(1, 2),))
        export_bytes(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    assert [str(w.message) for w in caught] == []


def test_the_programs_repr_is_a_short_summary():
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    _, result = export_bytes(model, (torch.randn(1, 256),), input_names=["features"])
    text = repr(result)
    assert len(text) < 200
    assert text.startswith("ONNXProgram(opset=20, capture=trace, inputs=['features'], outputs=['output'], nodes=")
    assert callable(result._source)  # the summary came from the skeleton: the full model is not built
    assert text.endswith(f"nodes={len(result.model_proto.graph.node)}, "
                         f"initializers={len(result.model_proto.graph.initializer)}, exported_program=None)")
    assert repr(result) == text  # and the built model says the same


# -- numbers that were wrong ---------------------------------------------------------------------------------------
class ArangeToFloatEnd(torch.nn.Module):
    def forward(self, end):
        return torch.arange(end), torch.arange(0, end), torch.arange(end, out=torch.empty(0))


class ScalarTensors(torch.nn.Module):
    def forward(self, x):
        return torch.scalar_tensor(x.size(0)), torch.scalar_tensor(x.size(1), dtype=torch.int64)


class IntDivision(torch.nn.Module):
    def forward(self, x, y):
        return x / y, torch.true_divide(x, y)


def _assert_like_pytorch(model, args, data, names):
    with torch.no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = run_onnx(data, {n: a.numpy() for n, a in zip(names, args, strict=True)})
    for a, e in zip(actual, expected, strict=True):
        assert (a.shape, a.dtype) == (tuple(e.shape), e.numpy().dtype)
        np.testing.assert_allclose(a, e.numpy(), rtol=1e-6)


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_arange_to_a_float_tensor_counts_like_pytorch(script):
    model = torch.jit.script(ArangeToFloatEnd()) if script else ArangeToFloatEnd()
    data, _ = export_bytes(model, (torch.tensor(6.2),), input_names=["end"])
    _assert_like_pytorch(model, (torch.tensor(6.2),), data, ["end"])
    _assert_like_pytorch(model, (torch.tensor(3.5),), data, ["end"])


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_scalar_tensor_of_a_size_is_the_default_float_type(script):
    model = torch.jit.script(ScalarTensors()) if script else ScalarTensors()
    data, _ = export_bytes(model, (torch.randn(2, 3),), input_names=["x"], dynamic_axes={"x": [0, 1]})
    _assert_like_pytorch(model, (torch.randn(5, 7),), data, ["x"])


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_integer_true_division_follows_the_default_dtype(script):
    model = torch.jit.script(IntDivision()) if script else IntDivision()
    args = (torch.tensor([7, 8, 9], dtype=torch.int32), torch.tensor([2, 3, 4], dtype=torch.int32))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        data, _ = export_bytes(model, args, input_names=["x", "y"])
        _assert_like_pytorch(model, args, data, ["x", "y"])
    finally:
        torch.set_default_dtype(previous)


@pytest.mark.parametrize("script", [False, True], ids=["traced", "scripted"])
def test_prelu_on_a_0d_input_is_0d(script):
    model = torch.nn.PReLU()
    model = torch.jit.script(model) if script else model
    data, _ = export_bytes(model, (torch.tensor(-2.0),), input_names=["x"])
    _assert_like_pytorch(model, (torch.tensor(-3.0),), data, ["x"])
