"""The program object an export returns: the ONNX model with what callers of ``torch.onnx.ONNXProgram`` use
(``model_proto``, ``model``, ``save``, calling it on ONNX Runtime, ``call_reference``, ``exported_program``,
``optimize``, ``release``) and the facts the harness records (capture, names, provenance, stage times, workarounds).

Written by us: nothing of torch.onnx's exporter runs here. The model is held as the export assembled it (a ModelProto,
built on first use when its weights were streamed into the file) until a caller touches :attr:`ONNXProgram.model`, an
``onnx_ir.Model``: from then on that model is the source of truth (callers edit it in place, as transformers' exporter
does), and ``model_proto``, ``save`` and calls serialize it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch

from exporter import binding, destination, tensor_bytes
from exporter.arguments import shortened
from exporter.dtypes import real_view
from exporter.errors import ExportArgumentError
from exporter.frontends.base import SCALARS, Capture, Captured, number_tensor
from exporter.provenance import Provenance

# What torch.onnx's ONNXProgram reports as its capture strategy after a non-strict torch.export capture
# (``torch.onnx.testing.assert_onnx_program`` checks it).
NON_STRICT = "TorchExportNonStrictStrategy"

# Initializer bytes from which save() and sessions use an external data file (torch.onnx's 1.5 GiB: a ModelProto
# must serialize under 2 GiB, graph included).
LARGE_MODEL_BYTES = 1536 << 20

# ONNX element types numpy has no dtype for: fed and read through ONNX Runtime as raw bits of this torch dtype.
_RAW_BITS = {torch.bfloat16: torch.uint16, torch.float8_e4m3fn: torch.uint8, torch.float8_e4m3fnuz: torch.uint8,
             torch.float8_e5m2: torch.uint8, torch.float8_e5m2fnuz: torch.uint8}


class ONNXProgram:
    """An exported ONNX model, callable with torch tensors (the members callers of ``torch.onnx.ONNXProgram`` use).

    ``exported_program`` is the ``torch.export.ExportedProgram`` the model was converted from (None for a TorchScript
    capture); ``_capture_strategy`` is ``"TorchExportNonStrictStrategy"`` when this export captured the model with
    non-strict ``torch.export`` (as torch.onnx reports it; None for an ExportedProgram handed in or a TorchScript
    capture). Beyond torch.onnx: ``capture`` (the :class:`~exporter.frontends.base.Captured` converted), ``input_names`` and
    ``output_names`` (the graph's, parameters last when they are inputs), ``provenance``, ``workarounds`` (the ONNX
    Runtime workarounds the model depends on), ``stage_seconds`` (wall time per export stage).
    """

    def __init__(
        self,
        model: onnx.ModelProto | Callable[[], onnx.ModelProto] | str,
        *,
        capture: Captured | None = None,
        input_names: Sequence[str] = (),
        output_names: Sequence[str] = (),
        feed_names: Sequence[str] | None = None,
        signature: Any = None,
        provenance: Provenance | None = None,
        workarounds: Sequence[str] = (),
        stage_seconds: dict[str, float] | None = None,
        exported_program: Any = None,
        capture_strategy: str | None = None,
        staging: tempfile.TemporaryDirectory | None = None,
    ) -> None:
        # The model as assembled: a ModelProto, a builder of one (weights streamed into the file), or the path of a
        # model saved with external data (past 2 GiB, in ``staging``, a folder this program owns).
        self._source: onnx.ModelProto | Callable[[], onnx.ModelProto] | str = model
        self._ir_model: Any = None
        self.capture = capture
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        # The graph input each flat argument the capture took feeds (in the capture's order, before unused inputs
        # were dropped), and the signature of the model's forward, which binds a call's arguments: see __call__.
        self._feed_names = list(feed_names if feed_names is not None else self.input_names)
        self._signature = signature
        self.provenance = provenance
        self.workarounds = list(workarounds)
        self.stage_seconds = stage_seconds if stage_seconds is not None else {}  # the export's own, "result" included
        self.exported_program = exported_program
        self._capture_strategy = capture_strategy
        self._staging = staging
        # What ``verify=True`` found: an ``exporter.artifacts.OutputCheck`` per output (None when not asked).
        self.verification: list[Any] | None = None
        self._session: Any = None
        self._float8_outputs: dict[int, torch.dtype] = {}
        self._session_dir: tempfile.TemporaryDirectory | None = None

    # The model ---------------------------------------------------------------------------------------------------

    @property
    def model(self) -> Any:
        """The model as an ``onnx_ir.Model``; from the first access on it is the source of truth of this program."""
        if self._ir_model is None:
            import onnx_ir as ir

            if isinstance(self._source, str):
                self._ir_model = ir.load(self._source)  # external tensors stay in their file until read
            else:
                self._ir_model = ir.serde.deserialize_model(self._assembled_proto())
            _intern_axis_names(self._ir_model.graph)
        return self._ir_model

    @model.setter
    def model(self, value: Any) -> None:
        self._ir_model = value
        self.release()

    @property
    def model_proto(self) -> onnx.ModelProto:
        """The model as an ``onnx.ModelProto`` (serialized from :attr:`model` once that was touched)."""
        if self._ir_model is not None:
            import onnx_ir as ir

            return ir.serde.serialize_model(self._ir_model)
        return self._assembled_proto()

    def _assembled_proto(self) -> onnx.ModelProto:
        if isinstance(self._source, str):
            return onnx.load(self._source)
        if callable(self._source):
            self._source = self._source()
        return self._source

    def _initializer_bytes(self) -> int:
        if self._ir_model is not None:
            return sum(v.const_value.nbytes for v in self._ir_model.graph.initializers.values()
                       if v.const_value is not None)
        if isinstance(self._source, str):
            return sum(path.stat().st_size for path in Path(self._source).parent.iterdir())  # model and data file
        if isinstance(self._source, tensor_bytes.StreamedModel):
            return sum(array.nbytes for _, array in self._source.apart.tensors)
        return self._assembled_proto().ByteSize()

    # Saving --------------------------------------------------------------------------------------------------------

    def save(self, destination_path: str | os.PathLike | Any, *, include_initializers: bool = True,
             keep_initializers_as_inputs: bool = False, external_data: bool | None = None) -> None:
        """Save the model to ``destination_path`` (a path; a binary file object when the weights stay inline), as
        torch.onnx's ``ONNXProgram.save``: the weights in the file or, with ``external_data=True`` or past 1.5 GiB, in
        ``<file name>.data`` beside it; ``include_initializers=False`` leaves them out (attached later),
        ``keep_initializers_as_inputs=True`` also lists them as graph inputs (overridable at run time). Written
        atomically: a temporary file (and data file) beside the target renamed into place, never a half file."""
        destination.check_destination(destination_path)
        large = external_data or self._initializer_bytes() > LARGE_MODEL_BYTES
        if large:
            destination.require_path_for_external_data(destination_path)
        plain = include_initializers and not keep_initializers_as_inputs and not large
        if plain and self._ir_model is None and not isinstance(self._source, str):
            source = self._source
            if isinstance(source, tensor_bytes.StreamedModel):  # the weights streamed from their arrays once more
                destination.write(source.skeleton, destination_path, source.apart)
            else:
                destination.write(self._assembled_proto(), destination_path)
            return
        model = self.model if self._ir_model is not None else self._detached_ir_model()
        with _initializers_as_asked(model, include_initializers, keep_initializers_as_inputs):
            if large:
                destination.write_with_external_data(model, destination_path)
            else:
                import onnx_ir as ir

                destination.write(ir.serde.serialize_model(model), destination_path)

    def _detached_ir_model(self) -> Any:
        """An ``onnx_ir.Model`` of the model that does not become this program's source of truth."""
        import onnx_ir as ir

        if isinstance(self._source, str):
            return ir.load(self._source)
        return ir.serde.deserialize_model(self._assembled_proto())

    # Running -------------------------------------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        """Run the model on ONNX Runtime (CPU) with the arguments the model takes (as the export's ``args`` and
        ``kwargs``, or the flat tensors torch.onnx's callers pass), and return its outputs as torch tensors. The
        session is made on the first call and kept until :meth:`release`."""
        import onnxruntime as ort

        feeds = self._feeds(args, kwargs)
        if self._session is None:
            self._session = self._new_session()
        run_options = ort.RunOptions()
        run_options.log_severity_level = 3
        values = {name: _ort_value(tensor) for name, tensor in feeds.items()}
        outputs = [_torch_value(output) for output in
                   self._session.run_with_ort_values(None, values, run_options=run_options)]
        return [output.to(self._float8_outputs[k]) if k in self._float8_outputs else output
                for k, output in enumerate(outputs)]

    def call_reference(self, *args: Any, **kwargs: Any) -> list[torch.Tensor]:
        """Run the model with ONNX's reference evaluator (``onnx.reference``), the arbiter where ONNX Runtime and
        PyTorch disagree, and return its outputs as torch tensors."""
        import onnx.reference

        evaluator = onnx.reference.ReferenceEvaluator(self.model_proto)
        feeds = {name: _numpy_value(tensor) for name, tensor in self._feeds(args, kwargs).items()}
        return [_tensor_of_array(array) for array in evaluator.run(None, feeds)]

    def release(self) -> None:
        """Drop the ONNX Runtime session (and any model file it was made from) and free their memory."""
        self._session = None
        gc.collect()
        if self._session_dir is not None:
            self._session_dir.cleanup()
            self._session_dir = None

    def initialize_inference_session(self, initializer: Callable[[str | bytes], Any] | None = None) -> None:
        """Make the ONNX Runtime session calls run on now, as torch.onnx's method: ``initializer`` takes the model
        (serialized bytes, or a file path past 1.5 GiB) and returns an ``onnxruntime.InferenceSession`` (by default a
        CPU session). Calls use it until :meth:`release`."""
        self.release()
        self._session = (initializer or _cpu_session)(self._session_model())

    def _new_session(self) -> Any:
        return _cpu_session(self._session_model())

    def _session_model(self) -> str | bytes:
        """The model as a session takes it: serialized, or a file path when its weights are too large for that."""
        if self._ir_model is None and isinstance(self._source, str):
            model: str | bytes = self._source
        elif self._initializer_bytes() > LARGE_MODEL_BYTES:
            self._session_dir = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
            model = os.path.join(self._session_dir.name, "model.onnx")
            self.save(model, external_data=True)
        else:
            model = self._widened_float8_outputs(self.model_proto).SerializeToString()
        return model

    def _widened_float8_outputs(self, proto: onnx.ModelProto) -> onnx.ModelProto:
        """``proto`` with each 8-bit float output cast to float32 (exactly: every such value is a float32), which
        ONNX Runtime's Python API can hand over (it has no numpy type for them, nor a DLPack one); ``__call__`` casts
        the float32 tensors back (``_float8_outputs``: output index -> torch dtype)."""
        self._float8_outputs = {k: _FLOAT8[o.type.tensor_type.elem_type] for k, o in enumerate(proto.graph.output)
                                if o.type.tensor_type.elem_type in _FLOAT8}
        if not self._float8_outputs:
            return proto
        widened = onnx.ModelProto()
        widened.CopyFrom(proto)
        for k in self._float8_outputs:
            output = widened.graph.output[k]
            name = f"{output.name}__float32"
            widened.graph.node.append(onnx.helper.make_node("Cast", [output.name], [name], to=onnx.TensorProto.FLOAT))
            output.name, output.type.tensor_type.elem_type = name, onnx.TensorProto.FLOAT
        return widened

    def _feeds(self, args: tuple, kwargs: dict) -> dict[str, torch.Tensor]:
        """The graph's inputs by name for a call: the arguments bound as the export bound them (by ``forward``'s
        signature, then flattened as the capture flattened them), or, where they do not bind so, the flat tensors in
        order (what ``torch.onnx.verification`` passes). A parameter that is a graph input without an initializer
        (``export_params=False``) is fed the model's own tensor."""
        flat = self._flat_arguments(args, kwargs)
        if len(flat) != len(self._feed_names):
            raise ExportArgumentError(
                f"the program takes {len(self._feed_names)} tensor inputs ({shortened(self._feed_names)}), "
                f"the call gives {len(flat)}")
        graph_inputs = self._graph_input_names()
        names = self._feed_names
        renamed = [name for name in graph_inputs if name not in self.input_names]
        if renamed and len(renamed) == len(flat):  # a caller renamed the inputs through .model: fed by position
            names = renamed
        # a complex argument is fed as its real view, as the model holds it (exporter/frontends/export/complex_numbers.py)
        feeds = {name: real_view(value) for name, value in zip(names, flat, strict=True) if name in graph_inputs}
        if self.capture is not None:
            params = dict(zip(self.input_names[len(self._feed_names):], (t for _, t in self.capture.params),
                              strict=False))
            feeds.update((name, params[name]) for name in graph_inputs if name not in feeds and name in params
                         and not self._has_initializer(name))
        return feeds

    def _flat_arguments(self, args: tuple, kwargs: dict) -> list:
        export_capture = self.capture is None or self.capture.capture is Capture.EXPORT
        call = (*args, dict(kwargs)) if kwargs else tuple(args)
        if self.capture is not None:
            flat = binding.graph_input_values(binding.ordered_by_signature(self._signature, call), self.capture)
            if len(flat) == len(self._feed_names):
                return flat
        from torch.utils import _pytree as pytree

        leaves = pytree.tree_leaves((args, kwargs))
        if export_capture:  # a torch.export program specialized the numbers: its inputs are the tensors
            return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        return [number_tensor(leaf) if isinstance(leaf, SCALARS) else leaf for leaf in leaves if leaf is not None]

    def _graph_input_names(self) -> list[str]:
        if self._ir_model is not None:
            return [str(value.name) for value in self._ir_model.graph.inputs]
        return [value.name for value in self._skeleton().graph.input]

    def _has_initializer(self, name: str) -> bool:
        if self._ir_model is not None:
            return name in self._ir_model.graph.initializers
        skeleton = self._skeleton()
        apart = self._source.apart.names() if isinstance(self._source, tensor_bytes.StreamedModel) else []
        return name in apart or any(t.name == name for t in skeleton.graph.initializer)

    def _skeleton(self) -> onnx.ModelProto:
        """The ModelProto without the weights streamed apart (all that names and shapes need)."""
        if isinstance(self._source, tensor_bytes.StreamedModel):
            return self._source.skeleton
        if isinstance(self._source, str):
            return onnx.load(self._source, load_external_data=False)
        return self._assembled_proto()

    # Optimizing ------------------------------------------------------------------------------------------------------

    def optimize(self) -> None:
        """Optimize :attr:`model` in place with onnx_ir's graph passes: common subexpression elimination, removal of
        nodes no output needs, de-duplication of equal initializers, then a topological sort; the result is checked
        with ``onnx.checker``. The export's own pipeline (``optimize=True``) has already folded constants and removed
        identities; this pass is for a model a caller edited through :attr:`model` (as torch.onnx's ``optimize()``
        cleans up after edits)."""
        import onnx_ir.passes.common as common
        from onnx_ir.passes import Sequential

        model = self.model
        Sequential(common.CommonSubexpressionEliminationPass(), common.RemoveUnusedNodesPass(),
                   common.DeduplicateInitializersPass(), common.TopologicalSortPass())(model)
        self.release()
        if self._initializer_bytes() <= LARGE_MODEL_BYTES:
            onnx.checker.check_model(self.model_proto)

    # Describing ------------------------------------------------------------------------------------------------------

    def __repr__(self) -> str:
        skeleton = self._skeleton() if self._ir_model is None else None
        if skeleton is not None:
            opset = next((o.version for o in skeleton.opset_import if o.domain in ("", "ai.onnx")), None)
            nodes = len(skeleton.graph.node)
            apart = self._source.apart.names() if isinstance(self._source, tensor_bytes.StreamedModel) else []
            initializers = len(skeleton.graph.initializer) + len(apart)
            inputs, outputs = self._feed_names, self.output_names
        else:
            opset = self._ir_model.opset_imports.get("")
            nodes = len(self._ir_model.graph)
            initializers = len(self._ir_model.graph.initializers)
            inputs = [str(v.name) for v in self._ir_model.graph.inputs if v.name not in self._ir_model.graph.initializers]
            outputs = [str(v.name) for v in self._ir_model.graph.outputs]
        capture = None if self.capture is None else self.capture.capture
        return (f"ONNXProgram(opset={opset}, capture={capture}, inputs={shortened(inputs)}, "
                f"outputs={shortened(outputs)}, nodes={nodes}, initializers={initializers}, "
                f"exported_program={'yes' if self.exported_program is not None else 'None'})")


