"""Linear algebra: the matmul family, the add-and-multiply forms (addmm, baddbmm, ...), outer, einsum,
cross products and determinants.

ONNX MatMul follows numpy's matmul rules, which are PyTorch's, for every rank combination. It takes
integer types from opset 9; addmm is a Gemm where ``lowering.linalg.gemm_takes`` the type, else MatMul, Mul and
Add. Einsum arrives in opset 12; below it equations without repeated indices are lowered to Transpose, MatMul,
Mul and ReduceSum.
"""

from __future__ import annotations

import string

import torch

from exporter import dtypes
from exporter.dtypes import BOOL, INT64
from exporter.lowering.arithmetic import minimum_value
from exporter.lowering.comparison import equal, less_equal, select
from exporter.lowering.core import (
    cast,
    constant_value,
    dim_size,
    is_constant,
    is_value,
    normalize_dim,
    promote_all,
    reduce_op,
    require_opset,
    require_rank,
    scalar_like,
    squeeze,
    torch_dtype_arg,
    unsqueeze,
)
from exporter.lowering.linalg import INTEGER_MATMUL_OPSET, gemm_takes, matmul_takes
from exporter.lowering.shape import arange_indices, reshape_to
from exporter.registry import REGISTRY, parse_args, symbolic, unsupported


def matmul(g, a, b):
    """``a @ b`` with PyTorch's rank rules (1-D operands promoted and squeezed away, batch broadcast)."""
    if not dtypes.is_float(g.dtype(a)):
        require_opset(g, INTEGER_MATMUL_OPSET, "integer MatMul")
    return g.op("MatMul", a, b)


@symbolic("aten::matmul", "aten::mm", "aten::bmm", "aten::mv", "aten::dot", "aten::vdot")
def matmul_(g, self, other):
    return matmul(g, self, other)


@symbolic("aten::_grouped_mm")
def grouped_mm(g, self, mat2, offs=None, bias=None, out_dtype=None):
    """_grouped_mm(self, mat2, offs, bias, out_dtype), the mixture-of-experts product: the rows of ``self`` [T, K]
    in groups that end at the cumulative counts ``offs`` [G], group j's rows times ``mat2[j]`` [K, N]. Every row
    is multiplied by every group's matrix ([G, T, N]: memory of groups x rows x N, not the rows x K x N of a
    per-row gather of the matrices) and Gather picks its own group's result; a row past the last end, which
    PyTorch leaves unwritten, takes the last group's. Without ``offs``, the batched product of two 3-D operands.
    A bias is refused, as PyTorch's own kernel refuses it."""
    if not _absent(bias):
        raise unsupported(g.op_kind, g.opset, "_grouped_mm with a bias (PyTorch's kernel does not take one yet)")
    if _absent(offs):
        return _in_type(g, matmul(g, self, mat2), out_dtype)
    if g.rank(self) != 2 or g.rank(mat2) != 3:
        raise unsupported(g.op_kind, g.opset, "_grouped_mm groups only the rows of a 2-D operand by the matrices "
                                              "of a 3-D one (the mixture-of-experts form)")
    row = arange_indices(g, dim_size(g, self, 0))
    groups = g.value(dim_size(g, mat2, 0))
    ended = less_equal(g, unsqueeze(g, cast(g, offs, INT64), [0]), unsqueeze(g, row, [1]))  # [T, G]: offs[j] <= r
    group = minimum_value(g, reduce_op(g, "ReduceSum", cast(g, ended, INT64), [1], False),
                          g.op("Sub", groups, g.const(1, torch.int64)))
    products = g.op("Transpose", matmul(g, self, mat2), perm_i=[1, 0, 2])  # [T, G, N]
    by_row_and_group = reshape_to(g, products, [-1, dim_size(g, mat2, 2)])
    picked = g.op("Gather", by_row_and_group, g.op("Add", g.op("Mul", row, groups), group), axis_i=0)
    return _in_type(g, picked, out_dtype)


def _absent(x) -> bool:
    return x is None or (not is_value(x) and constant_value(x) is None)


def _in_type(g, product, out_dtype):
    dtype = None if _absent(out_dtype) else torch_dtype_arg(out_dtype)
    return product if dtype is None else cast(g, product, dtypes.onnx_from_torch(dtype))


