"""Differential suite: each export call of the table goes through ``exporter.export`` and through
``torch.onnx.export(..., dynamo=False)`` (torch's TorchScript-era exporter, the peer we replace) in the same process.

The outcome must be the same:
- both export: the same graph inputs (count, element types, ranks; names where the call gives ``input_names``) and
  outputs (count, types; names where it gives ``output_names``), and equal numbers on ONNX Runtime for the same
  feeds (the example arguments, flattened as torch.onnx's own tests feed them);
- both reject the call: with an error of the kind the row names (``rejects``), ours a typed ``OnnxExporterError``.

Names are only compared where the caller chose them: without ``input_names`` torch names inputs after TorchScript
debug names (``onnx::Mul_0``, ``x.1``) and outputs after node numbers (``3``), where we use ``forward``'s argument
names and ``output``/``output_<i>``; no caller can depend on torch's, which change with the model's code.

A row with ``differs`` is a deliberate difference; it states why and asserts what each exporter does, so the
difference cannot silently change either.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.onnx  # the peer (tests may call torch.onnx; the engine never does)

import exporter
from exporter.errors import CaptureError, ExportArgumentError, UnsupportedOperatorError
from exporter.registry import MAX_OPSET, MIN_OPSET
from tests.engine.test_api_parity import DropNorm

TM = torch.onnx.TrainingMode
OET = torch.onnx.OperatorExportTypes

# The error kinds a row may expect, with the classes torch.onnx raises for them and the class we raise.
REJECTIONS: dict[str, tuple[tuple[type, ...], type]] = {
    "argument": ((ValueError, TypeError, RuntimeError, KeyError, AttributeError, NotImplementedError),
                 ExportArgumentError),
    "destination": ((OSError, ValueError, TypeError, RuntimeError), ExportArgumentError),
    "unsupported": ((torch.onnx.errors.OnnxExporterError, RuntimeError), UnsupportedOperatorError),
    "capture": ((RuntimeError, TypeError, ValueError, NotImplementedError), CaptureError),
}


@dataclass(frozen=True)
class Call:
    """One export call: the model and example arguments (fresh for each exporter) and export's options."""

    id: str
    model: Callable[[], Any]
    args: Callable[[], Any]
    options: dict = field(default_factory=dict)
    rejects: str | None = None  # both exporters must reject the call with this kind of error (REJECTIONS)
    kept: tuple[int, ...] | None = None  # indices of the flattened example arguments that remain graph inputs
    run: bool = True  # False: ONNX Runtime has no kernel (ATen nodes, bfloat16 Gemm): compared by structure only
    target: str = "buffer"  # where f points: buffer, path, directory, missing_dir, text_file, binary_reader
    other_args: Callable[[], Any] | None = None  # a second feed at other sizes (dynamic axes)
    differs: str | None = None  # why our outcome deliberately differs from torch's
    ours: str | None = None  # with differs: "exports" or the REJECTIONS kind we raise
    theirs: str | None = None  # with differs: "exports" or the REJECTIONS kind torch raises
    rtol: float = 1e-5
    atol: float = 1e-6


# -- models ----------------------------------------------------------------------------------------------------
class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class TwoInputs(torch.nn.Module):
    def forward(self, x, y):
        return x * y + x


class OptionalSecond(torch.nn.Module):
    def forward(self, x, y=None):
        return x if y is None else x - y


class PairInput(torch.nn.Module):
    def forward(self, pair):
        return pair[0] + 2 * pair[1]


class DictInput(torch.nn.Module):
    def forward(self, x, d):
        return x + d["a"]


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return x * n


class ScaleFloat(torch.nn.Module):
    def forward(self, x: torch.Tensor, s: float) -> torch.Tensor:
        return x * s


class Flip(torch.nn.Module):
    def forward(self, x: torch.Tensor, negate: bool) -> torch.Tensor:
        return -x if negate else x


class Activation(torch.nn.Module):
    def forward(self, x, name: str):
        return torch.relu(x) if name == "relu" else torch.tanh(x)


class ViewAs(torch.nn.Module):
    def forward(self, x, sizes):
        return x.view(sizes)


class IgnoresSecond(torch.nn.Module):
    def forward(self, x, unused):
        return x + 1


class AddsLength(torch.nn.Module):
    def forward(self, x, y):
        return x + y.shape[0]


class ViewsAsSecond(torch.nn.Module):
    def forward(self, x, y):
        return x.view_as(y)


class IntFullLike(torch.nn.Module):
    def forward(self, x):
        return torch.full_like(x, 1.3, dtype=torch.int)


class NewZerosOfShapes(torch.nn.Module):
    def forward(self, x, y):
        return x.new_zeros(x.shape[1:] + y.shape[1:])


class ConstantFill(torch.nn.Module):
    def forward(self, x):
        return x.fill_(3)


class RunTimeFill(torch.nn.Module):
    def forward(self, x, value):
        return x.fill_(value)


class PacksAndUnpacks(torch.nn.Module):
    def forward(self, a, b):
        first, _ = [a, b]
        return first + 1


