"""Where the op tests run the torch.export capture (``dynamo=True``), and what it cannot take among the op cases,
with why: one table, reviewed in one place. ``test_op_export`` requires each listed export to fail (at capture, refused by the converter, or by the
ONNX checker: never a written model) and fails when one passes, so an entry leaves the table when torch.export or
the engine learns the case.

Measured with torch 2.13 (torch.export, non-strict, size-oblivious) at opset 18, and at 26 for the cases whose
lowest opset is above 18. Each reason is torch.export's own
limit unless it says the engine's.
"""

from __future__ import annotations

import os

from exporter.registry import MAX_OPSET
from opcases import OPSETS

# The opsets and modes at which the op cases run under the torch.export capture. By default opsets 18 (where
# dynamo=True callers are) and the newest, each case once at each: dynamic where it has a dynamic variant (symbolic shapes are where torch.export's
# programs differ most), else static. OP_TESTS_EXPORT_OPSETS=all (or a comma-separated list) and
# OP_TESTS_EXPORT_MODES=static,dynamic widen it.
EXPORT_OPSETS = OPSETS if os.environ.get("OP_TESTS_EXPORT_OPSETS") == "all" else tuple(
    int(opset) for opset in os.environ.get("OP_TESTS_EXPORT_OPSETS", f"18,{MAX_OPSET}").split(","))
EXPORT_MODES = tuple(os.environ.get("OP_TESTS_EXPORT_MODES", "dynamic").split(","))

BOTH, DYNAMIC = ("static", "dynamic"), ("dynamic",)

_QUANTIZED = ("eager-mode quantized tensors, kernels and packed parameters: torch.export traces none of them (its "
              "quantization path is PT2E), and the engine converts no quantized dtype from a program; quantized "
              "models export with dynamo=False")
_FAKE_QUANTIZE_DYNAMIC = ("fake_quantize's cachemask kernels have no symbolic-shape (meta) implementation: "
                          "torch.export cannot trace them with a dynamic axis")
_DATA_DEPENDENT = ("a size or bound read from tensor data (.item()): torch.export cannot guard on it "
                   "(GuardOnDataDependentSymNode)")
_SPECIALIZED = ("the model's code fixes the size of the axis the case makes dynamic: torch.export refuses to keep it "
                "dynamic (\"marked as dynamic but your code specialized it\")")
_PACKED = "pack_padded_sequence reads its lengths as data: torch.export cannot trace it"
_GROUPED_MM_META = ("_grouped_mm's meta kernel takes only bfloat16 operands (\"Expected inputs of BF16 type\"), where "
                    "its CPU kernel takes float32: torch.export cannot trace the float32 case")

LIMITS: dict[str, tuple[tuple[str, ...], str]] = {
    **{name: (BOTH, _QUANTIZED) for name in (
        "quantize_per_tensor_quint8", "quantize_per_tensor_qint8", "quantize_per_channel", "quantized_conv2d",
        "quantized_conv2d_relu", "quantized_conv1d", "quantized_conv_transpose2d", "quantized_linear", "quantized_add",
        "quantized_add_relu", "quantized_mul", "quantized_cat", "quantized_hardswish", "quantized_max_pool2d",
        "quantized_relu_flatten", "quantized_sigmoid", "quantized_conv_transpose3d_output_padding_not_below_stride",
        "quantized_conv_transpose3d_output_padding_and_end_pads")},
    **{name: (DYNAMIC, _FAKE_QUANTIZE_DYNAMIC) for name in (
        "fake_quantize_per_tensor_affine_int8", "fake_quantize_per_tensor_affine_0_127_zero_point",
        "fake_quantize_per_tensor_affine_run_time_parameters", "fake_quantize_per_channel_affine_uint8_then_int8",
        "fake_quantize_per_channel_affine_0_127_run_time")},
    **{name: (BOTH, _DATA_DEPENDENT) for name in (
        "slice_run_time_step", "slice_scatter_run_time_step", "one_hot_infer_classes", "one_hot_0d_infer_classes",
        "one_hot_run_time_classes", "tensor_split_tensor_sections", "arange_float_bounds_int64",
        "arange_float_bounds_int32", "arange_float_bounds_float64", "linspace_run_time_steps",
        "linspace_run_time_steps_int64")},
    **{name: (DYNAMIC, _SPECIALIZED) for name in (
        "take_along_dim_negative", "conv_tbc", "linalg_norm_matrix_inf", "linalg_matrix_norm_neg1_dims_2_0_keepdim",
        "linalg_matrix_norm_neg_inf", "linalg_matrix_norm_one_empty_axis", "_dim_arange_traced", "chunk_run_time_count",
        "chunk_run_time_count_negative_dim", "diff_n_beyond_length", "hann_window", "hann_window_symmetric_float64",
        # (from opset 20, its lowest: measured at 20, 21 and 26 when the default run added opset 26)
        "affine_grid_generator_3d_run_time_size")},
    **{name: (BOTH, _PACKED) for name in (
        "pack_padded_sequence_lstm", "pack_padded_sequence_lstm_two_layers_bidirectional_batch_first_h0_c0",
        "pack_padded_sequence_gru_bidirectional_h0_padding_value", "pack_padded_sequence_rnn_relu_unsorted")},
    **{name: (BOTH, _GROUPED_MM_META) for name in (
        "_grouped_mm_groups_with_an_empty_one", "_grouped_mm_routed_by_histc", "_grouped_mm_batched_without_offs")},
    "set_": (BOTH, "set_ on an input that is also mutated otherwise: torch.export's functionalization refuses it"),
    "_shape_as_tensor": (BOTH, "_shape_as_tensor reads a fake tensor's data: torch.export cannot trace it"),
    "repeat_interleave_run_time_one_or_per_slice": (DYNAMIC, "torch.export cannot prove the repeats' length equals "
                                                             "the dynamic axis"),
    "as_strided_overlapping_offset": (DYNAMIC, "the engine refuses as_strided where the program does not record the "
                                               "input's strides as numbers (a dynamic program's are symbolic)"),
}


def unsupported_modes(name: str) -> tuple[tuple[str, ...], str]:
    """(the modes whose export torch.export cannot take, why) for the case ``name``; ((), "") where it can."""
    return LIMITS.get(name, ((), ""))
