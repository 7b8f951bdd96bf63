"""The sampler benchmark: each saving of the sampler decodes the same actions as its reference."""

from __future__ import annotations

from helpers import load_benchmark


def test_each_saving_draws_the_same_actions_on_the_tiny_model(tmp_path) -> None:
    bench = load_benchmark("bench_sampler")
    res = bench.main(["--model", "tiny", "--episodes", "6", "--group", "2",
                      "--max-new-tokens", "12", "--repeats", "1",
                      "--json", str(tmp_path / "s.json")])  # fmt: skip
    assert set(res["identical_actions"]) == {"prefill every row", "keep every row"}
    assert all(n >= 5 for n in res["identical_actions"].values())  # of 6: one rounding flip
    assert res["generated_tokens"] > 0 and res["longest_action"] <= 12
    assert set(res["median_s"]) == {"flexmg", "prefill every row", "keep every row"}
    assert (tmp_path / "s.json").exists()
