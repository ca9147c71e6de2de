"""The benchmark's models: builders returning (model, example args, export kwargs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torchvision

BenchModel = tuple[torch.nn.Module, tuple, dict[str, Any]]


def _vision(name: str, size: int = 224, **kwargs) -> Callable[[], BenchModel]:
    def build() -> BenchModel:
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, weights=None, **kwargs).eval()
        return model, (torch.rand(1, 3, size, size),), {}

    return build


def _dynamic_resnet50() -> BenchModel:
    """resnet50 with dynamic batch, height and width: shapes computed in the graph instead of baked in."""
    model, args, _ = _vision("resnet50")()
    axes = {"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}
    return model, args, {"input_names": ["image"], "output_names": ["logits"], "dynamic_axes": axes}


def _detection() -> BenchModel:
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, min_size=320, max_size=320
    ).eval()
    return model, ([torch.rand(3, 320, 320)],), {}


def _docs_lstm() -> BenchModel:
    torch.manual_seed(0)
    model = torch.nn.LSTM(10, 20, num_layers=4, bidirectional=True).eval()
    x, h0, c0 = torch.randn(5, 3, 10), torch.randn(8, 3, 20), torch.randn(8, 3, 20)
    axes = {"input": {0: "sequence"}, "output": {0: "sequence"}}
    return model, (x, (h0, c0)), {"input_names": ["input", "h0", "c0"],
                                  "output_names": ["output", "hn", "cn"], "dynamic_axes": axes}


class _LoopModel(torch.nn.Module):
    def forward(self, x, y):
        for i in range(y.size(0)):
            x = x + i
        return x


def _scripted_loop() -> BenchModel:
    model = torch.jit.script(_LoopModel())
    x, y = torch.zeros(2, 3, dtype=torch.long), torch.ones(9, dtype=torch.long)
    return model, (x, y), {"input_names": ["x", "y"], "dynamic_axes": {"y": [0]}}


MODELS: dict[str, Callable[[], BenchModel]] = {
    "resnet50": _vision("resnet50"),
    "mobilenet_v3_large": _vision("mobilenet_v3_large"),
    "efficientnet_b0": _vision("efficientnet_b0"),
    "vit_b_16": _vision("vit_b_16"),
    "vit_l_16": _vision("vit_l_16"),  # a large model: 304M parameters, 1.2 GB of weights
    "resnet50_dynamic": _dynamic_resnet50,
    "swin_t": _vision("swin_t"),
    "fasterrcnn_resnet50_fpn": _detection,
    "docs_lstm": _docs_lstm,
    "scripted_loop": _scripted_loop,
}
