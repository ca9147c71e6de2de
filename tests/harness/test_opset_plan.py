"""op_tests.opset_plan: the opsets each op case runs at by default (CI) are its lowest, every opset where its exported
form changes, the opsets its declared expectations change at, and the newest; every opset where the plan does not
know the case, or with OP_TESTS_OPSETS=all."""

from __future__ import annotations

import torch

from op_tests.opset_plan import load_plan, planned_opsets
from opcases import OPSETS, OpCase

ABS = OpCase("abs", lambda k: (torch.randn(2 + k, 3),), fn=torch.abs)
LATE = OpCase("late", lambda k: (torch.randn(2 + k, 3),), fn=torch.abs, min_opset=11, dynamic_min_opset=13,
              known_failures={16: "a", 17: "b"})


def test_a_case_the_plan_does_not_hold_runs_at_every_opset():
    assert planned_opsets(ABS, "static", {}) == OPSETS


def test_a_planned_case_runs_at_its_form_changes_lowest_and_newest():
    assert planned_opsets(ABS, "static", {"abs": {"static": [7, 13]}}) == (7, 13, OPSETS[-1])


def test_a_case_runs_below_its_lowest_opset_and_where_its_known_failures_begin_and_end():
    plan = {"late": {"static": [7, 11, 13], "dynamic": [11, 13]}}
    assert planned_opsets(LATE, "static", plan) == (7, 10, 11, 13, 16, 18, OPSETS[-1])
    assert planned_opsets(LATE, "dynamic", plan) == (11, 12, 13, 16, 18, OPSETS[-1])


def test_the_committed_plan_records_every_case_from_the_lowest_opset_of_the_range():
    plan = load_plan()
    assert plan, "op_tests/opset_plan.json is missing or written for another opset range: python -m op_tests.opset_plan"
    assert {modes["static"][0] for modes in plan.values()} == {OPSETS[0]}  # every case exports static at each opset
    assert all(set(opsets) <= set(OPSETS) for modes in plan.values() for opsets in modes.values())
