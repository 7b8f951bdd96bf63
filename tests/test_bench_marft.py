"""The MARFT benchmark: its measurements run on the real policy and its report is right."""

from __future__ import annotations

import pytest
import torch
from helpers import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_marft")


def test_count_flops_matches_a_hand_count(bench) -> None:
    a, b = torch.randn(3, 5), torch.randn(5, 7)
    assert bench.count_flops(lambda: a @ b) == 2 * 3 * 5 * 7
    w = torch.randn(4, 6, requires_grad=True)
    # forward 2*2*4*6, backward (grad of w only) 2*2*4*6 more
    assert bench.count_flops(lambda: (torch.randn(2, 4) @ w).sum().backward()) == 2 * 2 * 2 * 4 * 6


def test_child_measures_the_real_policy_on_cpu(bench) -> None:
    threads = torch.get_num_threads()
    try:
        res = bench.child("tiny", 2, 3, 4, 1, 0, 1, "cpu", "float32")
    finally:
        torch.set_num_threads(threads)  # the child pins its process to the given thread count
    assert res["device"] == "cpu" and res["dtype"] == "float32" and res["agents"] == 2
    assert res["adapter_params"] > 0 and res["base_params"] > 100_000
    assert res["recompute_gflop"] > 0 and res["matmul_gflops"] > 0
    assert res["recompute_batched_s"] > 0 and res["recompute_loop_s"] > 0
    expected = res["recompute_loop_s"] / res["recompute_batched_s"]
    assert res["recompute_speedup"] == pytest.approx(expected, abs=0.01)
    assert "peak_gpu_mb" not in res  # CPU runs report RSS only


def _row(agents: int, **extra: float) -> dict:
    return {
        "model": "tiny", "agents": agents, "batch": 4, "base_params": 1000,
        "adapter_params": 10 * agents, "peak_rss_mb": 100.0 + agents, "model_state_mb": 2.0,
        "rollout_tokens_per_s": 1.0, "update_samples_per_s": 1.0,
        "recompute_speedup": 2.0 + agents, "recompute_speedup_ceiling": 9.0,
        "recompute_batched_gflops": 40.0, "matmul_gflops": 100.0,
        "device": "cuda:0" if extra else "cpu", "dtype": "float32", "threads": 1, **extra,
    }  # fmt: skip


def test_summary_uses_gpu_memory_on_cuda_and_the_worst_speedup(bench) -> None:
    cpu = bench.summarize([_row(1), _row(2), _row(4)])["tiny"]
    assert cpu["memory"] == "RSS"
    assert cpu["memory_ratio_4_vs_1"] == pytest.approx(104 / 101, abs=1e-3)
    assert cpu["min_recompute_speedup"] == 3.0
    gpu_rows = [_row(a, peak_gpu_mb=50.0 * (1 + (a == 4))) for a in (1, 2, 4)]
    gpu = bench.summarize(gpu_rows)["tiny"]
    assert gpu["memory"] == "GPU memory" and gpu["memory_ratio_4_vs_1"] == 2.0
    report = bench.format_report(gpu_rows)
    assert "peak GPU MB" in report and report.count("\n") == 4


def test_cuda_without_a_gpu_is_a_clear_error(bench, capsys: pytest.CaptureFixture[str]) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit) as exc:
        bench.main(["--device", "cuda", "--quick"])
    assert exc.value.code == 2
    assert "no CUDA device" in capsys.readouterr().err
