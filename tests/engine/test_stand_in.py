"""exporter.in_place_of_torch_onnx: a library that calls torch.onnx.export, by attribute or through a name it bound at
import, reaches this engine inside the block and torch's exporter after it."""

from __future__ import annotations

import importlib
import io
import sys

import onnx
import pytest
import torch

import exporter
from exporter.serialize import PRODUCER_NAME

TORCH_EXPORT = torch.onnx.export
ENGINE_EXPORT = exporter.export


@pytest.fixture
def library_module(tmp_path, monkeypatch):
    """A real module that binds torch.onnx.export at import, as `from torch.onnx import export` does."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def make(name: str):
        (tmp_path / f"{name}.py").write_text(
            "from torch.onnx import export\n\ndef export_by_name(*args, **kwargs):\n    return export(*args, **kwargs)\n"
        )
        made.append(name)
        return importlib.import_module(name)

    yield make
    for name in made:
        sys.modules.pop(name, None)


def _producer(buffer: io.BytesIO) -> str:
    return onnx.load_from_string(buffer.getvalue()).producer_name


def test_a_call_by_attribute_and_a_name_bound_at_import_reach_the_engine_then_torch_again(library_module):
    bound_before = library_module("bound_before")
    x = torch.randn(2, 3)
    with exporter.in_place_of_torch_onnx() as swapped:
        assert swapped is exporter.export
        assert torch.onnx.export is exporter.export and bound_before.export is exporter.export
        by_attribute, by_name = io.BytesIO(), io.BytesIO()
        torch.onnx.export(torch.nn.ReLU(), (x,), by_attribute, dynamo=False)
        bound_before.export_by_name(torch.nn.ReLU(), (x,), by_name, dynamo=False)
    assert _producer(by_attribute) == _producer(by_name) == PRODUCER_NAME
    assert torch.onnx.export is TORCH_EXPORT and bound_before.export is TORCH_EXPORT
    assert exporter.export is ENGINE_EXPORT  # the engine's own names kept it: a second block swaps the engine in again
    with exporter.in_place_of_torch_onnx():
        assert torch.onnx.export is ENGINE_EXPORT


def test_a_module_imported_inside_the_block_gets_torchs_function_back(library_module):
    with exporter.in_place_of_torch_onnx():
        bound_inside = library_module("bound_inside")
        assert bound_inside.export is exporter.export
    assert bound_inside.export is TORCH_EXPORT


def test_torchs_function_is_back_after_the_block_raises(library_module):
    bound_before = library_module("bound_before_raise")
    with pytest.raises(RuntimeError, match="inside"), exporter.in_place_of_torch_onnx():
        raise RuntimeError("inside")
    assert torch.onnx.export is TORCH_EXPORT and bound_before.export is TORCH_EXPORT


def test_blocks_nest_and_an_inner_function_is_replaced_by_the_outer_one_on_the_way_out():
    engine = exporter.export  # a local: a module-level name holding the engine's export is swapped by a nested block

    def inner_export(*args, **kwargs):
        return engine(*args, **kwargs)

    with exporter.in_place_of_torch_onnx():
        with exporter.in_place_of_torch_onnx():  # already in place: a no-op
            assert torch.onnx.export is exporter.export
        assert torch.onnx.export is exporter.export
        with exporter.in_place_of_torch_onnx(inner_export):
            assert torch.onnx.export is inner_export and exporter.export is engine
        assert torch.onnx.export is exporter.export
    assert torch.onnx.export is TORCH_EXPORT and exporter.export is engine