@symbolic("aten::outer", "aten::ger")
def outer(g, self, vec2):
    _, (a, b) = promote_all(g, self, vec2)
    return g.op("Mul", unsqueeze(g, a, [1]), b)


# -- product plus scaled input: beta * self + alpha * product ----------------------------------------------------
@symbolic("aten::addmm")
@parse_args("v", "v", "v", "v", "v")
def addmm(g, self, mat1, mat2, beta, alpha):
    beta, alpha = constant_value(beta), constant_value(alpha)
    if beta != 0 and gemm_takes(g, g.dtype(mat1)):
        # Gemm is exactly beta * C + alpha * A @ B, with C broadcast to the product's shape.
        return g.op("Gemm", mat1, mat2, self, alpha_f=float(alpha), beta_f=float(beta))
    return _scaled_sum(g, self, matmul(g, mat1, mat2), beta, alpha)


@symbolic("aten::addmv", "aten::baddbmm")
@parse_args("v", "v", "v", "v", "v")
def addmv(g, self, mat, vec, beta, alpha):
    return _scaled_sum(g, self, matmul(g, mat, vec), _scalar(beta), _scalar(alpha))


@symbolic("aten::addbmm")
@parse_args("v", "v", "v", "v", "v")
def addbmm(g, self, batch1, batch2, beta, alpha):
    product = reduce_op(g, "ReduceSum", matmul(g, batch1, batch2), [0], False)
    return _scaled_sum(g, self, product, _scalar(beta), _scalar(alpha))


@symbolic("aten::addr")
@parse_args("v", "v", "v", "v", "v")
def addr(g, self, vec1, vec2, beta, alpha):
    return _scaled_sum(g, self, outer(g, vec1, vec2), _scalar(beta), _scalar(alpha))


def _scalar(x):
    """A Scalar argument: its Python value when known at export time, else the (0-d) value computed at run time."""
    return constant_value(x) if is_constant(x) else x


def _scaled_sum(g, self, product, beta, alpha):
    """beta * self + alpha * product; with beta == 0 ``self`` is ignored (its NaNs too), as in PyTorch. ``alpha`` and
    ``beta`` may be computed at run time (0-d values, converted to the operand's type as torch does); a run-time beta
    keeps that rule with a select on beta == 0 (Where, opset 9, for floating operands)."""
    if is_value(alpha):
        product = g.op("Mul", product, cast(g, alpha, g.dtype(product)))
    elif alpha != 1:
        product = g.op("Mul", product, scalar_like(g, alpha, product))
    if is_value(beta):
        scaled = g.op("Mul", self, cast(g, beta, g.dtype(self)))
        if dtypes.is_float(g.dtype(self)):  # 0 * NaN is NaN: where beta is 0, take 0 instead
            ignored = equal(g, cast(g, beta, g.dtype(self)), scalar_like(g, 0, self))
            scaled = select(g, ignored, scalar_like(g, 0, self), scaled)
        return g.op("Add", scaled, product)
    if beta == 0:
        return product
    if beta != 1:
        self = g.op("Mul", self, scalar_like(g, beta, self))
    return g.op("Add", self, product)


# -- cross product and determinant -----------------------------------------------------------------------------
@symbolic("aten::linalg_cross", "aten::cross")
def cross(g, self, other, dim=None):
    """a x b along ``dim`` from two cyclic shifts of each operand: a[1,2,0] * b[2,0,1] - a[2,0,1] * b[1,2,0]."""
    _, (a, b) = promote_all(g, self, other)
    rank = max(require_rank(g, a), require_rank(g, b))
    dim = constant_value(dim)
    if dim is None:
        # aten::cross without dim picks the first axis of size 3.
        shape = g.shape(a)
        dim = next((i for i, s in enumerate(shape or ()) if s == 3), None)
        if dim is None:
            raise unsupported(g.op_kind, g.opset, "cross without dim needs an axis of static size 3")
    axis = normalize_dim(int(dim), rank)

    def shifted(x, order):
        return g.op("Gather", x, g.const(order), axis_i=axis - (rank - g.rank(x)))

    first = g.op("Mul", shifted(a, [1, 2, 0]), shifted(b, [2, 0, 1]))
    second = g.op("Mul", shifted(a, [2, 0, 1]), shifted(b, [1, 2, 0]))
    return g.op("Sub", first, second)


