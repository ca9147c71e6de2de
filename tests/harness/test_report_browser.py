"""The report in a real headless Chromium: it loads offline without console errors, filters, drills down.

Chromium comes from Debian's packages (reports/ensure_chromium.sh installs it when absent); where it cannot be
installed the tests skip with the reason. A full-page screenshot is left in results/report_screenshot.png.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from reports.browser import Chromium, ensure_chromium, run_headless
from reports.build import build_report
from reports.results import OPSETS
from tests.harness.test_reports import (
    crafted_model_rows,
    crafted_op_rows,
    real_op_rows,
    registry_snapshot_for_fixtures,
    write_jsonl,
)

pytestmark = pytest.mark.browser

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCREENSHOT = os.path.join(REPO, "results", "report_screenshot.png")


@pytest.fixture(scope="module")
def chromium() -> str:
    try:
        return ensure_chromium()
    except (RuntimeError, OSError) as error:
        pytest.skip(f"no headless Chromium here: {error}")


@pytest.fixture(scope="module")
def report_url(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("browser_report")
    results = root / "results"
    results.mkdir()
    write_jsonl(str(results / "op_tests.jsonl"), real_op_rows(str(root)) + crafted_op_rows())
    write_jsonl(str(results / "conformance.jsonl"), crafted_model_rows())
    baseline = [dict(r, status="pass", error="") if r["name"] == "fcn_resnet50" else r for r in crafted_model_rows()]
    write_jsonl(str(root / "baseline.jsonl"), baseline)
    (root / "registry.json").write_text(json.dumps(registry_snapshot_for_fixtures()))
    html = build_report([str(results)], str(root / "report"), registry=str(root / "registry.json"),
                        baseline_path=str(root / "baseline.jsonl"))
    return "file://" + html


@pytest.fixture(scope="module")
def page(chromium, report_url):
    with Chromium(chromium) as browser:
        page = browser.new_page()
        page.open(report_url)
        yield page


def _visible(page, selector: str) -> list[str]:
    return page.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})].filter(r => !r.hidden)"
                         ".map(r => r.dataset.op || r.dataset.name)")


def _set(page, selector: str, value) -> None:
    """Set a filter control as a reader would, firing the events the page listens to."""
    prop = "checked" if isinstance(value, bool) else "value"
    page.evaluate(f"(() => {{ const c = document.querySelector({json.dumps(selector)}); c.{prop} = {json.dumps(value)};"
                  " c.dispatchEvent(new Event('input', {bubbles: true})); c.dispatchEvent(new Event('change', {bubbles: true})); })()")


def test_loads_offline_without_console_errors(page):
    assert page.evaluate("document.body.dataset.ready") == "1"
    assert page.problems() == []
    assert all(url.startswith(("file:", "data:")) for url in page.requested_urls()), page.requested_urls()


def test_matrix_and_tables_are_present(page):
    assert sorted(_visible(page, "#matrix-table tbody tr")) == [
        "cumsum", "erf", "gather", "linear", "max_pool2d", "nonzero", "roi_align", "softmax"]
    assert page.evaluate("document.querySelectorAll('#matrix-table tbody tr:first-child button.cell').length") == len(OPSETS)
    outcomes = page.evaluate("[...document.querySelectorAll('#matrix-table button.cell')].map(b => b.dataset.outcome)")
    assert {"pass", "mismatch", "ort_kernel_missing", "not_registered", "export_error", "checker_error",
            "unsupported", "ort_run_error", "no_data"} <= set(outcomes)
    assert page.evaluate("document.querySelectorAll('#models-table tbody tr[data-name]').length") == len(crafted_model_rows())
    assert page.evaluate("document.querySelectorAll('#coverage-table tbody tr').length") > 5
    assert page.evaluate("document.querySelectorAll('svg.chart').length") == 2
    fcn_failures = sum(1 for r in crafted_model_rows() if r["name"] == "fcn_resnet50" and r["status"] != "pass")
    assert f"New failures ({fcn_failures})" in page.evaluate("document.getElementById('baseline').innerText")


def test_matrix_filters(page):
    _set(page, "[data-table=matrix][data-filter=q]", "pool")
    assert _visible(page, "#matrix-table tbody tr") == ["max_pool2d"]
    assert page.evaluate("document.querySelector('[data-shown=matrix]').textContent") == "Showing 1 of 8"
    _set(page, "[data-table=matrix][data-filter=q]", "")
    _set(page, "[data-table=matrix][data-filter=outcome]", "ort_kernel_missing")
    assert _visible(page, "#matrix-table tbody tr") == ["nonzero"]
    _set(page, "[data-table=matrix][data-filter=outcome]", "")
    _set(page, "[data-table=matrix][data-filter=failing]", True)
    assert sorted(_visible(page, "#matrix-table tbody tr")) == ["cumsum", "erf", "gather", "nonzero", "softmax"]
    assert "matrix.failing=1" in page.evaluate("location.hash")  # the filtered view is a shareable link
    _set(page, "[data-table=matrix][data-filter=failing]", False)
    assert len(_visible(page, "#matrix-table tbody tr")) == 8


def test_models_filters(page):
    _set(page, "[data-table=models][data-filter=bucket]", "failed")
    shown = page.evaluate("[...document.querySelectorAll('#models-table tbody tr[data-name]')].filter(r => !r.hidden)"
                          ".map(r => r.dataset.bucket + ':' + r.dataset.name)")
    expected_failures = sum(1 for r in crafted_model_rows() if r["status"] in ("mismatch", "export_error", "timeout"))
    assert len(shown) == expected_failures and all(s.startswith("failed:") for s in shown)
    _set(page, "[data-table=models][data-filter=opset]", "9")
    assert sorted(_visible(page, "#models-table tbody tr[data-name]")) == ["fcn_resnet50"]
    visible_text = page.evaluate("[...document.querySelectorAll('#models-table tbody tr')].filter(r => !r.hidden)"
                                 ".map(r => r.innerText).join(' ')")
    assert "python -m conformance run --case model/fcn_resnet50/opset9" in visible_text
    assert "opset10" not in visible_text  # the hidden failures' error rows are hidden with them
    _set(page, "[data-table=models][data-filter=bucket]", "")
    _set(page, "[data-table=models][data-filter=opset]", "")


def test_cell_drill_down(page):
    page.evaluate("document.querySelector('#matrix-table tr[data-op=softmax] button[data-opset=\"12\"]').click()")
    assert page.evaluate("document.getElementById('drilldown').hidden") is False
    text = page.evaluate("document.getElementById('drilldown').innerText")
    assert "softmax at opset 12" in text and "float16" in text and "cuda" in text
    assert "max abs error 0.0031" in text and "1/2 passed" in text
    page.evaluate("document.querySelector('#drilldown .close').click()")
    assert page.evaluate("document.getElementById('drilldown').hidden") is True
    page.evaluate("document.querySelector('#models-grid button[data-opset=\"9\"][data-outcome=mismatch]').click()")
    assert "fcn_resnet50 (trace) at opset 9" in page.evaluate("document.getElementById('drilldown').innerText")
    page.evaluate("document.querySelector('#drilldown .close').click()")
    assert page.problems() == []


def test_screenshot(page):
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    page.screenshot(SCREENSHOT)
    with open(SCREENSHOT, "rb") as handle:
        assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(SCREENSHOT) > 50_000


def test_dump_dom_after_filtering_from_the_url(chromium, report_url):
    """Chromium's --dump-dom, with the filter state in the URL fragment as a shared link carries it."""
    done = run_headless(chromium, report_url + "#matrix.q=gather&models.kind=example", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    matrix_rows = [(tag, op) for tag, op in re.findall(r'(<tr [^>]*data-op="([^"]+)" data-family[^>]*>)', dom)]
    assert [op for tag, op in matrix_rows if " hidden" not in tag] == ["gather"]
    assert len(matrix_rows) == 8
    model_rows = re.findall(r'(<tr [^>]*data-name="[^"]+" data-kind="(\w+)"[^>]*>)', dom)
    assert {kind for tag, kind in model_rows if " hidden" not in tag} == {"example"}
    assert len(model_rows) == len(crafted_model_rows())
