"""Workarounds for gaps of one ONNX runtime, declared in one place and switchable.

The ONNX spec is what an export targets. Where ONNX Runtime (the runtime the harness checks against) lacks a kernel
or rejects a valid form, a building block may emit an equivalent form it can run instead; each such choice is a
``Workaround`` declared here, named with the runtime and version whose gap it works around and the plain ONNX form
it replaces. A symbolic or building block asks ``applies(g, WORKAROUND)`` only when the gap matters for the values
at hand, so the export records exactly the workarounds its model depends on (``ONNXProgram.workarounds``).

``exporter.export(..., runtime_workarounds=False)`` emits the plain ONNX form everywhere (a set of names keeps just
those). ``tests/engine/test_runtime_workarounds.py`` exports each workaround's probe in plain form and shows that the runtime
still fails it: when a runtime release closes a gap, that test fails and names the workaround to remove.
"""

from __future__ import annotations

from dataclasses import dataclass

ONNX_RUNTIME = "ONNX Runtime 1.31.1 (CPU provider)"


@dataclass(frozen=True)
class Workaround:
    name: str
    runtime: str  # the runtime and version whose gap this works around
    gap: str  # what that runtime lacks or rejects
    plain_form: str  # what the export emits with the workaround off: the plain ONNX form


WORKAROUNDS: dict[str, Workaround] = {}


def declare(name: str, gap: str, plain_form: str, runtime: str = ONNX_RUNTIME) -> Workaround:
    if name in WORKAROUNDS:
        raise ValueError(f"workaround {name!r} is declared twice")
    WORKAROUNDS[name] = Workaround(name, runtime, gap, plain_form)
    return WORKAROUNDS[name]


def applies(g, workaround: Workaround) -> bool:
    """Whether this export emits ``workaround``'s form (the default) rather than the plain ONNX form. Ask only
    where the gap matters for the values at hand: a True answer records that the exported model depends on it."""
    enabled = g.session.workarounds
    if enabled is not None and workaround.name not in enabled:
        return False
    g.session.used_workarounds.add(workaround.name)
    return True


def enabled_set(choice) -> frozenset[str] | None:
    """The ``runtime_workarounds`` export option as the session's set of enabled workarounds (None: all)."""
    if choice is True:
        return None
    if choice is False or choice is None:
        return frozenset()
    names = frozenset(choice)
    unknown = sorted(names - set(WORKAROUNDS))
    if unknown:
        raise ValueError(f"unknown runtime workarounds {unknown}; known: {sorted(WORKAROUNDS)}")
    return names


# -- the workarounds ------------------------------------------------------------------------------------------
# Declared by topic; each is used by the building block or symbolic named in its comment.

# -- elementwise, comparison, activations, casting, random, distance, losses --------------------------------------

