"""The front ends: one package per capture, each holding its capture, the facts its graph's nodes answer the op
library with (``NodeFacts``), its driver (the graph walk calling the symbolics), its captured-graph reader for
``verify`` and its provenance origin, behind the one :class:`~exporter.frontends.base.FrontEnd` the pipeline asks.

- ``torchscript``: ``torch.jit.trace`` and scripted models (``Capture.TRACE``, ``Capture.SCRIPT``), with the op
  families only TorchScript graphs hold (``prim``, ``control_flow``, ``loop``).
- ``export``: ``torch.export.export``'s ExportedProgram (``Capture.EXPORT``).

Importing this package registers both (a third, a program handed in say, is one more package and line here).
"""

from exporter.frontends import base
from exporter.frontends.export.front_end import EXPORT
from exporter.frontends.torchscript.front_end import TORCHSCRIPT

base.register(TORCHSCRIPT)
base.register(EXPORT)
