"""``python -m exporter``: export a model named module:callable, list unconvertible ops; ``exporter.__version__``."""

from __future__ import annotations

import io
import pathlib
import shlex
import subprocess
import sys
import tomllib

import numpy as np
import onnx
import pytest
import torch

import exporter
from exporter.__main__ import EXAMPLE, build_parser, main
from exporter.registry import REGISTRY
from tests.conftest import run_onnx

PROJECT = pathlib.Path(__file__).resolve().parents[2]


class TwoInputNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        return self.fc(x) + y.sum()


def build_two_input_net():
    torch.manual_seed(0)
    return TwoInputNet()


SHARED_INSTANCE = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())


def test_help_runs_as_a_module():
    completed = subprocess.run([sys.executable, "-m", "exporter", "--help"], capture_output=True, text=True,
                               cwd=PROJECT, timeout=120, check=True)
    for option in ("--input-shape", "--opset", "--dynamic-axis", "--list-unconvertible", "module:callable"):
        assert option in completed.stdout
    help_text = " ".join(completed.stdout.split())
    assert f"{exporter.MIN_OPSET}-{exporter.MAX_OPSET} (default {exporter.DEFAULT_OPSET})" in help_text


def test_exports_a_model_built_by_a_function_with_names_and_dynamic_axes(tmp_path, capsys):
    target = tmp_path / "net.onnx"
    status = main(["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--input-shape", "3",
                   "-o", str(target), "--opset", "11", "--input-names", "x", "y", "--output-names", "z",
                   "--dynamic-axis", "x:0:batch", "--dynamic-axis", "z:0"])
    assert status == 0 and "wrote" in capsys.readouterr().out
    model = onnx.load(str(target))
    assert model.opset_import[0].version == 11
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim][0] == "batch"
    assert model.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "z_dynamic_axes_1"
    x, y = torch.randn(5, 4), torch.randn(3)
    expected = build_two_input_net()(x, y).detach().numpy()
    np.testing.assert_allclose(run_onnx(target.read_bytes(), {"x": x.numpy(), "y": y.numpy()})[0], expected,
                               rtol=1e-5, atol=1e-6)


def test_exports_a_model_instance(tmp_path):
    assert main(["tests.engine.test_cli:SHARED_INSTANCE", "--input-shape", "1,3", "-o", str(tmp_path / "m.onnx")]) == 0
    assert (tmp_path / "m.onnx").exists()


def test_list_unconvertible_prints_every_missing_op_and_fails(monkeypatch, capsys):
    builtin = {k: v for k, v in REGISTRY._builtin.items() if k not in ("aten::linear", "aten::add")}
    monkeypatch.setattr(REGISTRY, "_builtin", builtin)
    status = main(["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--input-shape", "3",
                   "--list-unconvertible"])
    assert status == 1
    assert set(capsys.readouterr().out.split()) == {"aten::linear", "aten::add"}


def test_list_unconvertible_succeeds_when_everything_converts(capsys):
    status = main(["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--input-shape", "3",
                   "--list-unconvertible", "--opset", "9"])
    assert status == 0 and "every op converts at opset 9" in capsys.readouterr().err


def test_a_failed_export_exits_1_with_the_error_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(REGISTRY, "_builtin", {k: v for k, v in REGISTRY._builtin.items() if k != "aten::linear"})
    target = tmp_path / "net.onnx"
    status = main(["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--input-shape", "3",
                   "-o", str(target)])
    assert status == 1 and "UnsupportedOperatorError" in capsys.readouterr().err
    assert not target.exists()


@pytest.mark.parametrize("argv", [
    ["tests.engine.test_cli:nothing_here", "--input-shape", "2", "-o", "x.onnx"],
    ["no_colon", "--input-shape", "2", "-o", "x.onnx"],
    ["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,x", "-o", "x.onnx"],
    ["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--dynamic-axis", "x:first", "-o", "x.onnx"],
    ["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4"],
    ["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "-o", "x.onnx", "--opset", "21"],
])
def test_bad_command_lines_are_usage_errors(argv):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2


def test_an_option_the_export_refuses_is_a_usage_error_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "net.onnx"
    with pytest.raises(SystemExit) as stopped:
        main(["tests.engine.test_cli:build_two_input_net", "--input-shape", "2,4", "--input-shape", "3", "-o", str(target),
              "--dynamic-axis", "input:0:batch"])
    assert stopped.value.code == 2 and "key input for dynamic axes is not a valid input/output name" in capsys.readouterr().err
    assert not target.exists()


def test_the_help_example_runs_as_written_and_makes_the_batch_dynamic(tmp_path, monkeypatch, capsys):
    argv = shlex.split(EXAMPLE)
    assert argv[:3] == ["python", "-m", "exporter"]
    monkeypatch.chdir(tmp_path)
    assert main(argv[3:]) == 0
    model = onnx.load(str(tmp_path / argv[argv.index("-o") + 1]))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert EXAMPLE in " ".join(build_parser().format_help().split())


def test_version_is_the_package_version_and_the_producer_version():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert exporter.__version__ == pyproject["project"]["version"]
    result = exporter.export_program(torch.nn.Linear(2, 2), (torch.randn(1, 2),), io.BytesIO(), dynamo=False)
    assert result.model_proto.producer_version == exporter.__version__
