"""The shapes of a model's intermediate values, written into its ``graph.value_info`` (an optimized export's last
step: the nodes are unchanged).

ONNX Runtime's graph optimizer fuses patterns only where it knows the ranks of their values: an Add feeding a
LayerNormalization becomes SkipLayerNormalization only for 3-D inputs. ONNX Runtime infers shapes when it loads a
model, but without data propagation, so a Reshape whose target is computed (Shape -> Gather -> Concat, every
dynamic-shape export) leaves it nothing past that point, and a transformer block loses its fused norms (measured on
the zoo's BERT with dynamic batch and sequence: 8 SkipLayerNormalization with the annotation, none without). ONNX's
shape inference with data propagation finds them; what it finds is written down for the runtime to read. ONNX
Runtime checks every annotation against its own inference when it loads the model, and ``onnx.checker`` checks
them at export.
"""

from __future__ import annotations

import onnx


def annotate(model: onnx.ModelProto, skeleton: onnx.ModelProto) -> None:
    """Append to ``model``'s main graph the value_info that shape inference with data propagation finds on
    ``skeleton`` (``model`` itself, or a copy of it whose weights are declared as inputs). Nothing is added where
    inference fails: the annotation is an aid to the runtime's optimizer, never needed to run the model."""
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton, strict_mode=False, data_prop=True)
    except Exception:
        return
    known = {v.name for v in model.graph.value_info}
    model.graph.value_info.extend(info for info in inferred.graph.value_info
                                  if info.name not in known and _is_shaped_tensor(info))


def _is_shaped_tensor(info: onnx.ValueInfoProto) -> bool:
    tensor = info.type.tensor_type if info.type.HasField("tensor_type") else None
    return tensor is not None and tensor.elem_type != 0 and tensor.HasField("shape")
