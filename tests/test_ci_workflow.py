"""The GPU release-gating workflow parses and has the shard, merge, gate and artifact steps."""

from __future__ import annotations

import pathlib

import yaml

WORKFLOW = pathlib.Path(__file__).resolve().parents[1] / ".github" / "workflows" / "gpu-conformance.yml"


def test_workflow_parses_and_wires_shards_merge_gate_and_artifacts():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    jobs = workflow["jobs"]
    shard_job, gate_job = jobs["conformance"], jobs["gate"]
    assert "gpu" in shard_job["runs-on"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    shard_script = " ".join(step.get("run", "") for step in shard_job["steps"])
    assert "--tier full" in shard_script and "--ep cuda" in shard_script and "--shard" in shard_script
    assert gate_job["needs"] == "conformance"
    gate_script = " ".join(step.get("run", "") for step in gate_job["steps"])
    assert "merge" in gate_script and "nox -s gate" in gate_script and "nox -s report" in gate_script
    uploads = [s for s in gate_job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "report" in uploads[0]["with"]["path"]