# lowering.comparison.is_nan / not_nan (opsets 13-19): IsNaN of a bfloat16 tested in float (exact).
ISNAN_BFLOAT16_IN_FLOAT = declare(
    "isnan_bfloat16_in_float",
    gap="ONNX Runtime has no bfloat16 kernel for IsNaN-13 (it has one for IsNaN-20)",
    plain_form="IsNaN-13 on the bfloat16 input, as ONNX allows",
)
# lowering.arithmetic.arith: Add/Sub/Mul/Div of bfloat16 computed in float32 and rounded back once (exact: PyTorch's CPU
# kernels compute bfloat16 arithmetic the same way).
BFLOAT16_ARITHMETIC_IN_FLOAT = declare(
    "bfloat16_arithmetic_in_float",
    gap="ONNX Runtime has no bfloat16 kernel for Add, Sub, Mul or Div at any opset 13-26 (ONNX allows bfloat16 from "
        "opset 13; probed: python -m tests.engine.workaround_probes.bfloat16_kernels)",
    plain_form="Add/Sub/Mul/Div on the bfloat16 operands, as ONNX allows",
)
# lowering.arithmetic.unary_math: Asin, Acos, Atan and Erf (and gelu's Erf) of doubles.
DOUBLE_MATH_IN_FLOAT32 = declare(
    "double_math_in_float32",
    gap="no double kernel for Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Erf (float and float16 only)",
    plain_form="the op on the double input, as ONNX allows (the workaround computes it in float32 and casts back)",
)
# symbolics.elementwise tan, sinh, cosh, asinh, acosh, atanh of doubles: exact identities of Sin/Cos/Exp/Log/Sqrt.
DOUBLE_MATH_BY_IDENTITY = declare(
    "double_math_by_identity",
    gap="no double kernel for Tan, Sinh, Cosh, Asinh, Acosh, Atanh (float and float16 only)",
    plain_form="Tan/Sinh/Cosh/Asinh/Acosh/Atanh on the double input, as ONNX allows",
)
# lowering.activations.native_activation: the activations of doubles written as the identities the ONNX spec gives.
ACTIVATIONS_DECOMPOSED_FOR_DOUBLE = declare(
    "activations_decomposed_for_double",
    gap="no double kernel for Elu, Selu, Softsign, HardSigmoid, Softplus, HardSwish, nor for PRelu before its "
        "opset-16 version and LeakyRelu outside opsets 16-18 (float and float16 only); its double Shrink rounds "
        "through float32; its Gelu-20 expands to Erf, and at opset 20 its Mish-18 to Softplus, which have no "
        "double kernel",
    plain_form="the activation op on the double input, as ONNX allows",
)
# lowering.arithmetic.clamp_value: clamping doubles before opset 12.
CLIP_DOUBLE_AS_MAX_MIN = declare(
    "clip_double_as_max_min",
    gap="no double kernel for Clip-6 and Clip-11 (float only; double from Clip-12)",
    plain_form="Clip on the double input, as ONNX allows (the workaround emits Max then Min)",
)

# -- shape, tensor factories, sequence, control flow, prim, resize, attention -------------------------------------
# symbolics.rearrange.pixel_shuffle: Reshape/Transpose/Reshape for tensors that are not floating point.
DEPTH_TO_SPACE_INTEGERS = declare(
    "depth_to_space_integers",
    gap="ONNX Runtime has DepthToSpace kernels for float, double, half, int8 and uint8 only (none for int32, int64 "
    "or bool, say)",
    plain_form="DepthToSpace (CRD mode) on the tensor's own type, as ONNX allows from opset 11",
)
# lowering.numbers.extremum: Min/Max at opset 7 in float instead of double.
MIN_MAX_6_DOUBLES = declare(
    "min_max_6_doubles",
    gap="ONNX Runtime implements Min-6 and Max-6 for float only, not double",
    plain_form="Min/Max on double at opset 7 (the type of doubles, and of integers, which Min-6 does not take)",
)
# lowering.shape.circular_pad (opset 19+): bfloat16 circular padding by Slices and Concat, as below opset 19.
CIRCULAR_PAD_BFLOAT16_BY_SLICES = declare(
    "circular_pad_bfloat16_by_slices",
    gap="ONNX Runtime has no bfloat16 kernel for Pad-19 (in any mode)",
    plain_form="Pad-19 in mode 'wrap' on the bfloat16 tensor, as ONNX allows",
)
# symbolics.resize (opset 11+): static-size resizes of doubles by PyTorch's own gathers and weights.
RESIZE_DOUBLES = declare(
    "resize_doubles",
    gap="ONNX Runtime has no Resize kernel for double tensors (float, half, int8, uint8 and int32 only)",
    plain_form="Resize on the double tensor, as ONNX allows",
)

# -- indexing, in-place, sorting, torchvision ops -----------------------------------------------------------------
# lowering.indexing.nonzero_input: NonZero on x != 0 (a bool) instead of x.
NONZERO_AS_COMPARISON = declare(
    "nonzero_as_comparison",
    gap="ONNX Runtime has NonZero kernels only for bool, int32, int64, uint8, float16 and float (none for int8, "
        "int16, the wider unsigned ints, double, bfloat16)",
    plain_form="NonZero on the input's own type, as ONNX allows every type",
)
# symbolics.indexing.scatter_reduce (amax/amin of bools, opset 18+): on uint8 and cast back, exact (any / all).
SCATTER_EXTREMES_OF_BOOLS_AS_UINT8 = declare(
    "scatter_extremes_of_bools_as_uint8",
    gap="ONNX Runtime's ScatterElements-18 refuses reduction 'max'/'min' on bool (every other type but bfloat16 runs)",
    plain_form="ScatterElements reduction 'max'/'min' on the bool tensors, as ONNX allows",
)
# symbolics.sorting._unique: Unique on the input cast to int64 (exact for the integer and bool types), cast back.
UNIQUE_AS_INT64 = declare(
    "unique_as_int64",
    gap="ONNX Runtime has Unique kernels only for float, double, float16, int64 and int8 (none for bool, int16, "
        "int32, uint8 and the other unsigned ints)",
    plain_form="Unique on the input's own type, as ONNX allows every type",
)

