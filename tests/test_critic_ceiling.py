"""benchmarks/critic_ceiling.py: the explained-variance ceiling of a critic of the prompt."""

from __future__ import annotations

import json
import random

from helpers import load_benchmark

ceiling = load_benchmark("critic_ceiling")


def test_estimate_recovers_the_true_between_prompt_share() -> None:
    rng = random.Random(0)
    k, probs = 8, [rng.choice([0.0, 0.05, 0.2, 0.6]) for _ in range(4000)]
    mean = sum(probs) / len(probs)
    true_share = (sum((p - mean) ** 2 for p in probs) / len(probs)) / (mean * (1 - mean))
    rates = [sum(rng.random() < p for _ in range(k)) / k for p in probs]
    naive = (sum((r - mean) ** 2 for r in rates) / len(rates)) / (mean * (1 - mean))
    est = ceiling.between_prompt_share(rates, k)
    assert abs(est - true_share) < 0.03
    assert naive - true_share > 0.05  # the observed rates alone would overstate it


def test_cli_reads_majority_vote_rows(tmp_path, capsys) -> None:
    rows = [{"sampled_correct": r} for r in (0.0, 0.0, 0.125, 0.5, 0.875, 1.0)]
    path = tmp_path / "votes.json"
    path.write_text(json.dumps({"k": 8, "rows": rows}))
    assert ceiling.main([str(path), "--resamples", "50"]) == 0
    assert "ceiling of a critic of the prompt" in capsys.readouterr().out
    path.write_text("{}")
    assert ceiling.main([str(path)]) == 2
