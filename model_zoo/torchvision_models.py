"""Every torchvision model, the quantized classification models included, with random weights (``weights=None``:
no downloads).

Families follow torchvision's own modules. Inputs are in the range each family expects: classification,
segmentation and video models take normalised images (zero mean, unit variance), detection models take
images in [0, 1] (their transform normalises), RAFT takes images in [-1, 1]. Sizes are the models' usual
ones where the architecture fixes them (ViT, MaxViT, MViT, S3D, SSD) and small but representative elsewhere,
because every case runs several forward passes on a shared CPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torchvision
from torchvision.models import get_model, list_models

from model_zoo.conditioning import calibrate_batchnorm, generator
from model_zoo.entry import ZooEntry

FAMILY_MODULES = {
    "detection": torchvision.models.detection,
    "segmentation": torchvision.models.segmentation,
    "video": torchvision.models.video,
    "optical_flow": torchvision.models.optical_flow,
}

# A representative model of each family in the quick tier (cheap, covering the family's distinctive ops), at
# the lowest opset the family needs, at 16, and at 18 and 20 (Reduce* axes as inputs, LayerNormalization, Gelu,
# GridSample-20): the quick tier must finish in minutes on two cores.
QUICK = {"mobilenet_v3_small": (7, 16, 18, 20), "lraspp_mobilenet_v3_large": (11, 16, 18, 20),
         "ssdlite320_mobilenet_v3_large": (11,), "r3d_18": (7, 16, 18, 20), "raft_small": (11, 16, 18, 20)}

# Rough cost relative to resnet50 (export + several forward passes); scales the per-case timeout.
COST = {
    "vit_h_14": 12, "regnet_y_128gf": 12, "vit_l_16": 5, "vit_l_32": 4, "regnet_y_32gf": 4, "regnet_x_32gf": 3,
    "efficientnet_b7": 3, "efficientnet_v2_l": 3, "convnext_large": 3, "swin_v2_b": 3, "swin_b": 3,
    "maxvit_t": 2, "swin3d_b": 6, "swin3d_s": 4, "swin3d_t": 3, "mvit_v1_b": 4, "mvit_v2_s": 4, "s3d": 2,
    "maskrcnn_resnet50_fpn": 4, "maskrcnn_resnet50_fpn_v2": 5, "keypointrcnn_resnet50_fpn": 4,
    "fasterrcnn_resnet50_fpn_v2": 4, "fasterrcnn_resnet50_fpn": 3, "retinanet_resnet50_fpn_v2": 3,
    "retinanet_resnet50_fpn": 3, "fcos_resnet50_fpn": 3, "raft_large": 4, "raft_small": 2,
    "fcn_resnet101": 3, "deeplabv3_resnet101": 3, "fcn_resnet50": 2, "deeplabv3_resnet50": 2,
}

# ONNX features that set the lowest opset a model can be expressed at (the zoo's claim; the runner checks it).
_ERF = (9, "GELU needs Erf (opset 9)")
_RESIZE = (11, "bilinear interpolation with half-pixel centres (align_corners=False) needs Resize with "
               "coordinate_transformation_mode (opset 11)")
_DETECTION = (11, "the transform resizes with half-pixel bilinear Resize (opset 11); NonMaxSuppression and "
                  "RoiAlign need opset 10")
_GRID_SAMPLE = (16, "grid_sample needs GridSample (opset 16)")


def _gelu_model(name: str) -> bool:
    return name.startswith(("vit_", "swin", "convnext", "maxvit", "mvit"))


def _normal_images(shape: tuple[int, ...], batches: tuple[int, int]) -> Callable[[int, int], tuple]:
    def make(variant: int, seed: int) -> tuple:
        return (torch.randn(batches[variant], *shape, generator=generator(seed)),)

    return make


def _calibration(shape: tuple[int, ...], batch: int = 4) -> Callable[[int], tuple]:
    return lambda seed: (torch.randn(batch, *shape, generator=generator(seed)),)


def _classification(name: str) -> ZooEntry:
    size = {"inception_v3": 299}.get(name, 224)
    shape = (3, size, size)
    min_opset, reason = _ERF if _gelu_model(name) else (7, "")
    kwargs = {"init_weights": True} if name in ("googlenet", "inception_v3") else {}
    return ZooEntry(
        name=name, kind="model", family="classification",
        build=functools.partial(get_model, name, weights=None, **kwargs),
        inputs=_normal_images(shape, (1, 2)),
        calibration_inputs=_calibration(shape),
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        min_opset=min_opset, min_opset_reason=reason,
        quick_opsets=QUICK.get(name, ()), cost=COST.get(name, 1.0),
    )


def _segmentation(name: str) -> ZooEntry:
    def make(variant: int, seed: int) -> tuple:
        height, width = ((160, 160), (192, 224))[variant]
        return (torch.randn(1, 3, height, width, generator=generator(seed)),)

    return ZooEntry(
        name=name, kind="model", family="segmentation",
        build=functools.partial(get_model, name, weights=None, weights_backbone=None),
        inputs=make, calibration_inputs=_calibration((3, 160, 160), batch=2),
        input_names=["input"], output_names=["out"],
        dynamic_axes={"input": {2: "height", 3: "width"}, "out": {2: "height", 3: "width"}},
        min_opset=_RESIZE[0], min_opset_reason=_RESIZE[1],
        quick_opsets=QUICK.get(name, ()), cost=COST.get(name, 1.5),
    )


def _detection_kwargs(name: str) -> dict:
    """Small images (the R-CNN default resizes to 800 pixels) and few detections, so a case stays affordable.

    Every detector keeps every score (``box_score_thresh=0`` / ``score_thresh=0``): with random weights the R-CNNs'
    class scores sit near 1/91 and RetinaNet's and FCOS's near their 0.01 prior, below the default cut-offs (0.05,
    0.2), and a model that detects nothing would leave nothing to compare.
    """
    if name.startswith(("fasterrcnn", "maskrcnn", "keypointrcnn")):
        kwargs = {"box_detections_per_img": 20, "box_score_thresh": 0.0}
        if "mobilenet" not in name:
            kwargs.update(min_size=320, max_size=320)
        return kwargs
    if name.startswith(("retinanet", "fcos")):
        return {"min_size": 320, "max_size": 320, "detections_per_img": 20, "score_thresh": 0.0}
    return {"detections_per_img": 20}


def _detection_outputs(name: str) -> list[str]:
    """Output names in the order the model's result dict has them (R-CNNs: labels before scores; others not)."""
    if not name.startswith(("fasterrcnn", "maskrcnn", "keypointrcnn")):
        return ["boxes", "scores", "labels"]
    names = ["boxes", "labels", "scores"]
    if name.startswith("maskrcnn"):
        names.append("masks")
    if name.startswith("keypointrcnn"):
        names += ["keypoints", "keypoints_scores"]
    return names