@symbolic("aten::linalg_det", "aten::det", since=11)
def det(g, self):
    return g.op("Det", self)


# -- einsum -------------------------------------------------------------------------------------------------------
def _on_bools_as_integers(form):
    """An einsum form applied to bool operands through int64 (ONNX's Einsum, Mul and ReduceSum take no bools), the
    result back to bool: what torch computes for the bool einsums it runs (diagonals, transposes, products without a
    sum; its bool bmm is not implemented)."""

    def einsum_form(g, equation, tensors, path=None):
        tensors = list(tensors)
        if not any(g.dtype(t) == BOOL for t in tensors):
            return form(g, equation, tensors, path)
        return cast(g, form(g, equation, [cast(g, t, INT64) for t in tensors], path), BOOL)

    einsum_form.__doc__, einsum_form.__name__ = form.__doc__, form.__name__
    return einsum_form


@symbolic("aten::einsum")
@_on_bools_as_integers
def lowered_einsum(g, equation, tensors, path=None):
    """Einsum before ONNX had it: Transpose/MatMul/Mul/ReduceSum, contracting operands left to right."""
    operands = list(tensors)
    inputs, output = _parse_equation(g, _without_spaces(equation), operands)
    for letters in inputs:
        if len(set(letters)) != len(letters):
            raise unsupported(g.op_kind, g.opset, "einsum with a repeated index (a diagonal) needs opset >= 12")
    acc, acc_letters = operands[0], inputs[0]
    for index in range(1, len(operands)):
        needed = set(output).union(*inputs[index + 1 :])
        acc, acc_letters = _contract(g, acc, acc_letters, operands[index], inputs[index], needed)
    acc, acc_letters = _sum_out(g, acc, acc_letters, set(output))
    return _permute(g, acc, acc_letters, output)


@symbolic("aten::einsum", since=12)
@_on_bools_as_integers
def einsum(g, equation, tensors, path=None):
    """ONNX Einsum. Every '...' must span as many dims there, while PyTorch broadcasts them: an operand whose '...'
    spans fewer gets size-1 dims where it starts. An explicit output without '...' sums the ellipsis dims out, which
    ONNX Runtime refuses: the ellipsis is then spelled out as letters."""
    equation = _without_spaces(equation)
    terms = equation.partition("->")[0].split(",")
    operands = list(tensors)
    spans = [require_rank(g, x) - len(t.replace("...", "")) if "..." in t else None
             for t, x in zip(terms, operands, strict=True)]
    widest = max((span for span in spans if span is not None), default=0)
    for index, (term, span) in enumerate(zip(terms, spans, strict=True)):
        if span is not None and span < widest:
            start = term.index("...")  # the letters before it are the operand's leading dims
            operands[index] = unsqueeze(g, operands[index], list(range(start, start + widest - span)))
    lhs, arrow, rhs = equation.partition("->")
    if arrow and "..." in lhs and "..." not in rhs:
        inputs, output = _parse_equation(g, equation, operands)
        equation = ",".join(inputs) + "->" + output
    return g.op("Einsum", *operands, equation_s=equation)


def _without_spaces(equation) -> str:
    return str(equation).replace(" ", "")


def _parse_equation(g, equation, operands):
    """Operand and output index strings with '...' spelled out as fresh letters, and implicit output made explicit."""
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise unsupported(g.op_kind, g.opset, "einsum operand count does not match its equation")
    used = set(equation)
    spare = [c for c in string.ascii_letters if c not in used]
    ellipsis_rank = max((require_rank(g, x) - len(t.replace("...", ""))
                         for t, x in zip(terms, operands, strict=True) if "..." in t), default=0)
    ellipsis = "".join(spare[:ellipsis_rank])
    inputs = []
    for term, operand in zip(terms, operands, strict=True):
        if "..." in term:
            own = require_rank(g, operand) - len(term.replace("...", ""))
            term = term.replace("...", ellipsis[ellipsis_rank - own :])
        inputs.append(term)
    if arrow:
        output = rhs.replace("...", ellipsis)
    else:
        counts = {c: "".join(inputs).count(c) for c in "".join(inputs)}
        output = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
    return inputs, output


