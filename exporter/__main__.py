"""``python -m exporter``: export a model named as ``module:callable`` from the command line.

    python -m exporter torchvision.models:resnet18 --input-shape 1,3,224,224 -o resnet18.onnx \
        --opset 14 --input-names image --output-names logits --dynamic-axis image:0:batch --dynamic-axis logits:0:batch
    python -m exporter my_pkg.models:build --input-shape 2,16 --list-unconvertible --opset 9

``module:callable`` names an ``nn.Module`` (or ``ScriptModule``) instance, or a class or function that builds one
when called without arguments. Each ``--input-shape`` adds one random example input (``--input-dtype`` sets their
element type). Exit status: 0 on success; 1 when the export fails (or, with ``--list-unconvertible``, when some op
cannot be converted); 2 for bad command-line arguments.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from exporter.opsets import DEFAULT_OPSET, MAX_OPSET, MIN_OPSET
from exporter.options import TrainingMode
from exporter.version import __version__

if TYPE_CHECKING:
    import torch

# torch is imported after the arguments are parsed (``--help`` and a bad option answer at once): these are the
# names of torch's dtypes that --input-dtype takes.
_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")


# resnet18's forward takes ``x``: inputs are named after forward's parameters unless --input-names says otherwise.
EXAMPLE = ("python -m exporter torchvision.models:resnet18 --input-shape 1,3,224,224 -o resnet18.onnx "
           "--dynamic-axis x:0:batch")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m exporter",
        description=f"Export a PyTorch model to ONNX (opsets {MIN_OPSET}-{MAX_OPSET}, default "
                    f"{DEFAULT_OPSET}) with the TorchScript-era exporter semantics of PyTorch.",
        epilog=f"Example: {EXAMPLE}",
    )
    parser.add_argument("model", help="module:callable naming a model instance, or a class/function building one")
    parser.add_argument("-o", "--output", help="the .onnx file to write (required unless --list-unconvertible)")
    parser.add_argument("--input-shape", action="append", type=_shape, required=True, metavar="D0,D1,...",
                        help="shape of one example input, e.g. 1,3,224,224 (repeat for each input; 'scalar' for 0-d)")
    parser.add_argument("--input-dtype", choices=sorted(_DTYPES), default="float32",
                        help="element type of the example inputs (default float32)")
    parser.add_argument("--opset", type=int, choices=range(MIN_OPSET, MAX_OPSET + 1), default=DEFAULT_OPSET, metavar="N",
                        help=f"ONNX opset, {MIN_OPSET}-{MAX_OPSET} (default {DEFAULT_OPSET})")
    parser.add_argument("--input-names", nargs="+", metavar="NAME", help="graph input names, in order")
    parser.add_argument("--output-names", nargs="+", metavar="NAME", help="graph output names, in order")
    parser.add_argument("--dynamic-axis", action="append", type=_dynamic_axis, default=[], metavar="NAME:AXIS[:DIM]",
                        help="make axis AXIS of input/output NAME dynamic, named DIM (repeatable)")
    parser.add_argument("--training", choices=[m.name.lower() for m in TrainingMode], default="eval",
                        help="export mode (default eval)")
    parser.add_argument("--no-constant-folding", action="store_true", help="do not fold constants")
    parser.add_argument("--dynamo", action="store_true",
                        help="capture with torch.export instead of TorchScript (dynamo=True), at any opset")
    parser.add_argument("--list-unconvertible", action="store_true",
                        help="list the ops that cannot be converted at --opset instead of exporting")
    parser.add_argument("--verbose", action="store_true", help="print the exported graph and log the stages")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _shape(text: str) -> tuple[int, ...]:
    if text.strip() == "scalar":
        return ()
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated sizes such as 1,3,224,224, got {text!r}") from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"sizes must be >= 0, got {text!r}")
    return dims


def _dynamic_axis(text: str) -> tuple[str, int, str | None]:
    name, _, rest = text.partition(":")
    axis, _, dim_name = rest.partition(":")
    try:
        return name, int(axis), dim_name or None
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME:AXIS[:DIM] such as input:0:batch, got {text!r}") from None


def load_model(spec: str) -> Any:
    """The model ``module:callable`` names: an instance as it is, else the result of calling it, in eval mode."""
    import torch

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"model must be given as module:callable, got {spec!r}")
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    model = target if isinstance(target, (torch.nn.Module, torch.jit.ScriptFunction)) else target()
    return model.eval() if isinstance(model, torch.nn.Module) else model


def dynamic_axes(entries: Sequence[tuple[str, int, str | None]]) -> dict[str, dict[int, str]]:
    """``--dynamic-axis`` entries as export's ``dynamic_axes``; an unnamed axis gets PyTorch's exporter's generated name."""
    axes: dict[str, dict[int, str]] = {}
    for name, axis, dim_name in entries:
        named = axes.setdefault(name, {})
        named[axis] = dim_name or f"{name}_dynamic_axes_{len(named) + 1}"
    return axes


def _example_inputs(shapes: Sequence[tuple[int, ...]], dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    import torch

    if dtype.is_floating_point:
        return tuple(torch.randn(shape).to(dtype) for shape in shapes)
    if dtype == torch.bool:
        return tuple(torch.rand(shape) > 0.5 for shape in shapes)
    return tuple(torch.randint(0, 10, shape, dtype=dtype) for shape in shapes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    options = parser.parse_args(argv)
    if not options.list_unconvertible and not options.output:
        parser.error("-o/--output is required unless --list-unconvertible is given")
    import torch

    import exporter
    from exporter.errors import ExportArgumentError, OnnxExporterError

    try:
        model = load_model(options.model)
    except (ImportError, AttributeError, ValueError, TypeError) as error:
        parser.error(f"cannot load the model {options.model!r}: {type(error).__name__}: {error}")
    args = _example_inputs(options.input_shape, getattr(torch, options.input_dtype))
    training = TrainingMode[options.training.upper()]
    try:
        if options.list_unconvertible:
            return _list_unconvertible(model, args, training, options.opset)
        with warnings.catch_warnings():
            # export ignores a dynamic_axes key naming nothing, as torch.onnx does; on a command line it is a typo
            warnings.filterwarnings("error", message="Provided key .* for dynamic axes", category=UserWarning)
            result = exporter.export_program(
                model, args, options.output, verbose=options.verbose, training=training,
                input_names=options.input_names, output_names=options.output_names, opset_version=options.opset,
                do_constant_folding=not options.no_constant_folding, dynamic_axes=dynamic_axes(options.dynamic_axis),
                dynamo=options.dynamo,
            )
    except (ExportArgumentError, UserWarning) as error:  # a wrong option (a --dynamic-axis naming no input, say)
        parser.error(str(error))
    except OnnxExporterError as error:
        print(f"export failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(f"wrote {options.output}: {result!r}")
    return 0


def _list_unconvertible(model: Any, args: tuple, training: TrainingMode, opset: int) -> int:
    import exporter

    _, ops = exporter.unconvertible_ops(model, args, training=training, opset_version=opset)
    for op in ops:
        print(op)
    if not ops:
        print(f"every op converts at opset {opset}", file=sys.stderr)
    return 1 if ops else 0


if __name__ == "__main__":
    sys.exit(main())