@contextlib.contextmanager
def _initializers_as_asked(model: Any, include: bool, as_inputs: bool):
    """``model`` with its initializers left out and/or listed as graph inputs for a save, restored after."""
    initializers = dict(model.graph.initializers)
    inputs = list(model.graph.inputs)
    if as_inputs:
        listed = {id(v) for v in inputs}
        model.graph.inputs.extend(v for v in initializers.values() if id(v) not in listed)
    if not include:
        model.graph.initializers.clear()
    try:
        yield
    finally:
        if not include:
            model.graph.initializers.update(initializers)
        if as_inputs:
            model.graph.inputs.clear()
            model.graph.inputs.extend(inputs)


def _intern_axis_names(graph: Any) -> None:
    """Give the graph's inputs and outputs interned axis names: the name a caller wrote in ``dynamic_axes`` or a
    ``Dim`` (a literal, interned by Python) is then the very string the model holds, as with torch.onnx, whose model
    keeps the caller's objects (PyTorch's suite checks ``shape[0].value is "batch"``)."""
    import onnx_ir as ir

    for value in (*graph.inputs, *graph.outputs):
        if value.shape is not None and any(isinstance(dim, ir.SymbolicDim) for dim in value.shape):
            value.shape = ir.Shape([sys.intern(dim.value) if isinstance(dim, ir.SymbolicDim) and dim.value else dim
                                    for dim in value.shape])


