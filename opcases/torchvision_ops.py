"""Cases for torchvision's compiled ops (nms, batched_nms, roi_align, roi_pool) and the ones ONNX cannot express.

Boxes are drawn so that no IoU sits on the threshold and no two scores tie: both would make the kept set
depend on rounding rather than on the export.
"""

import torch
from torchvision import ops

from opcases import OPSETS, OpCase, no_kernel_from_22


def _boxes(count, generator):
    corner = torch.rand(count, 2, generator=generator) * 20
    size = torch.rand(count, 2, generator=generator) * 10 + 2
    return torch.cat([corner, corner + size], dim=1)


def _nms_inputs(k):
    generator = torch.Generator().manual_seed(7 + k)
    count = 12 + 5 * k
    return _boxes(count, generator), torch.randperm(count, generator=generator).float() / count


def _batched_inputs(k):
    boxes, scores = _nms_inputs(k)
    return boxes, scores, torch.arange(boxes.shape[0]) % 3


def _feature_and_rois(k):
    generator = torch.Generator().manual_seed(3 + k)
    features = torch.randn(2, 3, 12, 14, generator=generator)
    count = 4 + 2 * k
    rois = torch.cat([torch.randint(0, 2, (count, 1), generator=generator).float(),
                      _boxes(count, generator) * 0.9], dim=1)
    return features, rois


def _deform_inputs(k):
    return (torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3), torch.randn(1, 18, 4, 4))


_NO_ROI_ALIGN_22, _NO_MAX_ROI_POOL_22 = no_kernel_from_22("RoiAlign"), no_kernel_from_22("MaxRoiPool")
_NO_ONNX_OP = {opset: "ONNX has no position-sensitive RoI pooling operator at any opset" for opset in OPSETS}

CASES = [
    OpCase("nms", _nms_inputs, min_opset=10, fn=lambda boxes, scores: ops.nms(boxes, scores, 0.3)),
    OpCase("nms", _nms_inputs, sample="strict_iou", min_opset=10, fn=lambda boxes, scores: ops.nms(boxes, scores, 0.05)),
    OpCase("nms", _nms_inputs, sample="top_kept", min_opset=10,
           fn=lambda boxes, scores: ops.nms(boxes, scores, 0.3)[:2]),
    OpCase("batched_nms", _batched_inputs, min_opset=10,
           fn=lambda boxes, scores, idxs: ops.batched_nms(boxes, scores, idxs, 0.3)),
    OpCase("roi_align", _feature_and_rois, min_opset=10, atol=1e-5, known_failures=_NO_ROI_ALIGN_22,
           tolerance_reason="bilinear samples averaged in another order than torchvision's kernel",
           fn=lambda x, rois: ops.roi_align(x, rois, (3, 2), spatial_scale=0.5, sampling_ratio=2)),
    OpCase("roi_align", _feature_and_rois, sample="adaptive_sampling", min_opset=10, atol=1e-5,
           known_failures=_NO_ROI_ALIGN_22,
           tolerance_reason="bilinear samples averaged in another order than torchvision's kernel",
           fn=lambda x, rois: ops.roi_align(x, rois, 2, spatial_scale=0.5, sampling_ratio=-1)),
    OpCase("roi_align", _feature_and_rois, sample="aligned", min_opset=16, atol=1e-5, known_failures=_NO_ROI_ALIGN_22,
           tolerance_reason="bilinear samples averaged in another order than torchvision's kernel",
           fn=lambda x, rois: ops.roi_align(x, rois, (2, 3), spatial_scale=0.5, sampling_ratio=2, aligned=True)),
    OpCase("roi_pool", _feature_and_rois, known_failures=_NO_MAX_ROI_POOL_22,
           fn=lambda x, rois: ops.roi_pool(x, rois, (3, 2), spatial_scale=0.5)),
    OpCase("roi_pool", _feature_and_rois, sample="unit_scale", known_failures=_NO_MAX_ROI_POOL_22,
           fn=lambda x, rois: ops.roi_pool(x, rois, 2)),
    OpCase("ps_roi_align", lambda k: (torch.randn(1, 8, 10, 10), torch.tensor([[0.0, 1, 1, 8, 8]])),
           known_failures=_NO_ONNX_OP, dynamic=False,
           fn=lambda x, rois: ops.ps_roi_align(x, rois, 2, spatial_scale=1.0)),
    OpCase("deform_conv2d", _deform_inputs, min_opset=19, dynamic=False,
           fn=lambda x, weight, offset: ops.deform_conv2d(x, offset, weight)),
    OpCase("deform_conv2d", lambda k: (torch.randn(2, 4, 7, 6), torch.randn(6, 2, 3, 2), torch.randn(2, 24, 4, 6),
                                       torch.rand(2, 12, 4, 6), torch.randn(6)),
           sample="mask_bias_groups_stride_padding_dilation", min_opset=19, dynamic=False, atol=1e-5,
           tolerance_reason="bilinear sampling at fractional offsets, then a sum over channels and taps",
           fn=lambda x, weight, offset, mask, bias: ops.deform_conv2d(
               x, offset, weight, bias, stride=(2, 1), padding=(1, 1), dilation=(1, 2), mask=mask)),
]
