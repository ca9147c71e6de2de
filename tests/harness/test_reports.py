"""Tests of the HTML coverage report (reports/): classification, aggregation, baseline comparison, CLI, page.

Fixtures: real op rows come from running a few op cases through ``conformance.op_runner.run_case`` and
``op_tests.recording.record``, exactly as ``pytest op_tests`` does. The engine passes those, so rows for the failure kinds the report must tell apart
(kernel missing, checker error, mismatch, ...) and the model/example rows of the conformance runner are written
by hand in the documented results schema, with error texts in the form the exporter and ONNX Runtime produce.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import unescape

import pytest

from conformance.results import read_files
from reports.build import build_report
from reports.results import OPSETS, bucket, outcome_key

FIXTURE_OPSETS = range(7, 17)  # the crafted rows' opsets (their counts are asserted below)

VERSIONS = {"torch": "2.13.0", "torchvision": "0.28.0", "onnx": "1.17.0", "onnxruntime": "1.20.1", "python": "3.11.7"}
GIT_REV = "abc1234"


def real_op_rows(tmp_dir: str) -> list[dict]:
    """linear (passes at every opset) and max_pool2d with dilation (unsupported below 10) through the harness."""
    import torch
    import torch.nn.functional as F

    from conformance.op_runner import run_case
    from op_tests.recording import record
    from opcases import OpCase

    cases = [
        OpCase("linear", lambda k: (torch.randn(2 + k, 5),), module=lambda: torch.nn.Linear(5, 3)),
        OpCase("max_pool2d", lambda k: (torch.randn(1 + k, 2, 10, 10),), sample="dilation", min_opset=10,
               fn=lambda x: F.max_pool2d(x, 3, 1, dilation=2)),
    ]
    path = os.path.join(tmp_dir, "op_rows")
    previous = os.environ.get("OP_TESTS_RESULTS")
    os.environ["OP_TESTS_RESULTS"] = path
    try:
        for case in cases:
            for opset in OPSETS:
                record(run_case(case, opset, False, "cpu"))
    finally:
        if previous is None:
            del os.environ["OP_TESTS_RESULTS"]
        else:
            os.environ["OP_TESTS_RESULTS"] = previous
    written = [os.path.join(tmp_dir, f) for f in os.listdir(tmp_dir) if f.startswith("op_rows.") and f.endswith(".part")]
    rows = []
    for part in written:
        with open(part, encoding="utf-8") as handle:
            rows.extend(json.loads(line) for line in handle if line.strip())
        os.remove(part)
    return rows


def _op(op: str, opset: int, status: str, stage: str = "", error: str = "", **extra) -> dict:
    mode = extra.pop("mode", "static")
    provider = extra.pop("provider", "cpu")
    return {"case_id": f"op/{op}/opset{opset}/{mode}/{provider}", "kind": "op", "name": op, "op": op, "opset": opset,
            "provider": provider, "mode": mode, "status": status, "stage": stage, "error": error,
            "dtypes": extra.pop("dtypes", ["float32"]), **extra}


def crafted_op_rows() -> list[dict]:
    """One op per failure kind the matrix must tell apart."""
    rows = []
    for opset in FIXTURE_OPSETS:
        rows.append(_op("roi_align", opset, "unsupported", "convert",
                        f"aten::roi_align is not exportable at opset {opset}: no symbolic is registered for it in any opset"))
        if opset < 11:
            rows.append(_op("gather", opset, "export_error", "convert",
                            "SymbolicValueError: gather with a dynamic index needs GatherElements\nTraceback ...", expected_min_opset=7))
        else:
            rows.append(_op("gather", opset, "pass", max_abs_error=0.0, max_rel_error=0.0, dtypes=["float32", "int64"]))
        rows.append(_op("nonzero", opset, "ort_error", "ort_load",
                        "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for NonZero(9) node "
                        "with name 'NonZero_0'", dtypes=["int32"]))
        rows.append(_op("erf", opset, "checker_error", "checker",
                        "Field 'type' of 'value_info' is required but missing.") if opset == 9 else
                    _op("erf", opset, "pass", max_abs_error=1e-7, max_rel_error=2e-7))
        rows.append(_op("softmax", opset, "mismatch", "accuracy",
                        "size variant 0: output 0: max abs error 0.0031, max rel error 0.012 (rtol 0.0001, atol 2e-05)",
                        max_abs_error=0.0031, max_rel_error=0.012, rtol=1e-4, atol=2e-5, dtypes=["float16"], mode="dynamic"))
        rows.append(_op("softmax", opset, "pass", max_abs_error=1e-8, max_rel_error=1e-7, provider="cuda"))
    rows.append(_op("cumsum", 14, "ort_error", "ort_run", "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : axis out of range"))
    return rows


def _model(kind: str, name: str, opset: int, mode: str, provider: str, status: str, **extra) -> dict:
    row = {
        "case_id": f"{kind}/{name}/opset{opset}/{mode}/{provider}", "kind": kind, "name": name, "family": "classification",
        "opset": opset, "provider": provider, "mode": mode, "status": status, "stage": extra.pop("stage", ""),
        "error": extra.pop("error", ""), "versions": VERSIONS, "git_rev": GIT_REV,
        "started_at": f"2025-01-01T10:{opset:02d}:00+00:00", "duration_s": 12.5,
        "rerun": f"python -m conformance run --case {kind}/{name}/opset{opset}/{mode}/{provider}",
    }
    row.update(extra)
    return row


RESNET_OPS = ["aten::_convolution", "aten::batch_norm", "aten::relu", "aten::max_pool2d", "aten::adaptive_avg_pool2d",
              "aten::flatten", "aten::linear", "aten::add"]


def crafted_model_rows() -> list[dict]:
    """Models and examples across opsets, modes and providers, one of each notable status."""
    rows = []
    for opset in FIXTURE_OPSETS:
        for mode in ("static", "dynamic"):
            rows.append(_model("model", "resnet18", opset, mode, "cpu", "pass", max_abs_error=2e-6, max_rel_error=1e-5,
                               export_seconds=1.8 + opset / 100, node_count=69, file_size=46_800_000,
                               aten_ops=RESNET_OPS, comparison="logits", gpu="NVIDIA H100 80GB HBM3"))
        rows.append(_model("model", "resnet18", opset, "static", "cuda", "pass", max_abs_error=3e-5, max_rel_error=1e-4,
                           export_seconds=1.9, node_count=69, file_size=46_800_000, aten_ops=RESNET_OPS,
                           gpu="NVIDIA H100 80GB HBM3"))
        status = "mismatch" if opset < 11 else "pass"
        rows.append(_model("model", "fcn_resnet50", opset, "static", "cpu", status, family="segmentation",
                           max_abs_error=0.35 if opset < 11 else 1e-5, max_rel_error=0.21 if opset < 11 else 1e-4,
                           error="output 0: max abs error 0.35 (Upsample half-pixel)" if opset < 11 else "",
                           stage="accuracy" if opset < 11 else "", export_seconds=6.5, node_count=180,
                           file_size=140_000_000, aten_ops=RESNET_OPS + ["aten::upsample_bilinear2d"],
                           repro=f"results/repro/fcn_resnet50_opset{opset}" if opset < 11 else ""))
        rows.append(_model("model", "maskrcnn_resnet50_fpn", opset, "dynamic", "cpu",
                           "unsupported" if opset < 11 else "export_error", family="detection", stage="convert",
                           error=(f"aten::roi_align is not exportable at opset {opset}: needs opset >= 11" if opset < 11 else
                                  "SymbolicValueError: dynamic mask size"), aten_ops=RESNET_OPS + ["aten::roi_align", "aten::nonzero"]))
        rows.append(_model("example", "super_resolution", opset, "static", "cpu", "pass", family="docs",
                           max_abs_error=1e-7, max_rel_error=1e-6, export_seconds=0.4, node_count=12, file_size=240_000,
                           aten_ops=["aten::_convolution", "aten::relu", "aten::pixel_shuffle"]))
    rows.append(_model("model", "vit_h_14", 16, "static", "cpu", "timeout", stage="ort_run", error="case exceeded 600 s"))
    rows.append(_model("model", "raft_small", 16, "static", "cpu", "inconclusive",
                       reason="reference output does not depend on the input"))
    rows.append(_model("model", "swin_t", 16, "static", "cpu", "skipped", reason="no CUDA device"))
    return rows


def write_jsonl(path: str, rows: list[dict]) -> str:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def registry_snapshot_for_fixtures() -> dict:
    """A snapshot in `python -m reports registry` form covering the fixture's ops (roi_align deliberately absent)."""
    every = list(OPSETS)
    ops = {name: every for name in ["aten::linear", "aten::relu", "aten::batch_norm", "aten::add", "aten::flatten",
                                     "aten::_convolution", "aten::adaptive_avg_pool2d", "aten::erf", "aten::softmax",
                                     "aten::nonzero", "aten::cumsum", "aten::pixel_shuffle", "aten::upsample_bilinear2d",
                                     "aten::index_select", "prim::ListConstruct"]}
    ops["aten::max_pool2d"] = every
    ops["aten::gather"] = every
    ops["aten::cumsum"] = list(range(11, OPSETS[-1] + 1))
    return {"source": "test fixture", "ops": ops}


