"""The machinery of :func:`exporter.verify`, which localizes a mismatch: the result it reports (``findings``), the
captured graph it compares with (``captured``: each front end's ``graph_reader`` reads its own capture),
ONNX Runtime's run (``runs``), the verifier that pairs and compares their values (``verifier``), the data-dependent
selections it judges a model before (``selections``) and the minimal repro of a diverging value (``repro``)."""