def _detection(name: str) -> ZooEntry:
    size = {"ssd300_vgg16": 300}.get(name, 320)

    def make(variant: int, seed: int) -> tuple:
        height, width = ((size, size), (size - 64, size))[variant]
        return ([torch.rand(3, height, width, generator=generator(seed))],)

    def calibrate(seed: int) -> tuple:
        return ([torch.rand(3, size, size, generator=generator(seed)) for _ in range(2)],)

    outputs = _detection_outputs(name)
    return ZooEntry(
        name=name, kind="model", family="detection",
        build=functools.partial(get_model, name, weights=None, weights_backbone=None, **_detection_kwargs(name)),
        inputs=make, calibration_inputs=calibrate,
        input_names=["image"], output_names=outputs,
        dynamic_axes={"image": {1: "height", 2: "width"}, **{o: {0: "detections"} for o in outputs}},
        min_opset=_DETECTION[0], min_opset_reason=_DETECTION[1],
        atol_scale=1e-4,
        tolerance_reason="box coordinates are pixels of a ~320-pixel image, produced after a bilinear resize and a "
                         "deep backbone: their absolute error is judged against that scale (1e-4 of the largest "
                         "coordinate, 0.03 pixel); scores (at most 1) keep an absolute tolerance of about 1e-4",
        comparison="detection", quick_opsets=QUICK.get(name, ()), cost=COST.get(name, 2.0),
        notes=f"built with {_detection_kwargs(name)}",
    )


def _video(name: str) -> ZooEntry:
    # MViT and S3D fix their input (16 x 224 x 224); the ResNet-style 3D models and Swin3D take any clip.
    frames, size = (16, 224) if name in ("s3d", "mvit_v1_b", "mvit_v2_s") else (4, 64)
    if name.startswith("swin3d"):
        frames, size = 4, 112
    shape = (3, frames, size, size)
    min_opset, reason = _ERF if name.startswith(("mvit", "swin3d")) else (7, "")
    return ZooEntry(
        name=name, kind="model", family="video",
        build=functools.partial(get_model, name, weights=None),
        inputs=_normal_images(shape, (1, 2)), calibration_inputs=_calibration(shape, batch=2),
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        min_opset=min_opset, min_opset_reason=reason,
        quick_opsets=QUICK.get(name, ()), cost=COST.get(name, 2.0),
    )