# ---------------------------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory) -> str:
    """A results folder as a run leaves it (op and conformance JSONL), a registry snapshot, and a baseline."""
    root = tmp_path_factory.mktemp("report_inputs")
    results = root / "results"
    results.mkdir()
    write_jsonl(str(results / "op_tests.jsonl"), real_op_rows(str(root)) + crafted_op_rows())
    write_jsonl(str(results / "conformance.jsonl"), crafted_model_rows())
    (root / "registry.json").write_text(json.dumps(registry_snapshot_for_fixtures()))
    baseline = crafted_model_rows()
    for row in baseline:
        if row["name"] == "fcn_resnet50" and row["opset"] == 9:
            row["status"], row["error"], row["stage"] = "pass", "", ""  # so opset 9 is a new failure now
        if row["name"] == "maskrcnn_resnet50_fpn" and row["opset"] == 12:
            row["error"] = "SymbolicValueError: something else"  # a changed error
        if row["name"] == "fcn_resnet50" and row["opset"] == 12:
            row["status"], row["error"] = "mismatch", "output 0: max abs error 0.2"  # a new pass now
    baseline.append(dict(baseline[0], case_id="model/alexnet/opset13/static/cpu", name="alexnet"))  # dropped since
    write_jsonl(str(root / "baseline.jsonl"), baseline)
    return str(root)


