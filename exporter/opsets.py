"""The opset range: in a module of its own, free of torch, so that the command lines (``python -m exporter``) check
``--opset`` before they import torch. ``exporter.registry`` and ``exporter.arguments`` give them to the engine."""

MIN_OPSET = 7
# The newest opset ONNX Runtime 1.31 (the lock's) implements: it refuses a model importing 27 or above.
MAX_OPSET = 26
DEFAULT_OPSET = 20  # the default of PyTorch's TorchScript exporter in torch 2.13
