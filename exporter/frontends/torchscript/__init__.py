"""Capture: a model and its example arguments as a graph the converter reads, through one of three front ends.

- ``torchscript``: an ``nn.Module`` is traced, a ``ScriptModule``/``ScriptFunction`` gives its scripted graph, and
  scripted functions called inside a traced module stay scripted (TRACE, SCRIPT). Its graph passes (mutation,
  scripted control flow, module state) live beside it in this package.
- ``export``: ``torch.export.export`` makes an ExportedProgram whose ATen graph the FX driver converts (EXPORT).

Each gives a :class:`Capture`: the graph, the user inputs, the parameters it reads (named after their ``state_dict``
keys) and example outputs.
"""

from exporter.capture.common import EXPORT, SCRIPT, TRACE, Capture, flatten, flatten_outputs, number_tensor, split_args
from exporter.capture.scripted import split_list_inputs
from exporter.capture.torchscript import MODE_FRAME, capture
from exporter.capture.warning_filter import quiet_torchscript

__all__ = ["EXPORT", "SCRIPT", "TRACE", "Capture", "MODE_FRAME", "capture", "flatten", "flatten_outputs",
           "number_tensor", "quiet_torchscript", "split_args", "split_list_inputs"]
