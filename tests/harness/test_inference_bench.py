"""The inference benchmark's machinery (``benchmarks.inference``) on one tiny model, two rounds: the full run is
``nox -s bench``."""

from __future__ import annotations

import pytest
import torch

import exporter
from benchmarks.inference import OURS, PEERS, SIDES, bench_one, markdown, op_type_profile, settings
from benchmarks.inference_models import MODELS


@pytest.fixture(scope="module")
def row():
    return bench_one("tiny_mlp", 20, rounds=2, runs_per_round=1)


def test_every_exporter_writes_a_file_whose_outputs_match_pytorch(row):
    for side in SIDES:
        stats = row["files"][side]
        assert stats["node_count"] == sum(stats["op_histogram"].values()) > 0
        assert stats["file_size"] > 0 and stats["opset_written"] == 20
        measured = [s for s, how in settings().items() if not isinstance(how, str)]
        assert set(stats["checks"]) == set(measured)
        assert all(check["outputs_ok"] for check in stats["checks"].values())


def test_latencies_and_ratios_against_the_faster_of_torch_onnx(row):
    for setting, how in settings().items():
        times = row["latency_ms"][setting]
        if isinstance(how, str):  # skipped, with its reason
            assert times == how and how.startswith("skipped: ")
            continue
        assert set(times) == set(SIDES) and all(t > 0 for t in times.values())
        best_peer = min(times[side] for side in PEERS)
        assert row["ratios"][setting] == {side: times[side] / best_peer for side in OURS}
        cpu = row["cpu_ms"][setting]
        assert set(cpu) == set(SIDES) and all(t > 0 for t in cpu.values())
        assert row["cpu_ratios"][setting] == {side: cpu[side] / min(cpu[p] for p in PEERS) for side in OURS}


def test_cuda_is_measured_only_where_there_is_a_device(row):
    cuda = row["latency_ms"]["cuda"]
    assert isinstance(cuda, str) != torch.cuda.is_available() or "provider" in cuda


def test_markdown_lists_each_setting_with_ratios(row):
    text = markdown([row])
    ratio, cpu = row["ratios"]["cpu_1_thread"]["ours_ts"], row["cpu_ratios"]["cpu_1_thread"]["ours_ts"]
    assert "### ONNX Runtime latency, cpu 1 thread" in text and f"| {ratio:.2f} ({cpu:.2f}) |" in text
    assert f"| tiny_mlp | 20 | {row['files']['ours_ts']['node_count']} / " in text


def test_op_type_profile_accounts_kernel_time_per_op_type(tmp_path):
    case = MODELS["tiny_mlp"]()
    path = str(tmp_path / "model.onnx")
    exporter.export(case.model, case.args, path, opset_version=20, dynamo=False, **case.export_kwargs())
    profile = op_type_profile(path, case, runs=2)
    assert profile and all(us > 0 for us in profile.values())
    assert any(op in profile for op in ("MatMul", "Gemm", "FusedGemm", "FusedMatMul"))