@pytest.fixture(scope="module")
def report(fixture_dir) -> dict:
    out = os.path.join(fixture_dir, "report")
    html_path = build_report([os.path.join(fixture_dir, "results")], out, registry=os.path.join(fixture_dir, "registry.json"),
                             baseline_path=os.path.join(fixture_dir, "baseline.jsonl"))
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    with open(html_path, encoding="utf-8") as handle:
        data["_html"] = handle.read()
    return data


def _cell(report: dict, op: str, opset: int) -> dict:
    row = next(r for r in report["op_matrix"] if r["op"] == op)
    return row["cells"][str(opset)]


# ---------------------------------------------------------------------------------------------------------------
# Classification


@pytest.mark.parametrize("row, expected", [
    ({"status": "ort_error", "stage": "ort_load", "error": "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find "
      "an implementation for NonZero(9)"}, "ort_kernel_missing"),
    ({"status": "ort_error", "stage": "ort_run", "error": "Could not find an implementation for Foo"}, "ort_kernel_missing"),
    ({"status": "ort_error", "stage": "ort_load", "error": "INVALID_GRAPH : bad input"}, "ort_load_error"),
    ({"status": "ort_error", "stage": "ort_run", "error": "RUNTIME_EXCEPTION"}, "ort_run_error"),
    ({"status": "unsupported", "error": "aten::foo is not exportable at opset 9: no symbolic is registered for it in any opset"},
     "not_registered"),
    ({"status": "unsupported", "error": "aten::roi_align is not exportable at opset 9: needs opset >= 10"}, "unsupported"),
    ({"status": "checker_error"}, "checker_error"),
    ({"status": "mismatch"}, "mismatch"),
    ({"status": "pass"}, "pass"),
    ({"status": "no-such-status"}, "crash"),
    ({}, "skipped"),
])
def test_outcome_of_a_row(row, expected):
    assert outcome_key(row) == expected


def test_op_absent_from_the_registry_is_not_registered():
    row = {"kind": "op", "op": "roi_align", "status": "unsupported", "error": "aten::roi_align is not exportable at opset 9"}
    assert outcome_key(row, registered={"aten::conv2d"}) == "not_registered"
    assert outcome_key(row, registered={"aten::roi_align"}) == "unsupported"


def test_unsupported_where_the_test_requires_the_op_counts_as_failed():
    assert bucket({"status": "unsupported", "opset": 9, "expected_min_opset": 10}) == "unsupported"
    assert bucket({"status": "unsupported", "opset": 11, "expected_min_opset": 10}) == "failed"
    assert bucket({"status": "weird"}) == "failed"


