"""The GPU release-gating workflow parses, and every command it runs is accepted by the CLI it calls.

The commands are checked against the project's real argument parsers (the conformance runner, the gate, the
report builder), with the matrix expressions filled in, so a renamed flag breaks this test rather than a
release night on the GPU runners.
"""

from __future__ import annotations

import pathlib
import re
import shlex

import yaml

from conformance import cases
from conformance.__main__ import build_parser as conformance_parser
from conformance.gate import build_parser as gate_parser
from reports.__main__ import build_parser as reports_parser

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "gpu-conformance.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _nox_calls(job: dict, session: str, **expressions: str) -> list[list[str]]:
    """The argument lists after ``nox -s SESSION --`` in the job's run steps, with ``${{ ... }}`` filled in."""
    calls = []
    for step in job["steps"]:
        script = step.get("run", "").replace("\\\n", " ")
        script = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: expressions[m.group(1)], script)
        for line in script.splitlines():
            words = shlex.split(line)
            if f"-s {session}" in " ".join(words) and "--" in words:
                calls.append(words[words.index("--") + 1:])
    return calls


def test_shard_jobs_run_every_shard_of_the_full_tier_on_cuda_and_cpu():
    workflow = _workflow()
    job = workflow["jobs"]["conformance"]
    assert "gpu" in job["runs-on"]
    shards = job["strategy"]["matrix"]["shard"]
    count = int(workflow["env"]["SHARDS"])
    assert shards == list(range(count)), "--shard i/N is 0-based: the matrix must list 0..N-1"
    for shard in shards:
        (args,) = _nox_calls(job, "conformance", **{"matrix.shard": str(shard), "env.SHARDS": str(count)})
        parsed = conformance_parser().parse_args(["run", *args])
        assert parsed.tier == "full"
        assert set(cases.providers_for(parsed.ep, parsed.tier)) == {"cpu", "cuda"}
        assert parsed.shard == (shard, count)
        assert parsed.out == f"results/shard-{shard}.jsonl"
        uploaded = _upload_paths(job, shard)
        assert parsed.out in uploaded and f"results/shard-{shard}.repro/" in uploaded


def test_a_gpu_job_runs_every_test_marked_cuda():
    """On a GPU runner the CUDA tests run instead of skipping: pytest's marker selection over the default paths."""
    job = _workflow()["jobs"]["cuda-tests"]
    assert "gpu" in job["runs-on"]
    (args,) = _nox_calls(job, "tests")
    assert args == ["-m", "cuda"]
    import tomllib

    from op_tests import test_ops
    from tests.harness import test_cuda

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("cuda:") for m in declared), "--strict-markers rejects an undeclared marker"
    assert "cuda" in {m.name for m in test_cuda.pytestmark}
    assert "cuda" in {m.name for m in test_ops.test_op_cuda.pytestmark}


def _upload_paths(job: dict, shard: int) -> list[str]:
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    return uploads[0]["with"]["path"].replace("${{ matrix.shard }}", str(shard)).split()


def _as_the_job_sees_them(tmp_path, monkeypatch, paths: list[str]) -> None:
    """The CLIs check that input files exist: create the artifacts the job's earlier steps leave, in a scratch folder."""
    monkeypatch.chdir(tmp_path)
    for path in paths:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "baselines").symlink_to(ROOT / "baselines")


def test_gate_job_merges_reports_and_gates_against_the_committed_full_baseline(tmp_path, monkeypatch):
    job = _workflow()["jobs"]["gate"]
    assert job["needs"] == "conformance"
    (merge,) = _nox_calls(job, "conformance")
    shards = [arg for arg in merge if "*" in arg]
    assert shards == ["shards/results/shard-*.jsonl"], "the shell expands the shard glob"
    _as_the_job_sees_them(tmp_path, monkeypatch, ["shards/results/shard-0.jsonl", "results/merged.jsonl"])
    merge = [str(p) for arg in merge for p in (sorted(tmp_path.glob(arg)) if "*" in arg else [arg])]
    parsed = conformance_parser().parse_args(merge)
    assert parsed.command == "merge"
    (report,) = _nox_calls(job, "report")
    report_args = reports_parser().parse_args(["build", *report])
    assert report_args.results == [parsed.out]
    (gate,) = _nox_calls(job, "gate")
    gate_args = gate_parser().parse_args(gate)
    assert [str(p) for p in gate_args.results] == [parsed.out]
    assert str(gate_args.baseline) == report_args.baseline == "baselines/conformance_full.jsonl"
    assert (ROOT / gate_args.baseline).exists(), "the gate needs a committed baseline"
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and report_args.out in uploads[0]["with"]["path"]