def _sum_out(g, x, letters, keep):
    """ReduceSum the indices of ``x`` that are not in ``keep``."""
    axes = [i for i, c in enumerate(letters) if c not in keep]
    if not axes:
        return x, letters
    return reduce_op(g, "ReduceSum", x, axes, False), "".join(c for c in letters if c in keep)


def _permute(g, x, letters, order):
    if letters == order:
        return x
    return g.op("Transpose", x, perm_i=[letters.index(c) for c in order])


def _contract(g, a, a_letters, b, b_letters, needed):
    """The product of ``a`` and ``b`` summed over shared indices that are not ``needed`` later."""
    a, a_letters = _sum_out(g, a, a_letters, needed | set(b_letters))
    b, b_letters = _sum_out(g, b, b_letters, needed | set(a_letters))
    batch = "".join(c for c in a_letters if c in b_letters and c in needed)
    summed = "".join(c for c in a_letters if c in b_letters and c not in needed)
    left = "".join(c for c in a_letters if c not in b_letters)
    right = "".join(c for c in b_letters if c not in a_letters)
    matrix_form = len(summed) == 1 and len(left) <= 1 and len(right) <= 1
    if matrix_form and matmul_takes(g, g.dtype(a)):
        return _contract_matmul(g, a, a_letters, b, b_letters, batch, summed, left, right)
    return _contract_broadcast(g, a, a_letters, b, b_letters, batch + left + right, summed)


def _contract_matmul(g, a, a_letters, b, b_letters, batch, summed, left, right):
    """[batch, left, summed] @ [batch, summed, right], with an absent left/right index as a size-1 axis."""
    a = _permute(g, a, a_letters, batch + left + summed)
    b = _permute(g, b, b_letters, batch + summed + right)
    if not left:
        a = unsqueeze(g, a, [len(batch)])
    if not right:
        b = unsqueeze(g, b, [len(batch) + 1])
    product = g.op("MatMul", a, b)
    dropped = ([len(batch)] if not left else []) + ([len(batch) + 1] if not right else [])
    if dropped:
        product = squeeze(g, product, dropped)
    return product, batch + left + right


def _contract_broadcast(g, a, a_letters, b, b_letters, kept, summed):
    """Align both operands on every index (size-1 where absent), multiply, and sum the shared ones away."""
    order = kept + summed
    aligned = [_align(g, x, letters, order) for x, letters in ((a, a_letters), (b, b_letters))]
    product = g.op("Mul", *aligned)
    return _sum_out(g, product, order, set(kept))


def _align(g, x, letters, order):
    present = "".join(c for c in order if c in letters)
    x = _permute(g, x, letters, present)
    missing = [i for i, c in enumerate(order) if c not in letters]
    return unsqueeze(g, x, missing) if missing else x


# -- tensordot, logdet ----------------------------------------------------------------------------------------------
@symbolic("aten::tensordot")
@parse_args("v", "v", "is", "is")
def tensordot(g, self, other, dims_self, dims_other):
    """tensordot(a, b, dims_a, dims_b): the sum over the paired dims of a and b, as the einsum that says so
    (ONNX Einsum from opset 12, lowered to Transpose/MatMul/ReduceSum below)."""
    rank_a, rank_b = require_rank(g, self), require_rank(g, other)
    letters = iter(string.ascii_letters)
    a = [next(letters) for _ in range(rank_a)]
    b = [next(letters) for _ in range(rank_b)]
    for dim_a, dim_b in zip(dims_self, dims_other, strict=True):
        b[normalize_dim(dim_b, rank_b)] = a[normalize_dim(dim_a, rank_a)]
    summed = set(a) & set(b)
    output = [c for c in a if c not in summed] + [c for c in b if c not in summed]
    equation = f"{''.join(a)},{''.join(b)}->{''.join(output)}"
    return REGISTRY.lookup("aten::einsum", g.opset)(g, equation, [self, other])


@symbolic("aten::logdet", since=11)
def logdet(g, self):
    """logdet(x) = log(det(x)): NaN for a negative determinant and -inf for zero, as in PyTorch."""
    return g.op("Log", g.op("Det", self))