def test_torn_and_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"case_id": "a", "status": "pass"}\n\n{"case_id": "b", "sta')
    assert [r["case_id"] for r in read_files([str(path)])] == ["a"]


# ---------------------------------------------------------------------------------------------------------------
# Report data (the JSON sidecar)


def test_matrix_tells_each_failure_kind_apart(report):
    assert _cell(report, "nonzero", 9)["outcome"] == "ort_kernel_missing"
    assert _cell(report, "roi_align", 12)["outcome"] == "not_registered"
    assert _cell(report, "gather", 7)["outcome"] == "export_error"
    assert _cell(report, "gather", 11)["outcome"] == "pass"
    assert _cell(report, "erf", 9)["outcome"] == "checker_error"
    assert _cell(report, "cumsum", 14)["outcome"] == "ort_run_error"
    assert _cell(report, "cumsum", 13)["outcome"] == "no_data"
    # A dtype/provider that mismatches makes the whole cell a mismatch even where another passes.
    assert _cell(report, "softmax", 13)["outcome"] == "mismatch"


def test_matrix_from_real_op_rows(report):
    """linear and max_pool2d(dilation) really ran through the harness: dilation needs opset >= 10."""
    assert all(_cell(report, "linear", opset)["outcome"] == "pass" for opset in OPSETS)
    assert [_cell(report, "max_pool2d", opset)["outcome"] for opset in (7, 9, 10, 16)] == ["unsupported", "unsupported", "pass", "pass"]
    cell = _cell(report, "max_pool2d", 10)
    assert cell["max_abs_error"] is not None and cell["max_abs_error"] <= 1e-5
    assert "needs opset >= 10" in report["cases"][_cell(report, "max_pool2d", 8)["rows"][0]]["error"]


def test_cell_drill_down_has_dtype_by_provider_and_errors(report):
    cell = _cell(report, "softmax", 12)
    grid = {(g["dtype"], g["provider"]): (g["outcome"], g["passed"], g["total"]) for g in cell["grid"]}
    assert grid == {("float16", "cpu"): ("mismatch", 0, 1), ("float32", "cuda"): ("pass", 1, 1)}
    assert cell["stage"] == "accuracy" and "max abs error 0.0031" in cell["error"]
    assert cell["max_abs_error"] == pytest.approx(0.0031) and cell["max_rel_error"] == pytest.approx(0.012)
    assert cell["samples"] == 1 and cell["total"] == 2 and cell["passed"] == 1


def test_summary_counts_match_the_rows(report, fixture_dir):
    rows = read_files([os.path.join(fixture_dir, "results")])
    overall = report["summary"]["overall"]
    assert overall["total"] == len(rows) == sum(overall[b] for b in ("passed", "failed", "unsupported", "skipped", "inconclusive"))
    assert overall["passed"] == sum(r["status"] == "pass" for r in rows)
    suites = report["summary"]["by_suite"]
    assert suites["example"] == {"passed": 10, "failed": 0, "unsupported": 0, "skipped": 0, "inconclusive": 0, "total": 10}
    assert suites["model"]["skipped"] == 1 and suites["model"]["inconclusive"] == 1
    # gather's export errors at 7-10 are failures (its test requires opset 7); roi_align's "not registered" is not.
    assert suites["op"]["failed"] == 4 + 10 + 1 + 10 + 1
    assert set(report["summary"]["by_provider"]) == {"cpu", "cuda"}
    assert report["summary"]["by_opset"]["16"]["total"] == sum(r.get("opset") == 16 for r in rows)


def test_header_shows_the_onnx_runtime_level_the_rows_ran_at():
    from reports.analysis import header
    from reports.html import _run_facts

    rows = [{"status": "pass", "ort_level": "all"}, {"status": "unsupported", "ort_level": None}]
    facts = header(rows, [])
    assert facts["ort_levels"] == ["all"]
    assert "<dt>ONNX Runtime optimization level</dt><dd>all</dd>" in _run_facts(facts)
    assert header([{"status": "pass"}], [])["ort_levels"] == []  # rows from before the field: "not recorded"


def test_header_comes_from_the_rows(report):
    header = report["header"]
    assert header["git_rev"] == ["abc1234"]
    assert header["versions"]["torch"] == ["2.13.0"] and header["versions"]["onnxruntime"] == ["1.20.1"]
    assert header["providers"] == ["cpu", "cuda"] and header["gpu"] == ["NVIDIA H100 80GB HBM3"]
    # started_at spans 10:07 to 10:16, and the last case runs 12.5 s.
    assert header["duration_s"] == pytest.approx(9 * 60 + 12.5)


def test_models_table_links_failures_to_their_repro(report):
    fcn = next(m for m in report["models"] if m["name"] == "fcn_resnet50")
    assert fcn["cells"]["9"]["outcome"] == "mismatch" and fcn["cells"]["11"]["outcome"] == "pass"
    case = report["cases"][fcn["cells"]["9"]["rows"][0]]
    assert case["repro_href"] == "../results/repro/fcn_resnet50_opset9" or case["repro_href"].endswith("results/repro/fcn_resnet50_opset9")
    assert case["rerun"].startswith("python -m conformance run --case model/fcn_resnet50/opset9")
    assert {m["name"] for m in report["models"]} >= {"resnet18", "super_resolution", "vit_h_14", "raft_small", "swin_t"}
    resnet = next(m for m in report["models"] if m["name"] == "resnet18")
    assert len(resnet["cells"]["13"]["rows"]) == 3  # static/dynamic on CPU, static on CUDA


def test_aten_coverage_against_the_registry_snapshot(report):
    coverage = {entry["op"]: entry["opsets"] for entry in report["coverage"]["ops"]}
    assert set(coverage["aten::roi_align"].values()) == {False}
    assert coverage["aten::relu"]["7"] is True
    assert report["coverage"]["per_opset"]["16"]["seen"] == len(coverage)
    assert report["coverage"]["per_opset"]["16"]["covered"] == len(coverage) - 1  # all but roi_align
    assert "aten::index_select" in report["coverage"]["registered_untested"]
    assert not any(op.startswith("prim::") for op in report["coverage"]["registered_untested"])


def test_without_a_registry_coverage_is_inferred_and_says_unknown(fixture_dir, tmp_path):
    build_report([os.path.join(fixture_dir, "results")], str(tmp_path))
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["coverage"]["registry_inferred"]
    coverage = {entry["op"]: entry["opsets"] for entry in data["coverage"]["ops"]}
    assert set(coverage["aten::roi_align"].values()) == {False}  # the exporter said no symbolic is registered
    assert coverage["aten::upsample_bilinear2d"]["12"] is True  # fcn_resnet50 passed at 12
    assert coverage["aten::upsample_bilinear2d"]["9"] is None  # it mismatched at 9: that proves nothing either way
    assert coverage["aten::relu"]["12"] is True  # resnet18 passed at 12
    assert data["coverage"]["registered_untested"] is None


def test_baseline_comparison(report):
    diff = report["baseline"]
    assert [e["id"] for e in diff["new_failures"]] == ["model/fcn_resnet50/opset9/static/cpu"]
    assert [e["id"] for e in diff["new_passes"]] == ["model/fcn_resnet50/opset12/static/cpu"]
    assert [e["id"] for e in diff["changed_errors"]] == ["model/maskrcnn_resnet50_fpn/opset12/dynamic/cpu"]
    assert diff["missing_cases"] == ["model/alexnet/opset13/static/cpu"]
    assert diff["new_cases"] == sum(1 for c in report["cases"] if c["kind"] == "op")


def test_report_shows_the_release_gate_verdict_of_conformance_gate(report):
    """The page shows the gate's own verdict (conformance.gate), naming the regressions that block a release."""
    verdict = report["baseline"]["gate"]
    blocking = sorted((f["kind"], f["case_id"]) for f in verdict["regressions"] if f["kind"] != "new_case_failing")
    assert blocking == [("new_failure", "model/fcn_resnet50/opset9/static/cpu"),
                        ("vanished", "model/alexnet/opset13/static/cpu")]
    # The op rows are not in the baseline: each one the page counts as failed blocks the release as a failing new case.
    new_failing = {f["case_id"] for f in verdict["regressions"] if f["kind"] == "new_case_failing"}
    assert new_failing == {c["id"] for c in report["cases"] if c["kind"] == "op" and c["bucket"] == "failed"}
    assert verdict["passed"] is False and verdict["improvements"] == 1
    assert "Release gate: FAIL" in report["_html"] and "model/alexnet/opset13/static/cpu" in report["_html"]
    assert re.search(r'id="gate-badge">Release gate: FAIL · \d+ regressions \(against the baseline\)', report["_html"])


def test_header_badge_is_the_gate_verdict_without_a_baseline_too(tmp_path):
    """No baseline: the badge says FAIL exactly when `python -m conformance gate --no-baseline` exits 1."""
    from conformance import gate

    passing = [r for r in crafted_model_rows() if r["status"] in ("pass", "inconclusive", "skipped")]
    for rows, state in ((passing, "PASS"), (crafted_model_rows(), "FAIL")):
        results = write_jsonl(str(tmp_path / "r.jsonl"), rows)
        html = open(build_report([results], str(tmp_path / state)), encoding="utf-8").read()
        failed = json.loads((tmp_path / state / "report.json").read_text())["summary"]["overall"]["failed"]
        assert f'id="gate-badge">Release gate: {state} · {failed} failing (no baseline: any failure fails)' in html
        assert gate.main([results, "--no-baseline", "--allowlist", str(tmp_path / "none.json")]) == (state == "FAIL")


def test_header_counts_the_cuda_cases_that_ran_in_red_when_some_did_not(tmp_path):
    rows = [_model("model", "resnet18", opset, "static", "cuda", "skipped", reason="no CUDA device on this machine")
            for opset in (9, 16)] + [_model("model", "resnet18", 9, "static", "cpu", "pass")]
    html = open(build_report([write_jsonl(str(tmp_path / "r.jsonl"), rows)], str(tmp_path / "out")), encoding="utf-8").read()
    assert '<span class="verdict bad" id="cuda-badge">CUDA cases run: 0 of 2</span>' in html
    cpu_only = [rows[-1]]
    html = open(build_report([write_jsonl(str(tmp_path / "c.jsonl"), cpu_only)], str(tmp_path / "c")), encoding="utf-8").read()
    assert "cuda-badge" not in html


# ---------------------------------------------------------------------------------------------------------------
# Partial runs and skipped rows: the page says what it judged, and its badge is the gate's verdict on every input

CPU16 = _model("model", "resnet18", 16, "static", "cpu", "pass", max_abs_error=2e-6, rtol=1e-3, atol=1e-5)
CPU9 = _model("model", "resnet18", 9, "static", "cpu", "pass", max_abs_error=2e-6, rtol=1e-3, atol=1e-5)
ALEXNET = _model("model", "alexnet", 13, "static", "cpu", "pass", max_abs_error=2e-6, rtol=1e-3, atol=1e-5)
CUDA16 = _model("model", "resnet18", 16, "static", "cuda", "skipped", reason="no CUDA device on this machine")
CUDA9 = _model("model", "resnet18", 9, "static", "cuda", "skipped", reason="no CUDA device on this machine")


@pytest.mark.parametrize("rows, baseline, partial", [
    ([], [CPU16, ALEXNET], True),                                   # an empty run (was PASS)
    ([], None, False),
    ([CUDA16, CUDA9], [CPU16, ALEXNET], True),                      # --ep cuda without a GPU (was PASS)
    ([CUDA16, CUDA9], None, False),
    ([dict(CPU16, exporter="peer")], [CPU16], True),                # torch.onnx's rows say nothing about ours
    ([CPU16, CUDA16], [CPU16, ALEXNET], True),                      # CPU ran and passed, CUDA skipped: PASS
    ([CPU16, ALEXNET], [CPU16, ALEXNET], False),
    ([CPU16], [CPU16, ALEXNET], False),                             # alexnet vanished
    ([dict(CPU16, status="mismatch", error="output 0 differs")], [CPU16], True),
    ([CPU16, dict(CPU16, exporter="peer", status="export_error")], None, False),
])
def test_the_badge_is_the_gates_verdict_on_every_input(tmp_path, rows, baseline, partial):
    """The page's badge and `python -m conformance gate` come from one function (conformance.gate.judge)."""
    from conformance import gate

    results = write_jsonl(str(tmp_path / "r.jsonl"), rows)
    against = ["--baseline", write_jsonl(str(tmp_path / "b.jsonl"), baseline)] if baseline is not None else ["--no-baseline"]
    code = gate.main([results, *against, *(["--partial"] * partial), "--json", str(tmp_path / "gate.json")])
    judged = json.loads((tmp_path / "gate.json").read_text())
    page = open(build_report([results], str(tmp_path / "out"), partial=partial,
                             baseline_path=str(tmp_path / "b.jsonl") if baseline is not None else None), encoding="utf-8").read()
    badge = re.search(r'id="gate-badge">Release gate: (PASS|FAIL) · ([^<]*)</span>', page)
    assert badge and badge.group(1) == ("PASS" if code == 0 else "FAIL"), (code, badge and badge.group(0))
    assert judged["passed"] == (code == 0)
    if judged["no_evidence"]:
        assert unescape(badge.group(2)).startswith(f"no evidence: {judged['no_evidence']} (")
    assert json.loads((tmp_path / "out" / "report.json").read_text())["gate"]["passed"] == judged["passed"]


def test_a_partial_report_says_partial_and_lists_what_it_did_not_run(tmp_path):
    """Before: nothing said partial, the lead claimed that a case missing from the run is listed (none was), and
    resnet18's opset-16 cell was grey because its CUDA case was skipped while its CPU case passed."""
    write_jsonl(str(tmp_path / "r.jsonl"), [CPU16, CUDA16, CUDA9])
    write_jsonl(str(tmp_path / "b.jsonl"), [CPU16, CPU9, ALEXNET])
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "r.jsonl", "--baseline", "b.jsonl", "--partial",
                           "--out", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))})
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "out" / "report.html").read_text()
    assert ('id="gate-badge">Release gate: PASS · 0 regressions (against the baseline, partial run: 1 of its 3 cases '
            'compared)</span>') in page
    assert "Compared with the baseline (partial run)" in page
    assert "compared with <code>b.jsonl</code> (3 cases) on the 1 baseline cases it ran" in page
    listed = re.search(r"<h3>Not in this run \(2\)</h3><details><summary>show</summary><ul class=\"diff\">(.*?)</ul>", page)
    assert listed and re.findall(r"<code>(.*?)</code>", listed.group(1)) == [ALEXNET["case_id"], CPU9["case_id"]]
    assert "but not in this run" not in page and "A case missing from this run is listed" not in page
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["baseline"]["missing_cases"] == [] and data["baseline"]["compared"] == 1
    (resnet,) = data["models"]
    assert resnet["cells"]["16"]["outcome"] == "pass"  # the CPU verdict; the skipped CUDA case does not hide it
    assert resnet["cells"]["9"]["outcome"] == "skipped"  # nothing ran there
    assert resnet["worst"] == "pass"