def _cpu_session(model: str | bytes) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _ort_value(value: Any) -> Any:
    """An ONNX Runtime value for a tensor (or a list of tensors: an ONNX sequence input, as numpy arrays)."""
    import onnxruntime as ort

    if isinstance(value, list):
        return [np.asarray(_numpy_value(item)) for item in value]
    tensor = value.detach().cpu().contiguous()
    if tensor.dtype in _RAW_BITS:
        from exporter.dtypes import onnx_from_torch

        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
            tensor.view(_RAW_BITS[tensor.dtype]).numpy(), onnx_element_type=onnx_from_torch(tensor.dtype))
    return ort.OrtValue.ortvalue_from_numpy(tensor.numpy())


def _torch_value(value: Any) -> Any:
    """A torch tensor of an ONNX Runtime output (a list of them for a sequence)."""
    if isinstance(value, list):
        return [_torch_value(item) for item in value]
    if not hasattr(value, "element_type"):
        return torch.from_numpy(np.asarray(value))
    if value.element_type() in _RAW_ONNX_TYPES:
        return torch.from_dlpack(value._get_c_value())
    return torch.from_numpy(value.numpy())


_FLOAT8 = {onnx.TensorProto.FLOAT8E4M3FN: torch.float8_e4m3fn, onnx.TensorProto.FLOAT8E4M3FNUZ: torch.float8_e4m3fnuz,
           onnx.TensorProto.FLOAT8E5M2: torch.float8_e5m2, onnx.TensorProto.FLOAT8E5M2FNUZ: torch.float8_e5m2fnuz}
