"""ONNX Runtime's run that :func:`exporter.verify` compares with the captured graph's (every intermediate value as an
extra graph output), and the arrays both runs' values become (the captured graph's own run is each capture's: see
``exporter.localization.captured``)."""

from __future__ import annotations

from typing import Any, overload

import numpy as np
import onnx
import torch

from exporter.ort_session import make_session


@overload
def to_numpy(tensor: torch.Tensor) -> np.ndarray: ...
@overload
def to_numpy(tensor: list) -> list: ...
def to_numpy(tensor: torch.Tensor | list) -> np.ndarray | list:
    """The tensor's values; a quantized tensor's integers (what the exported QuantizeLinear computes); a list input's
    items."""
    if isinstance(tensor, list):
        return [to_numpy(item) for item in tensor]
    if tensor.is_quantized:
        return tensor.int_repr().numpy()
    return tensor.detach().cpu().resolve_conj().resolve_neg().numpy()


def run_onnx(model: onnx.ModelProto, feeds: dict[str, Any], extra: dict[str, int]) -> dict[str, np.ndarray]:
    """ONNX Runtime's value of every graph output and of each name in ``extra`` (name -> ONNX element type)."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    for name, elem_type in extra.items():
        if name not in present:
            exposed.graph.output.append(onnx.helper.make_tensor_value_info(name, elem_type, None))
    session = make_session(exposed.SerializeToString(), "cpu")
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))
