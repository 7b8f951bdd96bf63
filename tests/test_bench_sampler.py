"""The sampler benchmark: dropping stopped rows decodes the same actions as keeping them."""

from __future__ import annotations

from helpers import load_benchmark


def test_dropping_stopped_rows_draws_the_same_actions_on_the_tiny_model(tmp_path) -> None:
    bench = load_benchmark("bench_sampler")
    res = bench.main(["--model", "tiny", "--episodes", "6", "--group", "2",
                      "--max-new-tokens", "12", "--repeats", "1",
                      "--json", str(tmp_path / "s.json")])  # fmt: skip
    assert res["identical_actions"] >= 5  # of 6: a rounding-level flip at most
    assert res["generated_tokens"] > 0 and res["longest_action"] <= 12
    assert set(res["median_s"]) == {"drop stopped rows", "keep every row"}
    assert (tmp_path / "s.json").exists()
