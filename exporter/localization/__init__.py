"""The machinery of :func:`exporter.verify`, which localizes a mismatch: the result it reports (``findings``), the two
runs it compares (``runs``), the verifier that pairs and compares their values (``verifier``), the data-dependent
selections it judges a model before (``selections``) and the minimal repro of a diverging value (``repro``)."""