def test_mark_baseline_then_compare_shows_no_change(fixture_dir, tmp_path):
    results = os.path.join(fixture_dir, "results")
    marked = tmp_path / "baseline.jsonl"
    build_report([results], str(tmp_path / "first"), mark_baseline=str(marked))
    assert len(read_files([str(marked)])) == len(read_files([results]))
    build_report([results], str(tmp_path / "second"), baseline_path=str(marked))
    diff = json.loads((tmp_path / "second" / "report.json").read_text())["baseline"]
    assert diff["new_failures"] == diff["new_passes"] == diff["changed_errors"] == diff["missing_cases"] == []
    assert diff["gate"]["passed"] is True


def test_a_baseline_inside_the_results_folder_is_not_read_as_results(fixture_dir, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    write_jsonl(str(results / "conformance.jsonl"), crafted_model_rows())
    build_report([str(results)], str(tmp_path / "r"), mark_baseline=str(results / "baseline.jsonl"))
    build_report([str(results)], str(tmp_path / "r"), baseline_path=str(results / "baseline.jsonl"))
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["header"]["row_count"] == len(crafted_model_rows())


def test_peer_rows_never_count_and_reruns_supersede(tmp_path):
    """torch.onnx peer rows validate the zoo, not this exporter; a re-run's newer row is the case's result."""
    rows = crafted_model_rows()
    first = rows[0]
    rerun_fixed = dict(first, status="mismatch", error="output 0: max abs error 1.0")
    peer = [dict(r, exporter="peer", status="export_error") for r in rows[:5]]
    path = write_jsonl(str(tmp_path / "r.jsonl"), rows + [rerun_fixed] + peer)
    build_report([path], str(tmp_path / "out"))
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["summary"]["overall"]["total"] == len(rows)
    assert data["header"]["peer_rows_excluded"] == 5 and data["header"]["superseded_rows"] == 1
    latest = next(c for c in data["cases"] if c["id"] == first["case_id"])
    assert latest["status"] == "mismatch"
    assert "left out of every count" in (tmp_path / "out" / "report.html").read_text()


def test_prim_nodes_are_not_aten_coverage(tmp_path):
    path = write_jsonl(str(tmp_path / "r.jsonl"), [dict(crafted_model_rows()[0], aten_ops=["aten::relu", "prim::Constant"])])
    build_report([path], str(tmp_path / "out"))
    ops = [e["op"] for e in json.loads((tmp_path / "out" / "report.json").read_text())["coverage"]["ops"]]
    assert ops == ["aten::relu"]


# ---------------------------------------------------------------------------------------------------------------
# The page and the command line


def test_page_is_self_contained(report):
    page = report["_html"]
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    # The only URL is SVG's XML namespace, which is a name, not a request.
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) <= {"http://www.w3.org/2000/svg"}
    assert page.count("<svg") == 2
    for section in ("run", "summary", "baseline", "matrix", "models", "coverage", "charts"):
        assert f'id="{section}"' in page


