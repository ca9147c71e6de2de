"""The op families only a TorchScript graph holds (its ``prim::`` ops: If/Loop blocks, lists, tuples): importing this
package registers them, as ``exporter.symbolics`` registers the families both captures share."""

from exporter.frontends.torchscript.symbolics import control_flow, loop, prim  # noqa: F401