# -- nn, pooling, normalization, rnn, linalg, reductions, quantized -----------------------------------------------
# lowering.linalg.gemm_takes (addmm on integers):
INTEGER_GEMM_AS_MATMUL = declare(
    "integer_gemm_as_matmul",
    gap="ONNX Runtime has no int32/int64 kernel for Gemm (ONNX allows them from opset 9)",
    plain_form="Gemm on the integer operands")
# symbolics.normalization.instance_norm:
INSTANCE_NORM_DOUBLE_DECOMPOSED = declare(
    "instance_norm_double_decomposed",
    gap="ONNX Runtime has no double kernel for InstanceNormalization (float16 and float only)",
    plain_form="InstanceNormalization on double")
# lowering.normalization._batch_norm_training (a training export, opset 14+):
BATCH_NORM_TRAINING_DECOMPOSED = declare(
    "batch_norm_training_decomposed",
    gap="ONNX Runtime's graph optimizations (basic level and up) make BatchNormalization in training mode return "
        "other numbers when its running mean is all zeros or its running variance all ones, as in a layer that has "
        "not been trained (with optimizations off it computes it right)",
    plain_form="BatchNormalization with training_mode=1 (the workaround normalizes with the batch's statistics "
               "from ReduceMean, the same output: the export drops the running-statistics outputs)")
# lowering.reductions.extreme_type (max, min, amax, amin, aminmax):
BFLOAT16_EXTREMES_IN_FLOAT = declare(
    "bfloat16_extremes_in_float",
    gap="ONNX Runtime has no bfloat16 kernel for ReduceMax/ReduceMin (ONNX allows bfloat16 from opset 13)",
    plain_form="ReduceMax/ReduceMin on bfloat16")
# lowering.qdq.with_float_bias (quantized conv and linear):
QDQ_BIAS_AFTER_OP_AT_OPSET_10 = declare(
    "qdq_bias_after_op_at_opset_10",
    gap="ONNX Runtime's QDQ fusion quantizes the float bias of a Conv/Gemm fed by DequantizeLinear with Round, an "
        "opset-11 op, and then refuses to load an opset-10 model",
    plain_form="the float bias as the Conv/Gemm's own input")
# lowering.qdq.with_float_bias (quantized conv and linear with per-channel weights below opset 13):
QDQ_FLOAT_WEIGHT_BIAS_AFTER_OP = declare(
    "qdq_float_weight_bias_after_op",
    gap="ONNX Runtime's WeightBiasQuantization (on at every optimization level but none) re-quantizes the float "
        "weight of a Conv/Gemm between DequantizeLinear and QuantizeLinear per tensor (and its bias to int32): a "
        "per-channel weight, which is float below opset 13, loses its small channels and the results move by "
        "several quantization steps",
    plain_form="the float bias as the Conv/Gemm's own input, none when the op has no bias")


# ONNX ops whose version at opset 22 (a version that only adds types) ONNX Runtime 1.31 implements no kernel for, on
# any provider of its CPU build: a model importing 22 or above that holds one fails to load ("Could not find an
# implementation for RandomUniform(22)"). No other form draws random numbers or pools regions of interest, so an
# export that needs one at 22+ is refused, naming opset 21, where it exports and runs.
NO_KERNEL_FROM_22 = frozenset({"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Multinomial",
                               "Bernoulli", "MaxRoiPool", "RoiAlign"})


def missing_kernel(op_type: str, opset: int) -> str | None:
    """Why ONNX Runtime cannot run ``op_type`` (default domain) at ``opset``, or None where it can."""
    if opset >= 22 and op_type in NO_KERNEL_FROM_22:
        return (f"{ONNX_RUNTIME} has no kernel for {op_type}-22 (opset {opset} selects that version, which only "
                f"adds types to {op_type}); export at opset 21 or below")
    return None
