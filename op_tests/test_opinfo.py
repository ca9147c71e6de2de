"""The quick tier of the OpInfo suite: for every OpInfo in op_db, at opsets 7-20, 23 and 26 (every opset 7-26 with
``OP_TESTS_OPSETS=all``), its first float32 sample
exported static, and its first sample that has a dynamic partner (another sample baking the same constants, with
other sizes) exported dynamic; each row judged against ``op_tests/opinfo/expectations.toml``.

Ids read ``test_opinfo[gather-float32-opset13-static]``, so ``pytest op_tests -k "gather and opset13"`` selects
the OpInfo samples with the hand-written cases. The full matrix (every sample, every listed dtype) runs outside
pytest: ``python -m op_tests.opinfo run``.
"""

from __future__ import annotations

import functools
import os

import pytest
import torch

from op_tests.opinfo import expectations
from op_tests.opinfo.check import MODES, OPSETS, check, modes_of, prepare
from op_tests.opinfo.samples import opinfos_by_key, samples
from op_tests.recording import results_path, write_row

# Samples per OpInfo searched for a dynamic partner: enough for most ops, cheap to generate.
PARTNER_SEARCH = 24


# By default the opsets of the range before 21 and the two where new forms begin (23: Attention, RMSNormalization;
# 26: the newest); every opset 7-26 with OP_TESTS_OPSETS=all (``nox -s op_matrix``), where the hand-written op cases
# run at each opset their form changes at by default (op_tests/opset_plan.py).
QUICK_OPSETS = OPSETS if os.environ.get("OP_TESTS_OPSETS") == "all" else tuple(
    opset for opset in OPSETS if opset <= 20 or opset in (23, OPSETS[-1]))
PARAMS = [pytest.param(key, opset, mode, id=f"{key}-float32-opset{opset}-{mode}")
          for key in opinfos_by_key() for opset in QUICK_OPSETS for mode in MODES]


@functools.lru_cache(maxsize=8)
def _prepared(key: str, mode: str):
    """The sample the quick tier checks in ``mode`` (None when there is none)."""
    group = samples(opinfos_by_key()[key], torch.float32, limit=PARTNER_SEARCH)
    if mode == "static":
        return prepare(group[0], group) if group else None
    for sample in group:
        prepared = prepare(sample, group)
        if mode in modes_of(prepared):
            return prepared
    return None


@functools.lru_cache(maxsize=1)
def _expectations() -> list:
    return expectations.load()


@pytest.mark.parametrize("key, opset, mode", PARAMS)
def test_opinfo(key, opset, mode):
    prepared = _prepared(key, mode)
    if prepared is None:
        pytest.skip(f"no float32 sample of {key} among its first {PARTNER_SEARCH} has a partner of the same "
                    "constants and ranks with other sizes (0 and 1 excluded): nothing to feed a dynamic export"
                    if mode == "dynamic" else f"{key} has no float32 sample")
    row = check(prepared, opset, mode)
    if results_path():
        write_row(results_path(), row)
    judgement = expectations.judge([row], _expectations(), report_stale=False)
    detail = (row["error"] or row["reason"] or "").splitlines()[0][:300] if (row["error"] or row["reason"]) else ""
    assert not judgement.mismatches, f"silently wrong export: {detail} [{row.get('arbiter')}]"
    assert not judgement.unexpected_passes, (
        f"passes now: remove the expectation '{judgement.unexpected_passes[0][1].reason}' from expectations.toml")
    assert not judgement.unexpected_failures, f"{row['status']} at stage {row['stage']}: {detail}"
