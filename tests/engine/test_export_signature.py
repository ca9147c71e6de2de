"""``exporter.export`` has the signature of our torch's ``torch.onnx.export`` (names, order, kinds, defaults; torch's
enum defaults compared by member name), our own keyword-only parameters after it; ``exporter.export_program`` has
the same parameters. Its return values and warning are torch.onnx's: a program for the torch.export path (None for
``dynamo=False``), the DeprecationWarning exactly where torch.onnx warns."""

from __future__ import annotations

import enum
import inspect
import io
import warnings

import pytest
import torch

import exporter
from exporter.contract import LEGACY_WARNING

OURS_ONLY = ["provenance_in_model", "captured", "runtime_workarounds", "check_dynamic_axes"]


def _comparable(default):
    """A default as comparable across the two: an enum member by its name (torch's are pybind enums)."""
    name = getattr(default, "name", None)
    if isinstance(default, enum.Enum) or (name is not None and type(default).__module__ == "torch._C._onnx"):
        return ("enum member", name)
    return default


def _parameters(function):
    return [(p.name, p.kind, _comparable(p.default)) for p in inspect.signature(function).parameters.values()]


def test_export_takes_torch_onnx_exports_parameters_then_ours():
    theirs = _parameters(torch.onnx.export)
    ours = _parameters(exporter.export)
    assert ours[:len(theirs)] == theirs
    assert [name for name, _, _ in ours[len(theirs):]] == OURS_ONLY
    assert all(kind == inspect.Parameter.KEYWORD_ONLY for _, kind, _ in ours[len(theirs):])


def test_export_program_takes_the_same_parameters():
    assert [name for name, _, _ in _parameters(exporter.export_program)] == \
        [name for name, _, _ in _parameters(exporter.export)]
    assert [kind for _, kind, _ in _parameters(exporter.export_program)] == \
        [kind for _, kind, _ in _parameters(exporter.export)]


class _Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_the_default_is_torch_export_and_a_program_is_returned_without_f():
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        program = exporter.export(_Double(), (x,))
    assert isinstance(program, exporter.ONNXProgram) and program.capture.capture == "export"
    torch.testing.assert_close(program(x)[0], x * 2)


def test_dynamo_false_returns_none_with_torch_onnxs_deprecation_warning(tmp_path):
    target = tmp_path / "m.onnx"
    with pytest.warns(DeprecationWarning) as caught:
        assert exporter.export(_Double(), (torch.randn(2, 3),), str(target), dynamo=False) is None
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [LEGACY_WARNING]
    assert target.exists() and not (tmp_path / "m.onnx.data").exists()