def test_error_text_cannot_break_out_of_the_page(tmp_path):
    hostile = "</script><script>document.title='pwned'</script><!--"
    path = write_jsonl(str(tmp_path / "r.jsonl"), [{"case_id": "op/x<y/opset9/static/cpu", "kind": "op", "op": "x<y",
                                                     "opset": 9, "status": "export_error", "error": hostile,
                                                     "name": "<b>x</b>"}])
    page = open(build_report([path], str(tmp_path / "out")), encoding="utf-8").read()
    assert hostile not in page and "<b>x</b>" not in page
    assert page.count("</script>") == 2  # the data block and the script, nothing injected


def test_empty_and_sparse_inputs_still_build(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    sparse = write_jsonl(str(tmp_path / "sparse.jsonl"), [{"case_id": "b", "status": "pass"},
                                                          {"case_id": "c", "status": "mismatch", "kind": "model"}])
    page = open(build_report([str(empty), sparse], str(tmp_path / "out")), encoding="utf-8").read()
    assert "ONNX export conformance" in page
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert data["summary"]["overall"]["total"] == 2


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reports", *args], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_cli_prints_the_html_path_last(fixture_dir, tmp_path):
    out = tmp_path / "cli"
    done = _cli("build", os.path.join(fixture_dir, "results"), "--out", str(out), "--baseline",
                os.path.join(fixture_dir, "baseline.jsonl"), "--mark-baseline", str(tmp_path / "b.jsonl"))
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last == str(out / "report.html") and os.path.isfile(last)
    assert (out / "report.json").is_file() and (tmp_path / "b.jsonl").is_file()


def test_cli_reports_a_missing_file(tmp_path):
    done = _cli("build", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path))
    assert done.returncode == 2 and "not found" in done.stderr


