"""The torch.export front end: ``torch.export.export``'s ExportedProgram decomposed for the opset (``capture``, with
``recurrent`` layers kept whole and ``library_ops`` decomposed), ``dynamic_shapes`` as torch.export callers write
it, the facts its FX nodes answer (``facts``), the FX driver (``driver``), the program's guards on its dynamic dims
(``guards``), the graph ``verify`` reads (``graph_reader``) and the pipeline's view (``front_end``)."""
