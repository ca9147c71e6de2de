"""The TorchScript front end: a traced model, or a scripted one's own graph (scripted functions called inside a traced
model stay scripted), made flat for conversion (``capture``, ``scripted``, ``flat_graph`` and the graph passes
``mutation``, ``script_passes``, ``module_state``); the facts its nodes answer (``facts``); the driver
(``driver``); the check that a trace honours its dynamic axes (``traced_sizes``); the graph ``verify`` reads
(``graph_reader``); TorchScript's own op families (``symbolics``); the pipeline's view (``front_end``)."""
