"""The lowering layer: opset-aware building blocks the symbolics are written with.

Each building block emits the exact ONNX form its target opset allows and owns that opset fork, so a symbolic in
``exporter/symbolics/`` states what it computes and never tests the opset itself. Modules are by topic (``core``:
values, casts, promotion, Squeeze/Unsqueeze/Slice/Reduce across their signature changes; ``shape``, ``comparison``,
``arithmetic``, ``reductions``, ``indexing``, ``sequence``, ...); ``runtime`` holds the named, switchable
workarounds for gaps of one runtime. Lowering modules import each other, never a symbolics family.
"""