_RAW_ONNX_TYPES = frozenset({onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ,
                             onnx.TensorProto.FLOAT8E5M2, onnx.TensorProto.FLOAT8E5M2FNUZ})


def _numpy_value(value: Any) -> Any:
    """A numpy value for the reference evaluator (ml_dtypes arrays for the types numpy lacks)."""
    if isinstance(value, list):
        return [_numpy_value(item) for item in value]
    tensor = value.detach().cpu().contiguous()
    if tensor.dtype in _RAW_BITS:
        import ml_dtypes

        kind = {torch.bfloat16: ml_dtypes.bfloat16, torch.float8_e4m3fn: ml_dtypes.float8_e4m3fn,
                torch.float8_e4m3fnuz: ml_dtypes.float8_e4m3fnuz, torch.float8_e5m2: ml_dtypes.float8_e5m2,
                torch.float8_e5m2fnuz: ml_dtypes.float8_e5m2fnuz}[tensor.dtype]
        return tensor.view(_RAW_BITS[tensor.dtype]).numpy().view(kind)
    return tensor.numpy()


def _tensor_of_array(array: Any) -> Any:
    """A torch tensor of a reference evaluator output (ml_dtypes arrays viewed back as torch's own types)."""
    if isinstance(array, list):
        return [_tensor_of_array(item) for item in array]
    array = np.asarray(array)
    import ml_dtypes

    for torch_type, bits in _RAW_BITS.items():
        if array.dtype == getattr(ml_dtypes, str(torch_type).removeprefix("torch.")):
            return torch.from_numpy(array.view(np.uint16 if bits == torch.uint16 else np.uint8)).view(torch_type)
    return torch.from_numpy(array)