def test_an_exported_program_takes_the_torch_export_path_even_with_dynamo_false():
    x = torch.randn(2, 3)
    given = torch.export.export(_Double(), (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        program = exporter.export(given, dynamo=False)
    assert isinstance(program, exporter.ONNXProgram)


def test_export_program_returns_the_program_for_the_torchscript_capture_too():
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # export_program is ours: no torch.onnx deprecation
        program = exporter.export_program(_Double(), (x,), dynamo=False)
    assert program.capture.capture == "trace" and program.exported_program is None
    assert program._capture_strategy is None
    torch.testing.assert_close(program(x)[0], x * 2)


def test_parameters_after_f_are_keyword_only():
    with pytest.raises(TypeError):
        exporter.export(_Double(), (torch.randn(2),), io.BytesIO(), True)  # export_params positionally, as once


def test_f_none_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exporter.export(_Double(), (torch.randn(2),))
    exporter.export_program(_Double(), (torch.randn(2),), dynamo=False)
    assert list(tmp_path.iterdir()) == []


def test_with_dynamo_f_is_saved_as_torch_onnx_saves_it(tmp_path):
    model = torch.nn.Linear(64, 64)
    target = tmp_path / "m.onnx"
    exporter.export(model, (torch.randn(2, 64),), str(target))
    assert (tmp_path / "m.onnx.data").exists()  # external_data=True, torch.onnx's default
    inline = tmp_path / "inline.onnx"
    exporter.export(model, (torch.randn(2, 64),), str(inline), external_data=False, export_params=False)
    import onnx

    proto = onnx.load(str(inline))
    assert not proto.graph.initializer and [i.name for i in proto.graph.input] == ["input"]  # torch.onnx's save


def test_the_debugging_options_leave_a_report_a_profile_and_the_program(tmp_path):
    x = torch.randn(2, 3)
    program = exporter.export(_Double(), (x,), report=True, profile=True, verify=True, dump_exported_program=True,
                              artifacts_dir=str(tmp_path / "artifacts"), verbose=False)
    files = sorted(p.name for p in (tmp_path / "artifacts").iterdir())
    assert len(files) == 2 and files[0].endswith(".pt2") and files[1].endswith("_success.md")
    report = (tmp_path / "artifacts" / files[1]).read_text()
    assert "| Mul | 1 |" in report and "## Verification" in report and "cumulative" in report
    assert [check.ok for check in program.verification] == [True]
    assert torch.export.load(tmp_path / "artifacts" / files[0]).module()(x).equal(x * 2)


def test_a_failed_export_still_writes_its_report(tmp_path):
    class Untraceable(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    with pytest.raises(exporter.errors.CaptureError):
        exporter.export(Untraceable(), (torch.randn(2),), report=True, artifacts_dir=str(tmp_path), verbose=False)
    (report,) = tmp_path.iterdir()
    assert report.name.endswith("_CaptureError.md") and "boom" in report.read_text()


def test_verify_warns_of_a_mismatch():
    class Random(torch.nn.Module):
        def forward(self, x):
            return x + torch.rand_like(x)

    with pytest.warns(UserWarning, match="verify: output 'output' differs"):
        program = exporter.export(Random(), (torch.randn(50),), verify=True)
    assert [check.ok for check in program.verification] == [False]


def test_an_option_we_cannot_honour_is_refused_not_ignored():
    with pytest.raises(exporter.errors.ExportArgumentError, match="autograd_inlining"):
        exporter.export(_Double(), (torch.randn(2),), autograd_inlining=False)


def test_a_scripted_model_with_dynamo_true_is_refused_as_torch_onnx_refuses_it():
    scripted = torch.jit.script(_Double())
    with pytest.raises(exporter.errors.ExportArgumentError, match="dynamo=False"):
        exporter.export(scripted, (torch.randn(2),), dynamo=True)
    assert exporter.export_program(scripted, (torch.randn(2),), dynamo=False).capture.capture == "script"


def test_a_scripted_model_with_dynamo_left_to_its_default_falls_back_to_its_graph_with_a_warning():
    scripted = torch.jit.script(_Double())
    with pytest.warns(UserWarning, match="torch.export cannot capture a RecursiveScriptModule"):
        program = exporter.export(scripted, (torch.randn(2),))
    assert program.capture.capture == "script"
    (y,) = program(torch.tensor([1.0, 2.0]))
    assert y.tolist() == [2.0, 4.0]


def test_dynamo_exports_in_eval_mode_by_default_unlike_torch_onnx():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).train()
    program = exporter.export(model, (torch.randn(3, 4),))
    assert "Dropout" not in {node.op_type for node in program.model_proto.graph.node}
    assert model.training  # the model is left in its mode
    kept = exporter.export(model, (torch.randn(3, 4),), training=exporter.TrainingMode.PRESERVE)
    assert "Dropout" in {node.op_type for node in kept.model_proto.graph.node}


def test_dynamo_writes_a_file_object_without_a_warning():
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        program = exporter.export(_Double(), (torch.randn(2),), buffer)
    assert buffer.getvalue() == program.model_proto.SerializeToString()


def test_dynamic_shapes_given_with_an_exported_program_are_ignored_with_a_warning():
    given = torch.export.export(_Double(), (torch.randn(2, 3),))
    with pytest.warns(UserWarning, match="dynamic_shapes is ignored for an ExportedProgram"):
        program = exporter.export(given, dynamic_shapes={"x": {0: torch.export.Dim("n")}})
    assert [d.dim_value for d in program.model_proto.graph.input[0].type.tensor_type.shape.dim] == [2, 3]


def test_an_exportable_module_fills_in_what_the_call_leaves_out():
    class Doubler(torch.onnx.ExportableModule):
        def forward(self, x):
            return x * 2

        def example_arguments(self):
            return (torch.randn(2, 3),), None

        def input_names(self):
            return ["features"]

        def output_names(self):
            return ["doubled"]

        def dynamic_shapes(self):
            return ({0: torch.export.Dim.DYNAMIC},)

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        program = exporter.export(Doubler(), dynamo=False)  # the torch.export path whatever dynamo says, as torch.onnx
    proto = program.model_proto
    assert [i.name for i in proto.graph.input] == ["features"] and [o.name for o in proto.graph.output] == ["doubled"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    torch.testing.assert_close(program(torch.ones(5, 3))[0], torch.full((5, 3), 2.0))