class FiveInputs(torch.nn.Module):
    def forward(self, a, b, c, d, e):
        return a + b * c - d / (e.abs() + 1)


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(10, 3)

    def forward(self, ids):
        return self.table(ids)


class Masked(torch.nn.Module):
    def forward(self, x, mask):
        return torch.where(mask, x, torch.zeros_like(x))


class ConvBnRelu(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(torch.relu(self.bn(self.conv(x)))).flatten(1)


class TwoOutputs(torch.nn.Module):
    def forward(self, x):
        return x + 1, x * 2


class Identity(torch.nn.Module):
    def forward(self, x):
        return x


class InputTwice(torch.nn.Module):
    def forward(self, x):
        return x, x


class SameTwice(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        return y, y


class WithConstant(torch.nn.Module):
    def forward(self, x):
        return x + 1, torch.tensor([1.0, 2.0])


class DictOutput(torch.nn.Module):
    def forward(self, x):
        return {"double": x * 2, "square": x * x}


class NestedOutputs(torch.nn.Module):
    def forward(self, x):
        return (x + 1, (x - 1, [x * 3])), x.sum()


class SizeOutput(torch.nn.Module):
    def forward(self, x):
        return x + 1, x.shape[0]


class ListOutput(torch.nn.Module):
    def forward(self, x):
        return [x + 1, x + 2]


class NumbersOutput(torch.nn.Module):
    def forward(self, x):
        return x + 1, x.size(0), x.dim() > 1


class ConstantIntOutput(torch.nn.Module):
    def forward(self, x):
        return x + 1, 3


class Branchy(torch.nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            return x * 2
        return x - 1


class ScriptedBranch(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


class LoopN(torch.nn.Module):
    def forward(self, x, n: int):
        for _ in range(n):
            x = x * 2 + 1
        return x


class AppendStack(torch.nn.Module):
    def forward(self, x):
        rows = []
        for i in range(x.size(0)):
            rows.append(x[i] * i)
        return torch.stack(rows)


class Doubler(torch.nn.Module):
    def forward(self, x):
        for _ in range(3):
            x = x + x
        return x


class Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.loop = torch.jit.script(Doubler())

    def forward(self, x):
        return self.loop(self.fc(x))


class IntTimesFloat(torch.nn.Module):
    def forward(self, x, y):
        return x * 2.5 + y


class IntDivide(torch.nn.Module):
    def forward(self, x, y):
        return x / y + (x // y)


class ArangeFloat(torch.nn.Module):
    def forward(self, x):
        return torch.arange(0.5, 4.2, 0.7) + x.sum()


class ArangeFloatInput(torch.nn.Module):
    def forward(self, end):
        return torch.arange(end.item() * 0 + 2.3, end, 0.5)


class ArangeToTensor(torch.nn.Module):
    def forward(self, end):
        return torch.arange(end), torch.arange(0, end, 0.5), torch.arange(end, out=torch.empty(0))


class AssignsIntoTensorFromData(torch.nn.Module):
    def forward(self, x):
        table = torch.tensor([1.0, 2.0, 3.0])
        table[1:] = table[1:] * 10
        return x + table


class ChangesItsStateInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.ones(3))
        self.table = torch.tensor([1.0, 2.0, 3.0])

    def forward(self, x):
        self.total += x.sum(0)
        self.table[1:] *= 10
        return x + self.total + self.table


class LinearOfABuffer(torch.nn.Module):
    """Swinv2's relative position bias: nn.Linear on a non-persistent buffer (a constant of the trace)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(1, 5, 5, 2), persistent=False)
        self.mlp = torch.nn.Linear(2, 4)

    def forward(self, x):
        return x + self.mlp(self.table).sum()


class SlidingChunks(torch.nn.Module):
    """Longformer's sliding windows: the heads merged by a reshape that is a view, not contiguous, cut into windows
    overlapping by half with as_strided of that view's strides."""

    def forward(self, x):  # [seq 8, batch 2, 8]
        chunks = (x * 2).view(8, 2, 2, 4).transpose(0, 1).transpose(1, 2).reshape(4, 8, 4).view(4, 2, 4, 4)
        size, stride = list(chunks.size()), list(chunks.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return chunks.as_strided(size=size, stride=stride)


class StridedFromARow(torch.nn.Module):
    """as_strided with an explicit storage offset (0) of a view that starts at row 1 of its storage."""

    def forward(self, x):
        return (x + 1)[1:].as_strided((2, 3), (1, 2), 0)


class ScalarTensorOfSize(torch.nn.Module):
    def forward(self, x):
        return torch.scalar_tensor(x.size(0)), torch.scalar_tensor(x.size(1), dtype=torch.int64)


class ScaledByLength(torch.nn.Module):
    def forward(self, x):
        return x * int(x.shape[1])  # a Python number: the trace keeps the example's


class Prelu0d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.PReLU()

    def forward(self, x):
        return self.act(x)


class ScalarTensor(torch.nn.Module):
    def forward(self, x):
        return x + torch.scalar_tensor(3.0)


class Raises(torch.nn.Module):
    def forward(self, x):
        raise ValueError("bad input")


class Fft(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x).real


class GridSample(torch.nn.Module):
    def forward(self, x, grid):
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Affine()
        self.head = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.inner(x))


def scripted(cls) -> Callable[[], Any]:
    return lambda: torch.jit.script(cls())


def _function(x, y):
    return x + y


_scripted_function = torch.jit.script(_function)


# -- example arguments -------------------------------------------------------------------------------------------
def rand(*shape, dtype=torch.float32):
    return lambda: torch.randn(*shape).to(dtype)


def x4():
    return (torch.randn(2, 4),)


def x23():
    return (torch.randn(2, 3),)


def image():
    return (torch.randn(2, 3, 8, 8),)


def image_batch5():
    return (torch.randn(5, 3, 8, 8),)


def pair23():
    return torch.randn(2, 3), torch.randn(2, 3)


# -- the table ------------------------------------------------------------------------------------------------
CALLS: list[Call] = [
    # signature variants and argument forms
    Call("args_bare_tensor", Affine, lambda: torch.randn(2, 4)),
    Call("args_tuple_of_one", Affine, x4),
    Call("args_list_is_one_argument", Affine, lambda: [torch.randn(2, 4)], rejects="capture"),
    Call("args_two_tensors", TwoInputs, pair23),
    Call("args_trailing_dict_is_keywords", TwoInputs, lambda: (torch.randn(2, 3), {"y": torch.randn(2, 3)})),
    Call("args_kwargs_option", TwoInputs, lambda: (torch.randn(2, 3),), {"kwargs": {"y": torch.randn(2, 3)}}),
    Call("args_default_left_out", OptionalSecond, lambda: (torch.randn(3),)),
    Call("args_none_argument", OptionalSecond, lambda: (torch.randn(3), None)),
    Call("args_nested_tuple", PairInput, lambda: ((torch.randn(3), torch.randn(3)),)),
    Call("args_list_argument", PairInput, lambda: ([torch.randn(3), torch.randn(3)],)),
    Call("args_dict_positional_with_empty_trailing", DictInput, lambda: (torch.randn(3), {"a": torch.randn(3)}, {})),
    Call("args_python_int", Scale, lambda: (torch.randn(3), 3)),
    Call("args_python_float", ScaleFloat, lambda: (torch.randn(3), 2.5)),
    Call("args_python_bool_folded_by_trace", Flip, lambda: (torch.randn(3), True), kept=(0,)),
    Call("args_string_is_hard_coded", Activation, lambda: (torch.randn(3), "relu")),
    Call("args_int_list", ViewAs, lambda: (torch.randn(6), [2, 3])),
    Call("args_unused_tensor_dropped", IgnoresSecond, lambda: (torch.randn(3), torch.randn(2)), kept=(0,)),
    Call("args_shape_only_dropped", AddsLength, lambda: (torch.randn(3), torch.randn(2)), kept=(0,)),
    Call("args_shape_only_dynamic_kept", AddsLength, lambda: (torch.randn(3), torch.randn(2)),
         {"input_names": ["x", "y"], "dynamic_axes": {"y": [0]}},
         other_args=lambda: (torch.randn(3), torch.randn(6))),
    # torch.onnx keeps an input read at run time by view_as/expand_as/full_like/copy_ (its Shape is not folded) and
    # drops one read only through folded shape queries (x.shape, new_zeros, zeros_like, fill_ with a constant).
    Call("args_shape_of_view_as_kept", ViewsAsSecond, lambda: (torch.randn(2, 3, 4), torch.randn(6, 4))),
    Call("args_full_like_kept", IntFullLike, lambda: (torch.tensor(12.0),)),
    Call("args_shape_queries_and_new_zeros_dropped", NewZerosOfShapes,
         lambda: (torch.randn(2, 3, 4), torch.randn(1, 2)), kept=()),
    Call("script_packed_then_unread_dropped", scripted(PacksAndUnpacks), lambda: (torch.randn(3), torch.randn(3)),
         kept=(0,)),
    Call("args_constant_fill_dropped", ConstantFill, lambda: (torch.randn(2, 3),), kept=()),
    Call("args_run_time_fill_kept", RunTimeFill, lambda: (torch.randn(2, 3), torch.tensor(7.0))),
    Call("args_five_inputs", FiveInputs, lambda: tuple(torch.randn(2, 2) for _ in range(5))),
    Call("args_int64_tensor", Embed, lambda: (torch.tensor([[1, 2], [3, 9]]),)),
    Call("args_bool_tensor", Masked, lambda: (torch.randn(4), torch.tensor([True, False, True, False]))),
    # opsets and options
    *[Call(f"opset_{opset}", ConvBnRelu, image, {"opset_version": opset}) for opset in range(MIN_OPSET, 24)],
    *[Call(f"opset_{opset}", lambda: ConvBnRelu().eval(), image, {"opset_version": opset},  # eval: PyTorch's own
           differs="torch's TorchScript exporter stops at opset 23 ('Unsupported onnx_opset_version'); ours goes on "
                   "to 26, the newest ONNX Runtime 1.31 runs", ours="exports", theirs="argument")
      for opset in range(24, MAX_OPSET + 1)],
    Call("opset_6", Affine, x4, {"opset_version": 6},
         differs=f"this exporter targets opsets {MIN_OPSET}-{MAX_OPSET}; torch's legacy exporter still writes opset 6",
         ours="argument", theirs="exports"),
    Call(f"opset_{MAX_OPSET + 1}", Affine, x4, {"opset_version": MAX_OPSET + 1}, rejects="argument"),
    Call("opset_default", ConvBnRelu, image),
    Call("export_params_false", Affine, x4, {"export_params": False}),
    Call("keep_initializers_as_inputs_true", Affine, x4, {"keep_initializers_as_inputs": True}),
    Call("keep_initializers_as_inputs_false", ConvBnRelu, image, {"keep_initializers_as_inputs": False}),
    Call("constant_folding_off", ConvBnRelu, image, {"do_constant_folding": False}),
    Call("verbose", Affine, x4, {"verbose": True}),
    Call("custom_opsets_unused_domain", Affine, x4, {"custom_opsets": {"my_domain": 2}}),
    Call("custom_opsets_default_domain", Affine, x4, {"custom_opsets": {"": 3}},
         differs="custom_opsets versions custom domains; torch.onnx warns and ignores the default domain, we refuse it "
                 "(a second default-domain import made a model ONNX Runtime refuses)", ours="argument", theirs="exports"),
    Call("output_named_like_input", Affine, x4, {"input_names": ["z"], "output_names": ["z"]},
         differs="torch.onnx writes the output under another name than the one asked for; we refuse the call",
         ours="argument", theirs="exports"),
    Call("modules_as_functions_opset15", Outer, x4, {"export_modules_as_functions": True, "opset_version": 15}),
    Call("modules_as_functions_opset14", Outer, x4, {"export_modules_as_functions": True, "opset_version": 14},
         rejects="argument"),
    # torch's enums, as callers pass them
    Call("training_eval", DropNorm, x4, {"training": TM.EVAL}),
    Call("training_preserve_eval_model", lambda: DropNorm().eval(), x4, {"training": TM.PRESERVE}),
    Call("training_training_batchnorm", lambda: torch.nn.BatchNorm1d(4), x4, {"training": TM.TRAINING}),
    Call("training_preserve_training_batchnorm", lambda: torch.nn.BatchNorm1d(4).train(), x4,
         {"training": TM.PRESERVE}),
    Call("training_training_dropout_structure", DropNorm, x4, {"training": TM.TRAINING}, run=False),
    Call("training_true_bool", Affine, x4, {"training": True}, rejects="argument"),
    Call("training_string", Affine, x4, {"training": "EVAL"}, rejects="argument"),
    Call("export_type_onnx", Affine, x4, {"operator_export_type": OET.ONNX}),
    Call("export_type_fallthrough", Affine, x4, {"operator_export_type": OET.ONNX_FALLTHROUGH}),
    Call("export_type_aten_fallback", Affine, x4, {"operator_export_type": OET.ONNX_ATEN_FALLBACK}),
    Call("export_type_aten", Affine, x4, {"operator_export_type": OET.ONNX_ATEN}, run=False),
    Call("training_and_export_type_together", ConvBnRelu, image,
         {"training": TM.EVAL, "operator_export_type": OET.ONNX, "opset_version": 11}),
    # names
    Call("input_names_exact", TwoInputs, pair23, {"input_names": ["a", "b"]}),
    Call("input_names_shorter", TwoInputs, pair23, {"input_names": ["a"]}),
    Call("input_names_cover_parameters", Affine, x4, {"input_names": ["x", "w", "b"]}),
    Call("input_names_cover_unused_buffer", ConvBnRelu, image,
         {"input_names": ["img"] + [f"p{i}" for i in range(7)], "do_constant_folding": False}),
    Call("input_names_too_many", TwoInputs, pair23, {"input_names": ["a", "b", "c"]}, rejects="argument"),
    Call("input_names_named_unused_input", IgnoresSecond, pair23, {"input_names": ["a", "b"]}, kept=(0,)),
    Call("output_names_exact", TwoOutputs, x23, {"output_names": ["plus", "times"]}),
    Call("output_names_shorter", TwoOutputs, x23, {"output_names": ["plus"]}),
    Call("output_names_too_many", TwoOutputs, x23, {"output_names": ["a", "b", "c"]}, rejects="argument"),
    Call("names_with_keep_initializers", Affine, x4,
         {"input_names": ["x", "w"], "output_names": ["y"], "keep_initializers_as_inputs": True}),
    # dynamic axes
    Call("dynamic_axes_dict", ConvBnRelu, image,
         {"input_names": ["img"], "output_names": ["out"], "dynamic_axes": {"img": {0: "n"}, "out": {0: "n"}}},
         other_args=image_batch5),
    Call("dynamic_axes_list", ConvBnRelu, image,
         {"input_names": ["img"], "output_names": ["out"], "dynamic_axes": {"img": [0, 2, 3], "out": [0]}},
         other_args=lambda: (torch.randn(3, 3, 11, 6),)),
    Call("dynamic_axes_unknown_key", Affine, x4,
         {"input_names": ["x"], "dynamic_axes": {"x": {0: "n"}, "nothing": {0: "m"}}},
         other_args=lambda: (torch.randn(5, 4),)),
    Call("dynamic_axes_parameter_key", Affine, x4, {"dynamic_axes": {"fc.weight": [0]}}),
    Call("dynamic_axes_default_input_name", TwoInputs, pair23, {"dynamic_axes": {"x": [0], "y": [0]}},
         other_args=lambda: (torch.randn(5, 3), torch.randn(5, 3)),
         differs="without input_names our inputs are named after forward's arguments, so {'x': ...} names an "
                 "input; torch's are TorchScript debug names (onnx::Mul_0), so it warns and exports static",
         ours="exports", theirs="exports"),
    Call("dynamic_shapes_with_the_trace", TwoInputs, pair23,
         {"dynamic_shapes": {"x": {0: torch.export.Dim("n")}, "y": {0: "n"}}},
         other_args=lambda: (torch.randn(5, 3), torch.randn(5, 3)),
         differs="torch.onnx takes dynamic_shapes only with dynamo=True (ValueError); we translate it to the trace's "
                 "dynamic axes, a Dim's or str's name naming the axis",
         ours="exports", theirs="argument"),
    Call("dynamic_axes_output_only", TwoOutputs, x23,
         {"output_names": ["plus", "times"], "dynamic_axes": {"plus": {0: "n"}}}),
    Call("dynamic_axes_non_int_axis", Affine, x4, {"input_names": ["x"], "dynamic_axes": {"x": ["zero"]}},
         rejects="argument"),
    Call("dynamic_axes_scripted", scripted(TwoOutputs), x23,
         {"input_names": ["x"], "output_names": ["a", "b"], "dynamic_axes": {"x": [0, 1], "a": [0, 1]}},
         other_args=lambda: (torch.randn(5, 7),)),
    # scripted, traced and mixed models
    Call("script_module", scripted(TwoInputs), pair23),
    Call("script_function", lambda: _scripted_function, pair23),
    Call("script_if_on_values", scripted(ScriptedBranch), x23),
    Call("script_loop_int_argument", scripted(LoopN), lambda: (torch.randn(3), 4), {"input_names": ["x", "n"]}),
    Call("script_int_argument", scripted(Scale), lambda: (torch.randn(3), 3), {"input_names": ["x", "n"]}),
    Call("script_float_argument", scripted(ScaleFloat), lambda: (torch.randn(3), 0.5)),
    Call("script_bool_argument", scripted(Flip), lambda: (torch.randn(3), True), {"input_names": ["x", "negate"]}),
    Call("script_unused_argument", scripted(IgnoresSecond), pair23, kept=(0,)),
    Call("script_list_output_opset14", scripted(ListOutput), x23),
    Call("script_list_output_opset9", scripted(ListOutput), x23, {"opset_version": 9}, rejects="unsupported"),
    Call("script_number_outputs", scripted(NumbersOutput), x23),
    Call("script_append_stack_opset11", scripted(AppendStack), lambda: (torch.randn(4, 3),), {"opset_version": 11}),
    Call("script_append_stack_opset14", scripted(AppendStack), lambda: (torch.randn(4, 3),)),
    Call("mixed_traced_with_scripted_loop", Mixed, x4,
         differs="torch.onnx cannot trace a module holding a scripted submodule ('not part of the active trace'); "
                 "we export it with the submodule's loop kept (checked against PyTorch)",
         ours="exports", theirs="capture"),
    Call("jit_traced_module", lambda: torch.jit.trace(Affine(), x4()), x4),
    Call("traced_data_dependent_branch", Branchy, lambda: (torch.ones(3),)),
    Call("nested_modules", Outer, x4),
    # outputs
    Call("output_is_input", Identity, x23),
    Call("output_is_input_twice", InputTwice, x23),
    Call("output_repeated", SameTwice, x23),
    Call("output_constant", WithConstant, x23),
    Call("output_dict", DictOutput, x23),
    Call("output_nested", NestedOutputs, x23),
    Call("output_traced_size", SizeOutput, x23),
    Call("output_traced_python_int", ConstantIntOutput, x23, rejects="argument"),
    Call("output_script_repeated", scripted(SameTwice), x23),
    Call("output_script_constant", scripted(WithConstant), x23),
    # numbers that used to be wrong
    Call("arange_float_bounds", ArangeFloat, lambda: (torch.randn(2),)),
    Call("arange_float_bounds_scripted", scripted(ArangeFloat), lambda: (torch.randn(2),)),
    Call("arange_to_float_tensor", ArangeToTensor, lambda: (torch.tensor(6.2),),
         other_args=lambda: (torch.tensor(3.7),)),
    Call("arange_to_float_tensor_scripted", scripted(ArangeToTensor), lambda: (torch.tensor(6.2),),
         other_args=lambda: (torch.tensor(3.7),)),
    Call("arange_to_int_tensor_out_float", ArangeToTensor, lambda: (torch.tensor(5),),
         other_args=lambda: (torch.tensor(8),),
         differs="arange(int, out=float tensor) is float32 in PyTorch; torch.onnx writes int64 (a defect), we "
                 "follow PyTorch (checked against it)", ours="exports", theirs="exports"),
    Call("assign_into_tensor_from_python_data", AssignsIntoTensorFromData, x23,
         differs="the trace records torch.tensor(...) as a constant by reference, so the traced run's in-place "
                 "change is in it; torch.onnx then applies the change again (wrong numbers), we record the tensor "
                 "as made (checked against PyTorch)", ours="exports", theirs="exports"),
    Call("model_changing_its_state_in_place", ChangesItsStateInPlace, x23,
         differs="the traced run changes the buffer and the tensor attribute in place; torch.onnx exports the "
                 "changed values and applies the change again (wrong numbers) and leaves the model changed, we write "
                 "them back: one call from the model's state (checked against PyTorch)", ours="exports",
         theirs="exports"),
    *[Call(f"linear_of_a_non_persistent_buffer_opset{opset}", LinearOfABuffer, lambda: (torch.randn(3),),
           {"opset_version": opset}) for opset in (9, 14, 20)],
    Call("as_strided_of_a_non_contiguous_view", SlidingChunks, lambda: (torch.randn(8, 2, 8),),
         differs="as_strided reads storage; Longformer's chunks read a view whose storage is not its element order: "
                 "torch.onnx gathers from the view as if it were (wrong numbers), we map each storage position to "
                 "the view's element by its recorded strides (checked against PyTorch)", ours="exports",
         theirs="exports"),
    Call("as_strided_with_an_offset_of_a_view", StridedFromARow, lambda: (torch.randn(4, 6),),
         differs="an explicit storage offset counts from the start of the storage, before this view's first row: "
                 "torch.onnx counts it from the view (wrong numbers), we refuse (the view's own offset is not "
                 "recorded)", ours="unsupported", theirs="exports"),
    Call("scalar_tensor_of_dynamic_sizes", ScalarTensorOfSize, x23,
         {"input_names": ["x"], "dynamic_axes": {"x": [0, 1]}}, other_args=lambda: (torch.randn(5, 7),)),
    Call("scalar_tensor_of_dynamic_sizes_scripted", scripted(ScalarTensorOfSize), x23,
         {"input_names": ["x"], "dynamic_axes": {"x": [0, 1]}}, other_args=lambda: (torch.randn(5, 7),)),
    Call("dynamic_axis_a_trace_froze", ScaledByLength, x23, {"input_names": ["x"], "dynamic_axes": {"x": [0, 1]}},
         differs="the trace froze a declared dynamic size (x * int(x.shape[1])): torch.onnx writes a model that "
                 "multiplies by the example's 3 at every size, with a TracerWarning; we refuse the call "
                 "(DynamicAxesError naming the input, axis and op; check_dynamic_axes=False writes it)",
         ours="argument", theirs="exports"),
    Call("scripted_int_times_float", scripted(IntTimesFloat), lambda: (torch.tensor([1, 2, 3]), torch.randn(3))),
    Call("scripted_int_true_divide", scripted(IntDivide), lambda: (torch.tensor([7, 8, 9]), torch.tensor([2, 3, 4]))),
    Call("traced_int_true_divide", IntDivide, lambda: (torch.tensor([7, 8, 9]), torch.tensor([2, 3, 4]))),
    Call("prelu_0d", Prelu0d, lambda: (torch.tensor(-2.0),)),
    Call("prelu_0d_scripted", scripted(Prelu0d), lambda: (torch.tensor(-2.0),)),
    Call("scalar_tensor", ScalarTensor, x23),
    Call("scalar_tensor_scripted", scripted(ScalarTensor), x23),
    # dtypes
    Call("dtype_float64", lambda: Affine().double(), lambda: (torch.randn(2, 4, dtype=torch.float64),)),
    Call("dtype_float16_elementwise", TwoInputs, lambda: (torch.randn(3).half(), torch.randn(3).half()),
         rtol=1e-3, atol=1e-3),
    Call("dtype_bfloat16_linear", lambda: Affine().to(torch.bfloat16), lambda: (torch.randn(2, 4).bfloat16(),),
         run=False),
    Call("dtype_int64_arithmetic", TwoInputs, lambda: (torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6]))),
    Call("dtype_int32_arithmetic", TwoInputs, lambda: (torch.tensor([1, 2], dtype=torch.int32),
                                                        torch.tensor([3, 4], dtype=torch.int32))),
    Call("dtype_uint8_mask_input", Masked, lambda: (torch.randn(2), torch.tensor([True, False]))),
    Call("dtype_mixed_int_float", TwoInputs, lambda: (torch.tensor([1, 2]), torch.randn(2))),
    # bad input
    Call("f_is_a_directory", Affine, x4, target="directory", rejects="destination"),
    Call("f_in_a_missing_directory", Affine, x4, target="missing_dir", rejects="destination"),
    Call("f_is_a_text_file_object", Affine, x4, target="text_file", rejects="destination"),
    Call("f_is_a_file_opened_for_reading", Affine, x4, target="binary_reader", rejects="destination"),
    Call("model_is_a_plain_function", lambda: _function, pair23, rejects="argument"),
    Call("model_raises", Raises, x23, rejects="capture"),
    Call("wrong_argument_count", TwoInputs, x23, rejects="argument"),
    Call("dynamo_true", Affine, x4, {"dynamo": True}),
    Call("unsupported_op", Fft, x23, rejects="unsupported"),
    Call("op_below_its_opset", GridSample, lambda: (torch.randn(1, 1, 4, 4), torch.rand(1, 2, 2, 2) * 2 - 1),
         {"opset_version": 15}, rejects="unsupported"),
    Call("meta_device_model", lambda: Affine().to("meta"), lambda: (torch.randn(2, 4, device="meta"),),
         rejects="argument"),
]


# -- running one call ---------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    proto: onnx.ModelProto | None = None
    error: BaseException | None = None

    def describe(self) -> str:
        return "exports" if self.error is None else f"raises {type(self.error).__name__}: {str(self.error)[:300]}"


def _destination(call: Call, tmp_path, tag: str):
    if call.target == "buffer":
        return io.BytesIO()
    if call.target == "path":
        return str(tmp_path / f"{tag}.onnx")
    if call.target == "directory":
        return str(tmp_path)
    if call.target == "missing_dir":
        return str(tmp_path / "missing" / f"{tag}.onnx")
    if call.target == "text_file":
        return open(tmp_path / f"{tag}.txt", "w")  # noqa: SIM115 (closed by the caller)
    if call.target == "binary_reader":
        (tmp_path / f"{tag}.bin").write_bytes(b"")
        return open(tmp_path / f"{tag}.bin", "rb")  # noqa: SIM115 (closed by the caller)
    raise AssertionError(call.target)


def _torch_export(model, args, f, **options):
    options.setdefault("dynamo", False)
    return torch.onnx.export(model, args, f, **options)


def _our_export(model, args, f, **options):
    options.setdefault("dynamo", False)  # the TorchScript-era contract both sides are called with
    return exporter.export(model, args, f, **options)


def _export(export_fn, call: Call, tmp_path, tag: str) -> Outcome:
    torch.manual_seed(0)
    model, args = call.model(), call.args()
    f = _destination(call, tmp_path, tag)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            export_fn(model, args, f, **call.options)
    except Exception as error:  # the outcome under test
        return Outcome(error=error)
    finally:
        if hasattr(f, "close") and not isinstance(f, io.BytesIO):
            f.close()
    data = f.getvalue() if isinstance(f, io.BytesIO) else open(f, "rb").read()
    return Outcome(proto=onnx.load_from_string(data))


# -- comparing outcomes ---------------------------------------------------------------------------------------------
def _user_inputs(proto: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    initializers = {i.name for i in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in initializers]


def _signature(values) -> list[tuple]:
    """(element type or sequence, rank) of each graph input/output."""
    result = []
    for value in values:
        kind = value.type.WhichOneof("value")
        if kind == "tensor_type":
            tensor = value.type.tensor_type
            result.append(("tensor", tensor.elem_type, len(tensor.shape.dim) if tensor.HasField("shape") else None))
        else:
            result.append((kind,))
    return result


def _assert_same_interface(call: Call, ours: onnx.ModelProto, theirs: onnx.ModelProto) -> None:
    assert _signature(_user_inputs(ours)) == _signature(_user_inputs(theirs)), "graph inputs differ"
    assert _signature(ours.graph.output) == _signature(theirs.graph.output), "graph outputs differ"
    named_inputs, named_outputs = len(call.options.get("input_names", [])), len(call.options.get("output_names", []))
    assert [i.name for i in ours.graph.input][:named_inputs] == [i.name for i in theirs.graph.input][:named_inputs]
    assert [o.name for o in ours.graph.output][:named_outputs] == [o.name for o in theirs.graph.output][:named_outputs]
    if call.options.get("keep_initializers_as_inputs") or call.options.get("export_params") is False:
        assert len(ours.graph.input) == len(theirs.graph.input)
    assert sorted(i.data_type for i in ours.graph.initializer if i.dims and np.prod(i.dims) > 8) == sorted(
        i.data_type for i in theirs.graph.initializer if i.dims and np.prod(i.dims) > 8
    ), "parameter element types differ"


def _flat_arguments(call: Call, args: Any) -> list[torch.Tensor]:
    """The example arguments (and ``kwargs=``) flattened as torch.onnx's own tests feed them: numbers as 0-d
    tensors, None and strings left out; then the model's state for a model whose parameters are inputs."""
    args = args if isinstance(args, tuple) else (args,)
    if call.options.get("kwargs"):
        args = (*args, call.options["kwargs"])
    flat, _ = torch.jit._flatten(args)
    flat = [flat[i] for i in call.kept] if call.kept is not None else list(flat)
    if call.options.get("export_params") is False:
        torch.manual_seed(0)  # the weights _export's model was built with
        flat += list(call.model().state_dict().values())
    return flat


def _run(proto: onnx.ModelProto, values: list[torch.Tensor]) -> list:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(values), f"{len(names)} graph inputs for {len(values)} example arguments"
    return session.run(None, {name: v.detach().numpy() for name, v in zip(names, values, strict=True)})


def _assert_close(actual: list, expected: list, call: Call) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        a_items, e_items = (a, e) if isinstance(a, list) else ([a], [e])
        assert len(a_items) == len(e_items)
        for a_item, e_item in zip(a_items, e_items, strict=True):
            e_item = np.asarray(e_item)
            assert a_item.shape == e_item.shape and a_item.dtype == e_item.dtype, (a_item, e_item)
            np.testing.assert_allclose(a_item, e_item, rtol=call.rtol, atol=call.atol)


def _samples(call: Call) -> list[Callable[[], Any]]:
    return [call.args] + ([call.other_args] if call.other_args else [])


def _assert_same_numbers(call: Call, ours: onnx.ModelProto, theirs: onnx.ModelProto) -> None:
    for make_args in _samples(call):
        torch.manual_seed(1)
        values = _flat_arguments(call, make_args())
        _assert_close(_run(ours, values), _run(theirs, values), call)


def _assert_matches_pytorch(call: Call, ours: onnx.ModelProto) -> None:
    """For a row where torch.onnx cannot export: our model against PyTorch itself."""
    torch.manual_seed(0)
    model = call.model()
    for make_args in _samples(call):
        torch.manual_seed(1)
        args = make_args()
        with torch.no_grad():
            expected = model(*(args if isinstance(args, tuple) else (args,)))
        expected = [t.numpy() for t in torch.jit._flatten(expected)[0]]
        _assert_close(_run(ours, _flat_arguments(call, args)), expected, call)


def _same_models(call: Call, ours: onnx.ModelProto, theirs: onnx.ModelProto) -> bool:
    try:
        _assert_same_interface(call, ours, theirs)
        _assert_same_numbers(call, ours, theirs)
    except Exception:  # a different interface, different numbers, or one model failing where the other runs
        return False
    return True


def _assert_rejected_as(kind: str, ours: Outcome, theirs: Outcome | None) -> None:
    torch_errors, our_error = REJECTIONS[kind]
    assert isinstance(ours.error, our_error), f"ours {ours.describe()}, expected {our_error.__name__}"
    if theirs is not None:
        assert isinstance(theirs.error, torch_errors), f"torch {theirs.describe()}, expected a {kind} error"


def _assert_outcome(expected: str | None, outcome: Outcome, who: str) -> None:
    if expected == "exports":
        assert outcome.error is None, f"{who} {outcome.describe()}"
    elif expected is not None:
        kinds = REJECTIONS[expected][0 if who == "torch" else 1]
        assert isinstance(outcome.error, kinds), f"{who} {outcome.describe()}, expected a {expected} error"
    else:
        assert outcome.error is not None, f"{who} {outcome.describe()}, expected it to refuse"


@pytest.mark.parametrize("call", CALLS, ids=[c.id for c in CALLS])
def test_same_outcome_as_torch_onnx(call: Call, tmp_path):
    ours = _export(_our_export, call, tmp_path, "ours")
    if call.differs:
        assert call.differs and call.ours
        _assert_outcome(call.ours, ours, "ours")
        if call.ours == "exports" and call.run:
            _assert_matches_pytorch(call, ours.proto)
        if call.theirs is not None:  # None: torch's outcome is not ours to pin (dynamo=True is another exporter)
            theirs = _export(_torch_export, call, tmp_path, "theirs")
            _assert_outcome(call.theirs, theirs, "torch")
            if call.ours == call.theirs == "exports":
                assert not _same_models(call, ours.proto, theirs.proto), "the stated difference is gone"
        return
    theirs = _export(_torch_export, call, tmp_path, "theirs")
    if call.rejects:
        _assert_rejected_as(call.rejects, ours, theirs)
        return
    assert ours.error is None and theirs.error is None, f"ours {ours.describe()}; torch {theirs.describe()}"
    _assert_same_interface(call, ours.proto, theirs.proto)
    if call.run:
        _assert_same_numbers(call, ours.proto, theirs.proto)


def test_the_table_is_large_and_its_ids_unique():
    assert len(CALLS) >= 100
    assert len({c.id for c in CALLS}) == len(CALLS)
