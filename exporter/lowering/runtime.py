"""Workarounds for gaps of one ONNX runtime, declared in one place and switchable.

The ONNX spec is what an export targets. Where ONNX Runtime (the runtime the harness checks against) lacks a kernel
or rejects a valid form, a building block may emit an equivalent form it can run instead; each such choice is a
``Workaround`` declared here, named with the runtime and version whose gap it works around and the plain ONNX form
it replaces. A symbolic or building block asks ``applies(g, WORKAROUND)`` only when the gap matters for the values
at hand, so the export records exactly the workarounds its model depends on (``ExportResult.workarounds``).

``exporter.export(..., runtime_workarounds=False)`` emits the plain ONNX form everywhere (a set of names keeps just
those). ``tests/test_runtime_workarounds.py`` exports each workaround's probe in plain form and shows that the runtime
still fails it: when a runtime release closes a gap, that test fails and names the workaround to remove.
"""

from __future__ import annotations

from dataclasses import dataclass

ONNX_RUNTIME = "ONNX Runtime 1.31.1 (CPU provider)"


@dataclass(frozen=True)
class Workaround:
    name: str
    runtime: str  # the runtime and version whose gap this works around
    gap: str  # what that runtime lacks or rejects
    plain_form: str  # what the export emits with the workaround off: the plain ONNX form


WORKAROUNDS: dict[str, Workaround] = {}


def declare(name: str, gap: str, plain_form: str, runtime: str = ONNX_RUNTIME) -> Workaround:
    if name in WORKAROUNDS:
        raise ValueError(f"workaround {name!r} is declared twice")
    WORKAROUNDS[name] = Workaround(name, runtime, gap, plain_form)
    return WORKAROUNDS[name]


def applies(g, workaround: Workaround) -> bool:
    """Whether this export emits ``workaround``'s form (the default) rather than the plain ONNX form. Ask only
    where the gap matters for the values at hand: a True answer records that the exported model depends on it."""
    enabled = g.session.workarounds
    if enabled is not None and workaround.name not in enabled:
        return False
    g.session.used_workarounds.add(workaround.name)
    return True


def enabled_set(choice) -> frozenset[str] | None:
    """The ``runtime_workarounds`` export option as the session's set of enabled workarounds (None: all)."""
    if choice is True:
        return None
    if choice is False or choice is None:
        return frozenset()
    names = frozenset(choice)
    unknown = sorted(names - set(WORKAROUNDS))
    if unknown:
        raise ValueError(f"unknown runtime workarounds {unknown}; known: {sorted(WORKAROUNDS)}")
    return names


# -- the workarounds ------------------------------------------------------------------------------------------
# Declared by topic; each is used by the building block or symbolic named in its comment.

# -- elementwise, comparison, activations, casting, random, distance, losses --------------------------------------

# -- shape, tensor factories, sequence, control flow, prim, resize, attention -------------------------------------
# symbolics.shape.pixel_shuffle: Reshape/Transpose/Reshape for tensors that are not floating point.
DEPTH_TO_SPACE_INTEGERS = declare(
    "depth_to_space_integers",
    gap="ONNX Runtime has DepthToSpace kernels for float, double, half, int8 and uint8 only (none for int32, int64 "
    "or bool, say)",
    plain_form="DepthToSpace (CRD mode) on the tensor's own type, as ONNX allows from opset 11",
)
# lowering.numbers.extremum: Min/Max at opset 7 in float instead of double.
MIN_MAX_6_DOUBLES = declare(
    "min_max_6_doubles",
    gap="ONNX Runtime implements Min-6 and Max-6 for float only, not double",
    plain_form="Min/Max on double at opset 7 (the type of doubles, and of integers, which Min-6 does not take)",
)
# symbolics.resize (opset 11+): static-size resizes of doubles by PyTorch's own gathers and weights.
RESIZE_DOUBLES = declare(
    "resize_doubles",
    gap="ONNX Runtime has no Resize kernel for double tensors (float, half, int8, uint8 and int32 only)",
    plain_form="Resize on the double tensor, as ONNX allows",
)

# -- indexing, in-place, sorting, torchvision ops -----------------------------------------------------------------

# -- nn, pooling, normalization, rnn, linalg, reductions, quantized -----------------------------------------------
