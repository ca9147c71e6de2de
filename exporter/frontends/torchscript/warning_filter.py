"""Which warnings a TorchScript capture shows: the model's (a value the trace froze, a data-dependent branch), not
TorchScript's own noise."""

from __future__ import annotations

import contextlib
import os
import warnings

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_JIT_DIR = os.path.join(_TORCH_DIR, "jit") + os.sep


@contextlib.contextmanager
def quiet_torchscript(tracer_warnings: list[str] | None = None):
    """Show the model's warnings, hide TorchScript's own noise.

    Shown, once each with the source line that raised it: every TracerWarning raised by the model's code or a
    library outside torch (a value the trace froze, such as a data-dependent branch: the classic source of silently
    wrong models) and every other warning raised from code outside torch. Hidden, as PyTorch's own filters hide them:
    TracerWarnings from torch's library code (its ``nn`` shape checks all raise them), and deprecation, future and
    user warnings raised inside torch (its tracer and scripting machinery warn about their own deprecation on every
    export). A warning an earlier export in this process showed is not shown again unless the caller's filters say
    ``always``. TracerWarnings are also collected in ``tracer_warnings``, all of them.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    shown: set[tuple] = set()
    for warning in caught:
        is_tracer = issubclass(warning.category, torch.jit.TracerWarning)
        if is_tracer and tracer_warnings is not None:
            tracer_warnings.append(str(warning.message))
        key = (str(warning.message), warning.category, warning.filename, warning.lineno)
        if key in shown or not _is_shown(warning, is_tracer):
            continue
        shown.add(key)
        if _caller_action(warning) != "always":
            if key in _SHOWN_BY_EARLIER_EXPORTS:
                continue
            _SHOWN_BY_EARLIER_EXPORTS.add(key)
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


@contextlib.contextmanager
def silenced():
    """Show no warning raised inside, and remember none as shown: for a capture made again only to be compared (the
    first capture showed the model's warnings)."""
    shown = set(_SHOWN_BY_EARLIER_EXPORTS)
    try:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            yield
    finally:
        _SHOWN_BY_EARLIER_EXPORTS.intersection_update(shown)


# What Python's default action ("once per source line") would have kept, were the registries it keeps not reset by
# every ``catch_warnings`` block, each export's included.
_SHOWN_BY_EARLIER_EXPORTS: set[tuple] = set()


def _is_shown(warning: warnings.WarningMessage, is_tracer: bool) -> bool:
    if _from_outside_torch(warning):
        return True
    if is_tracer:  # torch.jit's own TracerWarnings (a trace check's) stay, as in PyTorch's filter
        return os.path.abspath(warning.filename).startswith(_TORCH_JIT_DIR)
    return not _is_noise(warning.category)


def _caller_action(warning: warnings.WarningMessage) -> str:
    """The action the caller's warning filters take on ``warning`` (the first filter that matches it decides)."""
    text, module = str(warning.message), os.path.splitext(warning.filename)[0]
    for action, message, category, module_pattern, lineno in warnings.filters:
        if ((message is None or message.match(text)) and issubclass(warning.category, category)
                and (module_pattern is None or module_pattern.match(module))
                and lineno in (0, warning.lineno)):
            return action
    return warnings.defaultaction  # type: ignore[attr-defined]  # set by the warnings module, missing from its stub


def _from_outside_torch(warning: warnings.WarningMessage) -> bool:
    return not os.path.abspath(warning.filename).startswith(_TORCH_DIR)


def _is_noise(category: type[Warning]) -> bool:
    return issubclass(category, (DeprecationWarning, FutureWarning, UserWarning))
