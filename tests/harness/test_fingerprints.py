"""The byte-identity proof tool (op_tests.fingerprints): fingerprints of op cases are stable and name what changed,
and ``compare`` tells identical files from differing ones."""

from __future__ import annotations

import json

import torch

from op_tests import fingerprints
from opcases import OpCase

RELU = OpCase("relu", lambda k: (torch.randn(2 + k, 3),), fn=torch.relu)
GRID_SAMPLE = OpCase("grid_sampler", lambda k: (torch.randn(1, 1, 3 + k, 3), torch.rand(1, 2, 2, 2) * 2 - 1),
                     fn=lambda x, grid: torch.nn.functional.grid_sample(x, grid, align_corners=False), min_opset=16,
                     dynamic=False)


def test_a_case_is_fingerprinted_static_and_dynamic_at_each_opset_and_through_torch_export():
    found = fingerprints.case_fingerprints(RELU, (13, 18))
    assert sorted(found) == ["relu/opset13/dynamic", "relu/opset13/static", "relu/opset18/dynamic",
                             "relu/opset18/dynamic/export", "relu/opset18/static"]
    assert all(value.startswith("sha256:") for value in found.values()), found
    assert found["relu/opset13/static"] != found["relu/opset18/static"]  # the opset import differs
    assert found["relu/opset13/static"] != found["relu/opset13/dynamic"]  # the dim_params differ
    assert fingerprints.case_fingerprints(RELU, (13, 18)) == found  # the same bytes, export after export


def test_a_refused_export_records_the_error_type_and_message():
    found = fingerprints.case_fingerprints(GRID_SAMPLE, (11,))
    assert list(found) == ["grid_sampler/opset11/static"]
    assert found["grid_sampler/opset11/static"].startswith("UnsupportedOperatorError: aten::grid_sampler"), found


def test_compare_names_each_differing_or_missing_key_and_fails(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"x/opset13/static": "sha256:1", "y/opset13/static": "sha256:2", "z/opset9/static": "E"}))
    b.write_text(json.dumps({"x/opset13/static": "sha256:1", "y/opset13/static": "sha256:3"}))
    assert fingerprints.main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "y/opset13/static" in out and "z/opset9/static" in out and "(missing)" in out
    assert "x/opset13/static" not in out
    assert fingerprints.main(["compare", str(a), str(a)]) == 0
    assert "0 of 3 fingerprints differ" in capsys.readouterr().out


def test_opset_ranges():
    assert fingerprints.opset_range("7-9") == (7, 8, 9)
    assert fingerprints.opset_range("13") == (13,)
