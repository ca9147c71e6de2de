"""Tiny model zoo entries for the conformance runner's own tests (loaded through $MODEL_ZOO_EXTRA)."""

from __future__ import annotations

import os
import random
import signal
import time

import torch

from model_zoo import ZooEntry


class AddOne(torch.nn.Module):
    def forward(self, x):
        return x + 1.0


class Sleeps(torch.nn.Module):
    """Hangs in PyTorch itself, as a deadlocked kernel would: only killing the worker ends the case."""

    def forward(self, x):
        time.sleep(3600)
        return x


class KillsItsProcess(torch.nn.Module):
    """Dies like a native crash would (SIGKILL: no Python cleanup, no exception)."""

    def forward(self, x):
        os.kill(os.getpid(), signal.SIGKILL)
        return x


class BakesARandomNumber(torch.nn.Module):
    """Tracing records the Python random number drawn at trace time; every later PyTorch call draws another,
    so the export mismatches PyTorch (the documented tracing pitfall) - a deterministic way to get a mismatch."""

    def forward(self, x):
        return x + random.random() + 1.0


class BranchesOnData(torch.nn.Module):
    """Python control flow on a tensor's value: a trace records the branch taken; torch.export refuses to capture it
    (a data-dependent guard), which a ``--capture export`` run must record with torch.export's reason."""

    def forward(self, x):
        if x.sum() > 0:
            return x + 1.0
        return x - 1.0


class SubtractsTwice(torch.nn.Module):
    """x - 2 y: two inputs of one shape and dtype, which a run fed the wrong way round tells apart."""

    def forward(self, x, y):
        return x - 2.0 * y


class IgnoresItsFirstArgument(torch.nn.Module):
    """The export drops ``unused`` (nothing reads it): ``x`` is its only graph input, the caller's second argument."""

    def forward(self, unused, x):
        return x + 1.0


def _two_inputs(variant: int, seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    return torch.randn((2, 3)[variant], 4, generator=g), torch.randn((2, 3)[variant], 4, generator=g)


def _keywords_out_of_order(variant: int, seed: int) -> tuple:
    """SubtractsTwice's arguments as library exporters pass them: a dict, in another order than forward's."""
    x, y = _two_inputs(variant, seed)
    return ({"y": y, "x": x},)


class ConstantOutput(torch.nn.Module):
    def forward(self, x):
        return torch.zeros_like(x) + 2.0


class TiedDetector(torch.nn.Module):
    """A one-convolution detector whose scores all sit within a hair of each other, as a random-weight detector's
    do: a 3x3 convolution over a 3x8x8 image gives each of 64 anchors 4 box deltas and a score logit (its weights
    scaled down, so every score is ~0.5), then a threshold, top-k and NMS select. Its final detections are all on
    near-ties; the values before the selection are not."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Conv2d(3, 5, 3, padding=1)
        with torch.no_grad():
            self.head.weight[4].mul_(1e-3)
            self.head.bias[4].zero_()
        ys, xs = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
        centres = torch.stack([xs, ys, xs, ys], -1).reshape(-1, 4) * 8 + 4
        self.register_buffer("anchors", centres + torch.tensor([-10.0, -10.0, 10.0, 10.0]))

    def forward(self, images: list[torch.Tensor]):
        import torchvision

        out = self.head(images[0][None])[0]
        boxes = self.anchors + 4 * out[:4].flatten(1).t()
        scores = out[4].flatten().sigmoid()
        keep = scores > 0.05
        boxes, scores = boxes[keep], scores[keep]
        top, index = scores.topk(32)
        boxes = boxes[index]
        kept = torchvision.ops.nms(boxes, top, 0.5)[:10]
        return [{"boxes": boxes[kept], "scores": top[kept], "labels": torch.ones_like(kept)}]


def tied_detector_inputs(variant: int, seed: int) -> tuple:
    return ([torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(seed))],)


def _inputs(variant: int, seed: int) -> tuple:
    return (torch.randn((2, 3)[variant], 4, generator=torch.Generator().manual_seed(seed)),)


def entries() -> list[ZooEntry]:
    def entry(name, build, **kwargs):
        return ZooEntry(name=name, kind="example", family="test", build=build, inputs=_inputs,
                        input_names=["x"], dynamic_axes={"x": {0: "n"}}, **kwargs)

    return [
        entry("test_add_one", AddOne, quick_opsets=(9, 13)),
        entry("test_sleeps", Sleeps),
        entry("test_kills_its_process", KillsItsProcess),
        entry("test_bakes_a_random_number", BakesARandomNumber),
        entry("test_constant_output", ConstantOutput),
        entry("test_branches_on_data", BranchesOnData),
        entry("test_scripted_add_one", lambda: torch.jit.script(AddOne())),
        ZooEntry(name="test_subtracts_twice", kind="example", family="test", build=SubtractsTwice, inputs=_two_inputs,
                 input_names=["x", "y"]),
        ZooEntry(name="test_keywords_out_of_order", kind="example", family="test", build=SubtractsTwice,
                 inputs=_keywords_out_of_order, input_names=["x", "y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}),
        ZooEntry(name="test_ignores_its_first_argument", kind="example", family="test", build=IgnoresItsFirstArgument,
                 inputs=_two_inputs, input_names=["unused", "x"]),
        ZooEntry(name="test_tied_detector", kind="model", family="detection", build=TiedDetector,
                 inputs=tied_detector_inputs, input_names=["image"], output_names=["boxes", "scores", "labels"],
                 min_opset=11, comparison="detection"),
        # Exact tolerance: the one-step differences of requantization put it beyond, as the quantized zoo's are.
        ZooEntry(name="test_quantized_steps", kind="model", family="quantized_classification", build=small_quantized,
                 inputs=small_quantized_inputs, input_names=["input"], output_names=["output"], rtol=0.0, atol=0.0,
                 min_opset=10, comparison="quantized", cuda_reference=False),
    ]


class SmallQuantized(torch.nn.Module):
    """Two fbgemm-quantized convolutions (observed on one random batch), dequantized: ONNX Runtime's QDQ form lands
    some values a step of the output grid away from fbgemm's, as the quantized torchvision classifiers do."""

    def __init__(self):
        super().__init__()
        self.quant, self.dequant = torch.ao.quantization.QuantStub(), torch.ao.quantization.DeQuantStub()
        self.conv1, self.relu = torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(16, 16, 3)

    def forward(self, x):
        return self.dequant(self.conv2(self.relu(self.conv1(self.quant(x)))))


def small_quantized() -> torch.nn.Module:
    torch.manual_seed(0)
    torch.backends.quantized.engine = "fbgemm"
    model = SmallQuantized().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    prepared = torch.ao.quantization.prepare(torch.ao.quantization.fuse_modules(model, [["conv1", "relu"]]))
    prepared(torch.rand(4, 3, 24, 24, generator=torch.Generator().manual_seed(1)))
    return torch.ao.quantization.convert(prepared)


def small_quantized_inputs(variant: int, seed: int) -> tuple:
    return (torch.rand((1, 2)[variant], 3, 24, 24, generator=torch.Generator().manual_seed(seed)),)
