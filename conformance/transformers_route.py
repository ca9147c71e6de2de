"""The transformers route (``--exporter transformers``): transformers' own ONNX exporter
(``transformers.exporters.OnnxExporter``), which captures the model with torch.export and calls
``torch.onnx.export(exported_program, custom_translation_table=..., ...)`` itself, run with this engine in
``torch.onnx.export``'s place (``exporter.in_place_of_torch_onnx``). Its cases are the zoo's transformers
architectures, exported dynamic as that exporter exports them (``OnnxConfig(dynamic=True)``); each file is then run
and compared with PyTorch as any other case. This is how a library that exports for its users reaches us.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TRANSFORMERS = "transformers"
# The check input the export is traced on: the zoo's larger example. transformers' dynamic=True marks every axis
# Dim.AUTO, and torch.export specializes an axis whose example size is 1 (the image and audio entries' first example
# has batch 1), so exporting on it would fix the batch for the exporter under test and for torch.onnx alike.
EXPORT_EXAMPLE = "dynamic input 1"


def architecture_names() -> frozenset[str]:
    """The zoo entries built from a transformers architecture (a model class and its config): what the route takes."""
    from model_zoo.transformers_models import architectures

    return frozenset(architecture.name for architecture in architectures())


@dataclass
class TransformersExport:
    """What the worker needs of the export: the file's graph (weights left in the data file), and no capture of ours
    to report (transformers made the program)."""

    model_proto: Any
    capture: Any = None


def export_through_transformers(prepared: Any, path: str, opset: int) -> TransformersExport:
    """Export ``prepared``'s transformers model with transformers' exporter, this engine in torch.onnx's place, and
    save the program to ``path`` (weights in ``<path>.data``, as that exporter saves them)."""
    import onnx
    from transformers.exporters import OnnxConfig, OnnxExporter

    import exporter
    from conformance.prepared import clone_inputs

    wrapper = prepared.model  # model_zoo's Plain: the transformers model called with keyword inputs
    inputs = dict(zip(wrapper.input_keys, clone_inputs(prepared.checks[EXPORT_EXAMPLE]), strict=True))
    with exporter.in_place_of_torch_onnx():
        exported = OnnxExporter().export(wrapper.model, inputs, config=OnnxConfig(opset_version=opset, dynamic=True))
    OnnxExporter.save_program(exported.program, path)
    return TransformersExport(onnx.load(path, load_external_data=False))
