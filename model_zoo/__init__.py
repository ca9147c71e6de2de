"""The model zoo: every model and documentation example the project claims to export, with what it takes to
compare its ONNX export with PyTorch meaningfully (inputs, dynamic axes, tolerances, conditioning).

``entries()`` lists them all; ``get(name)`` finds one; ``prepare_model(entry)`` builds it with seeded weights and
calibrated BatchNorm statistics (see ``model_zoo.conditioning``).
"""

from __future__ import annotations

import functools
import importlib
import os

import torch

from model_zoo.conditioning import prepare, seed_everything
from model_zoo.entry import DEFAULT_ATOL, DEFAULT_RTOL, ZooEntry

MODEL_SEED = 0

__all__ = ["DEFAULT_ATOL", "DEFAULT_RTOL", "ZooEntry", "entries", "get", "prepare_model", "seed_everything"]


@functools.lru_cache(maxsize=1)
def _all() -> tuple[ZooEntry, ...]:
    from model_zoo.docs_examples import docs_entries
    from model_zoo.torchvision_models import torchvision_entries
    from model_zoo.transformers_models import transformers_entries

    found = [*docs_entries(), *torchvision_entries(), *transformers_entries(), *_extra_entries()]
    names = [e.name for e in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate model zoo names: {duplicates}")
    return tuple(found)


def _extra_entries() -> list[ZooEntry]:
    """Entries from ``$MODEL_ZOO_EXTRA`` ("module:function,..."): how tests add models that hang or crash
    (worker processes inherit the variable, so they see the same zoo)."""
    found: list[ZooEntry] = []
    for spec in filter(None, os.environ.get("MODEL_ZOO_EXTRA", "").split(",")):
        module_name, _, function = spec.partition(":")
        found.extend(getattr(importlib.import_module(module_name), function)())
    return found


def entries() -> list[ZooEntry]:
    """Every entry: the documentation's examples first, then torchvision's models, then transformers'."""
    return list(_all())


def get(name: str) -> ZooEntry:
    for entry in _all():
        if entry.name == name:
            return entry
    raise KeyError(f"no model zoo entry named {name!r}")


def prepare_model(entry: ZooEntry) -> torch.nn.Module:
    """The entry's model with weights seeded by MODEL_SEED and BatchNorm calibrated, in eval mode."""
    return prepare(entry.build, MODEL_SEED, entry.calibration_inputs)
