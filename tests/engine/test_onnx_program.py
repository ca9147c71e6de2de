"""The program object (``exporter.ONNXProgram``) behaves as ``torch.onnx.ONNXProgram`` for what its callers use, and
torch.onnx's own checkers (``torch.onnx.testing.assert_onnx_program``, ``torch.onnx.verification``) accept it."""

from __future__ import annotations

import os

import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
import torch
import torch.onnx.testing
import torch.onnx.verification

import exporter
import exporter.program as program_module
from exporter.errors import ExportArgumentError


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, x, scale=None):
        y = self.linear(x).relu()
        return (y * scale if scale is not None else y), x.sum(dim=1)


def _program(dynamo=True, **options):
    torch.manual_seed(0)
    return exporter.export_program(_Block().eval(), (torch.randn(3, 32),), dynamo=dynamo, **options)


@pytest.mark.parametrize("dynamo", [True, False])
def test_model_proto_and_model_describe_the_same_model(dynamo):
    program = _program(dynamo)
    proto = program.model_proto
    assert isinstance(proto, onnx.ModelProto) and isinstance(program.model, ir.Model)
    assert [str(v.name) for v in program.model.graph.inputs] == [i.name for i in proto.graph.input] == ["x"]
    assert program.model_proto.SerializeToString() == ir.serde.serialize_model(program.model).SerializeToString()


def test_model_edits_are_the_source_of_truth_once_touched(tmp_path):
    program = _program()
    x = torch.randn(3, 32)
    before = program(x)
    program.model.graph.outputs[1].name = "row_sums"  # as transformers' exporter edits the model
    assert [o.name for o in program.model_proto.graph.output][1] == "row_sums"
    program.release()
    torch.testing.assert_close(program(x), before)
    program.save(tmp_path / "m.onnx")
    assert onnx.load(str(tmp_path / "m.onnx")).graph.output[1].name == "row_sums"


@pytest.mark.parametrize("dynamo", [True, False])
def test_calling_runs_onnx_runtime_and_binds_arguments_as_the_export(dynamo):
    program = _program(dynamo)
    torch.manual_seed(0)
    model = _Block().eval()  # the same weights
    x = torch.randn(3, 32)
    outputs = program(x)
    assert isinstance(outputs, list) and all(isinstance(t, torch.Tensor) for t in outputs)
    torch.testing.assert_close(outputs, list(model(x)))
    torch.testing.assert_close(program.call_reference(x), list(model(x)))
    with pytest.raises(ExportArgumentError, match="takes 1 tensor inputs"):
        program(x, x, x)


def test_keyword_arguments_are_fed_by_forwards_order_not_the_callers():
    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a - b

    a, b = torch.randn(4), torch.randn(4)
    program = exporter.export_program(Two(), (), kwargs={"b": b, "a": a}, dynamo=True)
    torch.testing.assert_close(program(b=b, a=a)[0], a - b)
    torch.testing.assert_close(program(a, b)[0], a - b)


def test_the_session_is_kept_until_release():
    program = _program()
    x = torch.randn(3, 32)
    program(x)
    session = program._session
    program(x)
    assert program._session is session
    program.release()
    assert program._session is None
    program(x)
    assert program._session is not None and program._session is not session


def test_torch_onnx_checkers_accept_the_program():
    program = _program()
    torch.onnx.testing.assert_onnx_program(program)  # checks _capture_strategy, runs exported_program and us
    torch.onnx.testing.assert_onnx_program(program, backend="reference")
    infos = torch.onnx.verification.verify_onnx_program(program)
    assert [info.name for info in infos] == ["output_0", "output_1"]
    assert all(info.max_abs_diff < 1e-5 for info in infos)


def test_capture_strategy_and_exported_program_follow_the_capture():
    assert _program()._capture_strategy == "TorchExportNonStrictStrategy"
    assert isinstance(_program().exported_program, torch.export.ExportedProgram)
    traced = _program(dynamo=False)
    assert traced._capture_strategy is None and traced.exported_program is None
    given = exporter.export_program(torch.export.export(_Block().eval(), (torch.randn(3, 32),)))
    assert given._capture_strategy is None and given.exported_program is not None


def test_exporter_verify_accepts_a_program():
    program = _program(provenance_in_model=False)
    result = exporter.verify(program, (torch.randn(3, 32),))
    assert result.ok, result


@pytest.mark.parametrize(("include", "as_inputs", "initializers", "inputs"), [
    (True, False, 2, ["x"]),
    (True, True, 2, ["x", "linear.bias", "linear.weight"]),
    (False, False, 0, ["x"]),
    (False, True, 0, ["x", "linear.bias", "linear.weight"]),
])
def test_save_treats_initializers_as_torch_onnx_does(tmp_path, include, as_inputs, initializers, inputs):
    program = _program()
    target = tmp_path / "m.onnx"
    program.save(target, include_initializers=include, keep_initializers_as_inputs=as_inputs)
    proto = onnx.load(str(target))
    assert len(proto.graph.initializer) == initializers
    assert sorted(i.name for i in proto.graph.input) == sorted(inputs)
    assert [i.name for i in program.model_proto.graph.input] == ["x"]  # the program itself is unchanged
    assert len(program.model_proto.graph.initializer) == 2