def test_registry_snapshot_of_the_real_exporter(tmp_path):
    out = tmp_path / "registry.json"
    done = _cli("registry", "--out", str(out))
    assert done.returncode == 0, done.stderr
    ops = json.loads(out.read_text())["ops"]
    assert ops["aten::linear"] == list(OPSETS)
    assert all(set(opsets) <= set(OPSETS) for opsets in ops.values())


def test_a_localized_mismatch_shows_node_scope_source_growth_and_repro(tmp_path):
    repro = tmp_path / "repro" / "model_resnet18" / "localization"
    found = {"check": "input 0", "finding": "diverging node", "node": "/layer3/1/conv2/Mul_191", "op_types": ["Conv", "Mul"],
             "kind": "aten::_convolution", "scope": "layer3.1.conv2", "source": "resnet.py:96", "inputs_agree": True,
             "culprit": "export", "explanation": "both runtimes agree with each other, not with PyTorch",
             "growth": [["Mul_190", 1e-2], ["Relu_194", 8e-3], ["output", 4e-3]], "repro": str(repro)}
    rows = [_model("model", "resnet18", 14, "static", "cpu", "mismatch", error="max abs error 0.2", localization=found),
            _model("model", "resnet50", 14, "static", "cpu", "inconclusive", reason="near-ties",
                   localization={"check": "input 0", "finding": "no value out of tolerance"})]
    out = tmp_path / "out"
    html = open(build_report([write_jsonl(str(tmp_path / "r.jsonl"), rows)], str(out)), encoding="utf-8").read()
    assert "first diverging node <code>/layer3/1/conv2/Mul_191</code> (Conv Mul for aten::_convolution)" in html
    assert "scope <code>layer3.1.conv2</code>" in html and "source <code>resnet.py:96</code>" in html
    assert "whose fault: <b>export</b>" in html
    assert f'<a href="{os.path.relpath(repro, out)}">minimal repro</a>' in html
    assert html.count("<circle") >= 3 and "Relu_194: 8.00e-03 of scale" in html
    assert "localization (input 0): no value out of tolerance" in html


def test_the_operators_document_tables_are_what_the_registry_declares():
    from reports.__main__ import main

    document = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "operators.md")
    assert main(["supported-ops", "--doc", document, "--check"]) == 0


def test_the_supported_ops_table_shows_declared_lowest_opsets():
    from reports.supported_ops import table

    text = table({"ops": {"aten::gather": list(OPSETS), "aten::roi_align": list(range(10, OPSETS[-1] + 1)), "aten::x": []},
                  "families": {"aten::gather": "indexing", "aten::roi_align": "torchvision_ops"}})
    assert "| indexing | `gather` |" in text and "| torchvision_ops | `roi_align` (10) |" in text
    assert "| `x`" not in text
    assert text.endswith("Refused at every opset, each with the ONNX gap that rules it out: `x`.")


def test_every_form_from_opset_17_up_has_a_row_at_its_opset_naming_registered_ops():
    from exporter.registry import REGISTRY
    from reports.supported_ops import opset_forms, registry_name

    rows = {(form["opset"], registry_name(op)) for form in opset_forms() for op in form["ops"]}
    unknown = sorted(name for _, name in rows if not REGISTRY.variants(name))
    assert not unknown, f"opset_forms.toml names ops the registry does not know: {unknown}"
    variants = {(variant.since, name) for name in REGISTRY.names() for variant in REGISTRY.variants(name)
                if variant.since >= 17}
    assert variants, "no symbolic is registered from 17 up: the check would be vacuous"
    missing = sorted(variants - rows)
    assert not missing, f"symbolics registered from 17 up with no row at their opset in opset_forms.toml: {missing}"


def test_the_workaround_table_names_runtime_gap_and_plain_form():
    from reports.registry_snapshot import take_snapshot
    from reports.supported_ops import workaround_table

    snapshot = take_snapshot()
    text = workaround_table(snapshot)
    assert snapshot["workarounds"] and f"{len(snapshot['workarounds'])} runtime workarounds" in text
    for workaround in snapshot["workarounds"]:
        assert f"| `{workaround['name']}` | {workaround['runtime']} | {workaround['gap']} |" in text


