"""torchvision's compiled ops: nms, roi_align, roi_pool; the position-sensitive and deformable ones are rejected
with the ONNX limitation that stops them.

torchvision.ops.batched_nms needs no symbolic of its own: traced, it is ordinary tensor ops around nms.
"""

from __future__ import annotations

import numpy as np

from exporter.dtypes import INT64
from exporter.lowering.core import cast, dim_size, require_opset, slice_op, squeeze, to_int64_list_value, unsqueeze
from exporter.registry import parse_args, symbolic, unsupported


@symbolic("torchvision::nms", since=10)
@parse_args("v", "v", "f")
def nms(g, boxes, scores, iou_threshold):
    """nms(boxes [N, 4] as x1, y1, x2, y2, scores [N], iou) -> kept indices by decreasing score.

    NonMaxSuppression works on batches and classes: the boxes become one batch of one class, every box may be
    kept (max_output_boxes_per_class = N), and the box index is column 2 of its [selected, 3] output.
    PyTorch and ONNX both suppress a box whose IoU is strictly greater than the threshold.
    """
    batched_boxes = unsqueeze(g, boxes, [0])
    batched_scores = unsqueeze(g, scores, [0, 1])
    keep_all = to_int64_list_value(g, [dim_size(g, boxes, 0)])
    selected = g.op("NonMaxSuppression", batched_boxes, batched_scores, keep_all,
                    g.const(np.array([iou_threshold], dtype=np.float32)), center_point_box_i=0)
    g.set_type(selected, INT64, (None, 3))
    return g.set_type(g.op("Gather", selected, g.const(np.array(2, dtype=np.int64)), axis_i=1), INT64, (None,))


def _rois_parts(g, rois):
    """(batch indices as int64 [K], boxes [K, 4]) from torchvision's [K, 5] rois (batch index first)."""
    batch = squeeze(g, slice_op(g, rois, [1], [0], [1]), [1])
    boxes = slice_op(g, rois, [1], [1], [5])
    return cast(g, batch, INT64), boxes


@symbolic("torchvision::roi_align", refuses=True)
@symbolic("torchvision::roi_align", since=10)
@parse_args("v", "v", "f", "i", "i", "i", "b")
def roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """roi_align as RoiAlign-10, whose sampling is aligned=False's.

    aligned=True shifts samples by half a pixel, which RoiAlign offers from opset 16. Shifting the boxes instead
    is not exact: RoiAlign-10 also widens boxes narrower than one pixel, which PyTorch's aligned mode does not.
    Registered below 10 too, as a refusal, so that there an aligned=True export names 16, the lowest opset that
    works for it.
    """
    if aligned:
        require_opset(g, 16, "roi_align with aligned=True needs RoiAlign coordinate_transformation_mode half_pixel")
    require_opset(g, 10, "roi_align needs RoiAlign")
    return _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio)


@symbolic("torchvision::roi_align", since=16)
@parse_args("v", "v", "f", "i", "i", "i", "b")
def roi_align_with_transformation_mode(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                                       aligned):
    """roi_align as RoiAlign-16: aligned=True samples at ``half_pixel``, aligned=False at ``output_half_pixel``."""
    mode = "half_pixel" if aligned else "output_half_pixel"
    return _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
                      coordinate_transformation_mode_s=mode)


def _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, **attributes):
    """RoiAlign in mode avg, PyTorch's only mode."""
    batch, boxes = _rois_parts(g, rois)
    return g.op("RoiAlign", input, boxes, batch, mode_s="avg", output_height_i=pooled_height,
                output_width_i=pooled_width, sampling_ratio_i=max(sampling_ratio, 0), spatial_scale_f=spatial_scale,
                **attributes)


@symbolic("torchvision::roi_pool")
@parse_args("v", "v", "f", "i", "i")
def roi_pool(g, input, rois, spatial_scale, pooled_height, pooled_width):
    """roi_pool as MaxRoiPool; the argmax output (for the backward pass) has no ONNX equivalent."""
    if g.output_used(1):
        raise unsupported(g.op_kind, g.opset, "roi_pool's argmax output has no ONNX equivalent")
    pooled = g.op("MaxRoiPool", input, rois, pooled_shape_i=[pooled_height, pooled_width],
                  spatial_scale_f=spatial_scale)
    return pooled, None


@symbolic("torchvision::ps_roi_align", "torchvision::ps_roi_pool", refuses=True)
def position_sensitive_roi(g, *args):
    """Position-sensitive RoI pooling has no ONNX operator at any opset."""
    raise unsupported(g.op_kind, g.opset, "position-sensitive RoI pooling has no ONNX operator")


@symbolic("torchvision::deform_conv2d", refuses=True)
def deform_conv2d_before_19(g, *args):
    """Deformable convolution needs ONNX DeformConv (opset 19)."""
    require_opset(g, 19, "deformable convolution needs DeformConv")


@symbolic("torchvision::deform_conv2d", since=19)
@parse_args("v", "v", "v", "v", "v", "i", "i", "i", "i", "i", "i", "i", "i", "b")
def deform_conv2d(g, input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w,
                  groups, offset_groups, use_mask):
    """torchvision.ops.deform_conv2d as DeformConv-19; torchvision passes zeros for a missing bias and for a
    missing mask (with use_mask=False), so the mask input is given only where the call gave one."""
    masks = [mask] if use_mask else []
    return g.op("DeformConv", input, weight, offset, bias, *masks, strides_i=[stride_h, stride_w],
                pads_i=[pad_h, pad_w, pad_h, pad_w], dilations_i=[dilation_h, dilation_w], group_i=groups,
                offset_group_i=offset_groups)
