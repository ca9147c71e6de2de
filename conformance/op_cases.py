"""The hand-written operator cases of ``opcases``, run by the conformance runner as cases of kind "op".

Their rows are the ones ``op_tests`` writes (both run them through ``conformance.op_runner.run_case``), so the
report's op x opset matrix reads the same thing whichever ran them. The full tier runs every case at every opset
7-20. The quick tier runs a deterministic subset that keeps the main job within its 3-minute budget on 2 cores (every
case at every opset is ~15,000 cases, about 3 minutes of CPU by itself): each case, static and (where it has one)
dynamic, at the lowest opset it claims, static and dynamic each (proving the claims, in the oldest operator forms),
at 11 (Clip, Pad and Slice take inputs where they took attributes; Squeeze, Unsqueeze, ReduceSum and Split still take
attributes), at 16 (those take inputs too), at 18 (every Reduce* takes axes as an input, Split its num_outputs; the
Bitwise ops, Resize's antialias, Mish) and at 20 (the highest: GridSample's N-D form, Gelu): the eras of operator
forms that the symbolics switch between.
"""

from __future__ import annotations

from conformance.arguments import ALL_OPSETS
from conformance.schema import EXPORT, TRACE

QUICK_OPSETS = (11, 16, 18, 20)
COST = 0.05  # relative to a resnet50 model case: op cases sort after the models, which keeps the run's tail short


def quick_opsets(case) -> tuple[int, ...]:
    """The quick tier's opsets for ``case`` (see the module docstring)."""
    lowest = {min(max(case.min_opset_for(dynamic), ALL_OPSETS[0]), ALL_OPSETS[-1])
              for dynamic in ((False, True) if case.has_dynamic_variant() else (False,))}
    return tuple(sorted({*lowest, *QUICK_OPSETS}))


def modes_at(case, opset: int) -> tuple[str, ...]:
    """Static always; dynamic where the case has a dynamic variant and ``opset`` reaches its minimum (as op_tests)."""
    return ("static", "dynamic") if case.has_dynamic_variant() and opset >= case.min_opset else ("static",)


def run(case: dict, row: dict) -> None:
    """Run the op case described by the conformance ``case`` and fill ``row`` with its result."""
    from conformance.op_runner import run_case
    from opcases import by_name

    capture = EXPORT if case.get("capture") == EXPORT else TRACE
    op_row = run_case(by_name()[case["name"]], case["opset"], case["mode"] == "dynamic", case["provider"], capture)
    # Keep what the runner already knows (family, ...) where the op row has nothing to say.
    row.update({key: value for key, value in op_row.items() if value is not None})