def test_the_report_says_which_cases_depend_on_a_runtime_workaround(tmp_path):
    rows = [_op("sin", 13, "pass", workarounds=["double_unary_math_in_float32"], dtypes=["float64"]),
            _op("sin", 14, "mismatch", "accuracy", "max abs error 1", workarounds=["double_unary_math_in_float32"]),
            _op("cos", 13, "pass")]
    html = open(build_report([write_jsonl(str(tmp_path / "r.jsonl"), rows)], str(tmp_path / "out")), encoding="utf-8").read()
    use = json.loads((tmp_path / "out" / "report.json").read_text())["workarounds"]
    assert use == [{"name": "double_unary_math_in_float32", "cases": 2, "passed": 1, "ops": ["sin"],
                    "examples": ["op/sin/opset13/static/cpu", "op/sin/opset14/static/cpu"]}]
    assert 'id="workarounds-table"' in html and "double_unary_math_in_float32" in html


def test_the_matrix_shows_the_registry_declared_lowest_opset(tmp_path):
    rows = [_op("roi_align", 10, "pass"), _op("gather", 11, "pass")]
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"ops": {"aten::roi_align": list(range(10, OPSETS[-1] + 1)), "aten::gather": list(OPSETS)}}))
    build_report([write_jsonl(str(tmp_path / "r.jsonl"), rows)], str(tmp_path / "out"), registry=str(registry))
    matrix = json.loads((tmp_path / "out" / "report.json").read_text())["op_matrix"]
    assert {row["op"]: row["declared_lowest"] for row in matrix} == {"gather": 7, "roi_align": 10}


_JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="upstream.test.onnx.test_pytorch_onnx_onnxruntime.TestONNXRuntime_opset_version_14_is_script_True_keep_initializers_as_inputs_True" name="test_ok"/>
<testcase classname="upstream.test.onnx.test_pytorch_onnx_onnxruntime.TestONNXRuntime_opset_version_14_is_script_False_keep_initializers_as_inputs_True" name="test_grid"><failure message="exporter.errors.UnsupportedOperatorError: aten::grid_sampler is not exportable at opset 14&#10;more"/></testcase>
<testcase classname="upstream.test.onnx.test_pytorch_onnx_onnxruntime.TestONNXRuntime_opset_version_9_is_script_True_keep_initializers_as_inputs_True" name="test_grid"><failure message="exporter.errors.UnsupportedOperatorError: at 9"/></testcase>
<testcase classname="upstream.test.onnx.test_pytorch_onnx_onnxruntime.TestONNXRuntime_opset_version_9_is_script_True_keep_initializers_as_inputs_True" name="test_loop_list"><error message="AssertionError: x"/></testcase>
<testcase classname="upstream.test.onnx.test_pytorch_onnx_onnxruntime.TestONNXRuntime_opset_version_9_is_script_False_keep_initializers_as_inputs_True" name="test_cuda"><skipped message="no GPU"/></testcase>
</testsuite></testsuites>
"""


def test_torch_suite_section_counts_per_opset_and_lists_each_failing_test_once(tmp_path):
    from reports.torch_suite import BEGIN, END, read_junit, rewrite, section

    path = tmp_path / "junit.xml"
    path.write_text(_JUNIT)
    results = read_junit([str(path)])
    assert dict(results.counts[14]) == {"passed": 1, "failed": 1}
    assert dict(results.counts[9]) == {"failed": 2, "skipped": 1}
    text = section(results, {"test_loop_*": "ONNX Loop-11 carries no sequence"}, {"14": (2930, 4)})
    assert "| 14 | 1 | 1 | 0 | 2,930 / 4 |" in text
    assert "| all | 1 | 3 | 1 |  |" in text
    assert "| `test_grid` | 9s 14t | `exporter.errors.UnsupportedOperatorError: aten::grid_sampler is not exportable at opset 14` |" in text
    assert "| `test_loop_list` | 9s | ONNX Loop-11 carries no sequence |" in text
    document = f"before\n{BEGIN}\nold\n{END}\nafter"
    assert rewrite(document, text) == f"before\n{BEGIN}\n{text}\n{END}\nafter"
    with pytest.raises(ValueError):
        rewrite("no markers", text)


def test_a_campaign_file_holds_the_generated_torch_suite_section_where_the_generator_writes_it():
    import pathlib

    from reports.__main__ import build_parser
    from reports.torch_suite import BEGIN, END, SuiteResults, rewrite, section

    assert "--measurements FILE" in BEGIN
    assert build_parser().parse_args(["torch-suite", "j.xml", "--measurements", "M.md"]).measurements == "M.md"
    folder = pathlib.Path(__file__).resolve().parents[2] / "docs" / "measurements"
    holding = [path for path in sorted(folder.glob("*.md")) if BEGIN in path.read_text(encoding="utf-8")]
    assert len(holding) == 1, f"one campaign file holds the generated section, not {holding}"
    measurements = holding[0].read_text(encoding="utf-8")
    assert measurements.count(BEGIN) == 1 and measurements.count(END) == 1
    generated = measurements[measurements.index(BEGIN) + len(BEGIN):measurements.index(END)].strip("\n")
    header = section(SuiteResults(), {}).splitlines()[0]
    assert generated.splitlines()[0] == header, "the section between the markers is not the generator's table"
    assert rewrite(measurements, generated) == measurements
