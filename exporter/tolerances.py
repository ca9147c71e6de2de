"""The one tolerance table for per-operator comparisons (hand-written op cases, OpInfo samples and the values
:func:`exporter.verify` compares inside a model alike), and the default tolerance of a model's outputs.

Keyed by (dtype, op family). Every entry that loosens the default says why; a comparison records the
tolerance it used and the error it achieved, so tightening later is a data-driven edit of this table.
Models use their zoo entry's tolerance (``model_zoo``), not this table: ``DEFAULT_RTOL``/``DEFAULT_ATOL`` unless the
entry gives a reason for something else.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

# rtol/atol that the design measured torch's own exporter against on randomly initialised torchvision models
# (96 of 108 within it): a model's outputs are compared with them unless its zoo entry says otherwise.
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    reason: str
    atol_per_scale: float = 0.0  # added to atol per unit of the output's largest magnitude

    def at(self, scale: float) -> tuple[float, float]:
        """(rtol, atol) for an output whose largest magnitude is ``scale``."""
        return self.rtol, self.atol + self.atol_per_scale * scale


DEFAULT_FAMILY = "elementwise"

# Op-name globs (OpInfo names, or op-case names) -> family. First match wins; unlisted ops are elementwise.
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("accumulating", (
        "matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm*", "addmv", "addbmm", "baddbmm",
        "addr", "chain_matmul", "einsum", "tensordot", "linalg.*", "nn.functional.linear", "nn.functional.bilinear",
        "nn.functional.conv*", "conv*", "nn.functional.*norm*", "*_norm", "norm", "renorm", "sum", "nansum", "mean",
        "nanmean", "cumsum", "cumprod", "prod", "var*", "std*", "logsumexp", "softmax", "log_softmax", "_softmax*",
        "nn.functional.softmin", "nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention*",
        "trace", "cov", "corrcoef", "dist", "cdist", "pdist", "nn.functional.pdist", "nn.functional.cosine_similarity",
        "nn.functional.pairwise_distance", "nn.functional.*pool*", "*pool*", "nn.functional.interpolate*",
        "nn.functional.upsample*", "nn.functional.grid_sample", "nn.functional.affine_grid", "*loss*",
        "nn.functional.unfold", "nn.functional.fold", "nn.functional.linear_cross_entropy*", "special.*", "polar", "logcumsumexp", "cummax", "cummin",
    )),
    ("transcendental", (
        "pow", "float_power", "exp*", "log*", "sigmoid", "nn.functional.logsigmoid", "tanh", "sinh", "cosh", "asinh",
        "acosh", "atanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "arctan2", "erf*", "lgamma",
        "digamma", "polygamma*", "mvlgamma*", "sinc", "nn.functional.gelu", "nn.functional.silu", "nn.functional.mish",
        "nn.functional.softplus", "nn.functional.elu", "nn.functional.selu", "nn.functional.celu",
        "nn.functional.hardswish", "rsqrt", "sqrt", "reciprocal", "div*", "true_divide", "xlogy", "nn.functional.glu",
    )),
)

_FP32 = "PyTorch's legacy OpInfo consistency tests use rtol 1e-5/atol 2e-5 for float32; rtol 1e-4 because " \
        "ONNX Runtime's CPU kernels and PyTorch's compute in different orders and vector widths"

TABLE: dict[tuple[str, str], Tolerance] = {
    ("float32", "elementwise"): Tolerance(1e-4, 2e-5, _FP32),
    ("float32", "transcendental"): Tolerance(
        2e-4, 2e-5,
        "exp/log/pow/trigonometric kernels: ONNX Runtime's vectorised approximations (MLAS) differ from PyTorch's "
        "(SLEEF) by a few ulp, which pow/exp amplify by the argument's magnitude (OpInfo samples reach |x| = 9)"),
    ("float32", "accumulating"): Tolerance(
        2e-4, 2e-5,
        "sums of many products (matmul, convolution, reductions, normalisation): the summation order differs between "
        "the runtimes, so the error grows with the number of terms and with the largest magnitude summed; an element "
        "that cancels to ~0 keeps the absolute error of its terms, hence the part scaled by the output's magnitude",
        atol_per_scale=2e-5),
    ("float16", "elementwise"): Tolerance(
        1e-3, 1e-3,
        "ONNX Runtime's CPU provider has few float16 kernels and computes most in float32 before rounding back, "
        "PyTorch rounds per step: torch.testing's float16 rtol is 1e-3"),
    ("float16", "transcendental"): Tolerance(
        2e-3, 1e-3, "as float16 elementwise, with the transcendental kernels' extra ulps at float16's 3 decimal digits"),
    ("float16", "accumulating"): Tolerance(
        1e-2, 1e-3,
        "PyTorch accumulates float16 sums in float16 or float32 depending on the kernel, ONNX Runtime in float32: "
        "1e-2 relative (onnxscript's torch_lib uses up to 3e-2 for these families)", atol_per_scale=1e-3),
    ("float64", "elementwise"): Tolerance(1e-7, 1e-7, "float64 keeps 15 digits; torch.testing uses 1e-7"),
    ("float64", "transcendental"): Tolerance(1e-7, 1e-7, "as float64 elementwise"),
    ("float64", "accumulating"): Tolerance(1e-7, 1e-7, "as float64 elementwise", atol_per_scale=1e-12),
}


def family_of(op: str) -> str:
    """The tolerance family of an op name (OpInfo name or op-case name)."""
    for family, patterns in FAMILIES:
        if any(fnmatch.fnmatchcase(op, pattern) for pattern in patterns):
            return family
    return DEFAULT_FAMILY


def tolerance_for(dtype: str, op: str) -> Tolerance:
    """The table entry for ``dtype`` (numpy or torch name, e.g. 'float32') and ``op``; float32's for other types."""
    family = family_of(op)
    return TABLE.get((dtype, family), TABLE[("float32", family)])
