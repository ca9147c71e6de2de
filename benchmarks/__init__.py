"""Benchmarks: export speed and exported-graph quality against the torch.onnx peer (dynamo=False)."""