def _optical_flow(name: str) -> ZooEntry:
    def images(height: int, width: int, batch: int, seed: int) -> tuple:
        g = generator(seed)
        return tuple(torch.rand(batch, 3, height, width, generator=g) * 2 - 1 for _ in range(2))

    def make(variant: int, seed: int) -> tuple:
        # RAFT's correlation pyramid needs feature maps (1/8 of the image) of at least 16 x 16.
        height, width = ((128, 128), (128, 160))[variant]
        return images(height, width, 1, seed)

    # RAFT returns one flow estimate per refinement iteration; the last is the answer, all are compared.
    return ZooEntry(
        atol_scale=1e-5,
        tolerance_reason="flows are in pixels (up to ~15 with random weights) refined over 12 iterations through "
                         "grid_sample, so float32 rounding accumulates: atol grows by 1e-5 of the flow's scale "
                         "(a ten-thousandth of a pixel at scale 10)",
        name=name, kind="model", family="optical_flow",
        build=functools.partial(get_model, name, weights=None),
        inputs=make, calibration_inputs=lambda seed: images(128, 128, 2, seed),
        input_names=["image1", "image2"],
        dynamic_axes={"image1": {2: "height", 3: "width"}, "image2": {2: "height", 3: "width"}},
        min_opset=_GRID_SAMPLE[0], min_opset_reason=_GRID_SAMPLE[1],
        quick_opsets=QUICK.get(name, ()), cost=COST.get(name, 2.0),
    )


# Quantized tensors are QuantizeLinear/DequantizeLinear pairs (opset 10). fbgemm quantizes weights per channel,
# which DequantizeLinear expresses from opset 13; below it the exporter writes those weights as the float32 values
# they stand for (exactly what DequantizeLinear computes), so opset 10 is the claim.
_QDQ = (10, "quantized tensors are QuantizeLinear/DequantizeLinear (opset 10)")


def _quantized_classification(name: str) -> ZooEntry:
    """torchvision's quantized classifiers, quantized as ``quantize=True`` does (fbgemm engine, torchvision's own
    ``quantize_model``: fuse, observe one random image in [0, 1], convert) from random weights, with one step more:
    their BatchNorm statistics are calibrated first (``model_zoo.conditioning``). Without it the random network's
    activations shrink or grow layer by layer until the observers' ranges collapse: quantized MobileNet v3 then
    outputs exactly zero for every input. Inputs are in [0, 1], the range the observers saw. The output is the
    dequantized logits."""
    size = 299 if name == "quantized_inception_v3" else 224

    def make(variant: int, seed: int) -> tuple:
        return (torch.rand((1, 2)[variant], 3, size, size, generator=generator(seed)),)

    return ZooEntry(
        name=name, kind="model", family="quantized_classification",
        build=functools.partial(_build_quantized, name, size),
        inputs=make,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
        min_opset=_QDQ[0], min_opset_reason=_QDQ[1],
        rtol=0.0, atol_scale=QUANTIZED_ATOL_SCALE, comparison="quantized",
        tolerance_reason="ONNX Runtime computes each QDQ layer in float32 and rounds to the output's integer grid, "
                         "PyTorch accumulates in int32 and requantizes with a multiplier: a value on a rounding "
                         "boundary lands one step apart, and such steps carry through later layers. The logits are "
                         "dequantized on a grid of step ~1/127 of their largest magnitude; atol is about two steps "
                         f"({QUANTIZED_ATOL_SCALE:g} of the largest logit). Beyond it the case is judged node by node "
                         "(exporter.verify): it passes when every quantized value is within one step of PyTorch's "
                         "and no node diverges, each computed from PyTorch's own inputs",
        cost=COST.get(name, 1.0), cuda_reference=False,
        notes="quantize=True's quantize_model (fbgemm) after BatchNorm calibration, weights=None",
    )


# Two quantization steps of the logits, as a fraction of their largest magnitude (see tolerance_reason above).
QUANTIZED_ATOL_SCALE = 2 / 127


def _build_quantized(name: str, size: int) -> torch.nn.Module:
    from torchvision.models.quantization.utils import quantize_model

    kwargs = {"init_weights": True} if name in ("quantized_googlenet", "quantized_inception_v3") else {}
    model = get_model(name, weights=None, quantize=False, **kwargs).eval()
    calibrate_batchnorm(model, ((torch.rand(4, 3, size, size, generator=generator(1000 + k)),) for k in range(3)))
    quantize_model(model, "fbgemm")
    return model


_MAKERS = {"detection": _detection, "segmentation": _segmentation, "video": _video, "optical_flow": _optical_flow}


def torchvision_entries() -> list[ZooEntry]:
    """One entry per torchvision model."""
    family_of = {name: family for family, module in FAMILY_MODULES.items() for name in list_models(module=module)}
    entries = []
    for name in list_models():
        if name.startswith("quantized_"):
            entries.append(_quantized_classification(name))
            continue
        entries.append(_MAKERS.get(family_of.get(name, "classification"), _classification)(name))
    return entries
