"""The model zoo's conditioning of random-weight models: what makes a comparison with ONNX Runtime meaningful."""

from __future__ import annotations

import torch

import model_zoo
from model_zoo.conditioning import calibrate_batchnorm, reinitialise_zero_linears


def test_zero_initialised_heads_get_random_weights():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    torch.nn.init.zeros_(model[1].weight)
    assert reinitialise_zero_linears(model) == 1
    assert model[1].weight.detach().any() and model[0].weight.detach().any()


def test_vit_output_depends_on_its_input_after_preparation():
    """torchvision zero-initialises ViT's head: unprepared, every output is exactly 0 and proves nothing."""
    entry = model_zoo.get("vit_b_32")
    model = model_zoo.prepare_model(entry)
    with torch.no_grad():
        first, second = model(*entry.inputs(0, 0)), model(*entry.inputs(0, 1))
    assert first.abs().max() > 0.1 and not torch.allclose(first, second)


def test_batchnorm_calibration_sets_running_statistics_from_the_data():
    layer = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4)).eval()
    batches = [(torch.randn(8, 3, 5, 5) * 10 + 3,) for _ in range(3)]
    assert calibrate_batchnorm(layer, batches) == 1
    with torch.no_grad():
        out = layer(batches[0][0])
    assert abs(out.mean().item()) < 0.5 and 0.5 < out.std().item() < 1.5
    assert not layer.training and not layer[1].training
