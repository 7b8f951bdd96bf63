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


def test_learner_child_runs_one_real_update_at_small_size(bench) -> None:
    threads = torch.get_num_threads()
    try:
        res = bench.learner_child(512, 8, 4, 1, 1, "cpu", "float32")
        ratios = bench.ratio_child(512, 8, 4, 1e-3, 1, "cpu", "float32")
    finally:
        torch.set_num_threads(threads)
    assert res["recompute_old"] is True and res["micro_batch"] == 8 and res["actor_steps"] > 0
    assert abs(res["sampler_kl"]) < 1e-4 and res["peak_rss_mb"] > 0
    assert 0 < res["action_tokens"] <= 8
    for key in ("clip_token", "clip_action_mean", "clip_action_sum"):
        assert 0.0 <= ratios[key] <= 1.0


def test_learner_report_states_the_target_and_the_recompute_ratio(bench) -> None:
    row = {"vocab": bench.DEFAULT_VOCAB, "new_tokens": bench.DEFAULT_NEW_TOKENS,
           "episodes": bench.DEFAULT_EPISODES, "peak_rss_mb": 3000.0, "rollout_s": 1.0,
           "update_s": 2.0}  # fmt: skip
    timing = [{**row, "recompute_old": False, "update_s": 2.0},
              {**row, "recompute_old": True, "update_s": 3.0}]  # fmt: skip
    ratio = {"lr_actor": 1e-5, "action_tokens": 500, "clip_token": 0.01,
             "clip_action_mean": 0.0, "clip_action_sum": 0.9}  # fmt: skip
    text = bench.learner_report([row], timing, [ratio])
    assert "peak 2.93 GiB (target <= 4 GiB RSS on CPU: met)" in text
    assert "recompute ratio 1.50x" in text and "summed action ratio 90.0%" in text