def test_save_with_external_data_and_past_the_threshold(tmp_path, monkeypatch):
    program = _program()
    x = torch.randn(3, 32)
    program.save(tmp_path / "asked.onnx", external_data=True)
    assert (tmp_path / "asked.onnx.data").stat().st_size > 0
    session = ort.InferenceSession(str(tmp_path / "asked.onnx"), providers=["CPUExecutionProvider"])
    torch.testing.assert_close(torch.from_numpy(session.run(None, {"x": x.numpy()})[0]), program(x)[0])
    monkeypatch.setattr(program_module, "LARGE_MODEL_BYTES", 1024)  # the 1.5 GiB rule, scaled down
    program.save(tmp_path / "large.onnx")
    assert (tmp_path / "large.onnx.data").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["asked.onnx", "asked.onnx.data", "large.onnx",
                                                          "large.onnx.data"]  # nothing half-written left


def test_a_failed_save_leaves_the_previous_file(tmp_path, monkeypatch):
    program = _program()
    target = tmp_path / "m.onnx"
    target.write_bytes(b"previous")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(ir, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        program.save(target, external_data=True)
    assert target.read_bytes() == b"previous" and sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_optimize_removes_what_an_edit_left_redundant():
    program = _program()
    x = torch.randn(3, 32)
    expected = program(x)
    graph = program.model.graph
    relu = next(node for node in graph if node.op_type == "Relu")
    producer = relu.inputs[0].producer()
    twin = ir.node(producer.op_type, inputs=list(producer.inputs), attributes=dict(producer.attributes),
                   domain=producer.domain)  # a duplicate: common subexpression elimination merges it
    unused = ir.node("Neg", inputs=[relu.inputs[0]])  # read by nothing: dead code
    graph.insert_after(producer, [twin, unused])
    relu.replace_input_with(0, twin.outputs[0])
    before = len(graph)
    program.optimize()
    assert len(program.model.graph) == before - 2
    torch.testing.assert_close(program(x), expected)


def test_repr_is_a_summary():
    text = repr(_program())
    assert text.startswith("ONNXProgram(opset=20, capture=export, inputs=['x']") and "nodes=" in text


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_8_bit_floats_are_exported_and_handed_back(dtype):
    class ToFloat8(torch.nn.Module):
        def forward(self, x):
            return x.to(dtype)

    x = torch.randn(2, 3)
    program = exporter.export_program(ToFloat8(), (x,), dynamo=True)
    assert program.model.graph.outputs[0].dtype == getattr(ir.DataType, str(dtype).removeprefix("torch.").upper()
                                                           .replace("FLOAT8_", "FLOAT8"))
    for got in (program(x)[0], program.call_reference(x)[0]):
        assert got.dtype == dtype and torch.equal(got.float(), x.to(dtype).float())


def test_inputs_renamed_through_model_are_fed_by_position():
    program = _program()
    x = torch.randn(3, 32)
    expected = program(x)
    program.model.graph.inputs[0].name = "features"
    assert "inputs=['features']" in repr(program)
    program.release()  # the session was made from the model before the edit (as in torch.onnx)
    torch.testing.assert_close(program(x), expected)


@pytest.mark.parametrize("dynamo", [True, False])
def test_a_model_past_2_gib_without_f_is_staged_with_external_data(tmp_path, monkeypatch, dynamo):
    import exporter.destination as destination

    monkeypatch.setattr(destination, "EXTERNAL_DATA_THRESHOLD", 1024)  # the 2 GiB rule, scaled down
    monkeypatch.setattr(program_module, "LARGE_MODEL_BYTES", 1024)
    program = _program(dynamo)
    staged = program._source
    assert isinstance(staged, str) and os.path.exists(staged + ".data")
    x = torch.randn(3, 32)
    torch.manual_seed(0)
    expected = list(_Block().eval()(x))
    torch.testing.assert_close(program(x), expected)
    assert len(program.model_proto.graph.initializer) == 2
    program.save(tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx.data").exists()
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    torch.testing.assert_close(torch.from_numpy(session.run(None, {"x": x.numpy()})[0]), expected[0])
    del program
    import gc

    gc.collect()
    assert not os.path.exists(staged)  # the program's staging folder goes with it


def test_a_session_made_by_the_caller_runs_the_calls():
    """``initialize_inference_session(initializer)``: the caller's function makes the session from the serialized
    model (torch.onnx's InputObserver passes its own)."""
    program = _program()
    made = []

    def make(model):
        made.append(type(model))
        return ort.InferenceSession(model, providers=["CPUExecutionProvider"])

    program.initialize_inference_session(make)
    x = torch.randn(3, 32)
    got = program(x)
    assert made == [bytes]
    torch.manual_seed(0)
    expected = _Block().eval()(x)
    for actual, want in zip(got, expected, strict=True):
        torch.testing.assert_close(actual, want, rtol=1e-5, atol=1e-5)


def test_dynamic_axes_with_a_torch_export_capture_warn_as_torch_onnx_and_keep_the_axis_names():
    batch = "batch_size"
    with pytest.warns(DeprecationWarning, match="from_dynamic_axes_to_dynamic_shapes is deprecated"):
        program = _program(input_names=["x"], dynamic_axes={"x": {0: batch}})
    assert program.model.graph.inputs[0].shape[0].value is batch  # the caller's own string, as torch.onnx's model
