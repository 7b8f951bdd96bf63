"""flexmg's group learner and TRL's GRPOTrainer compute the same gradient on the same batch.

The benchmark steps a real ``GRPOTrainer`` (its advantages, ``training_step``, loss and
gradient-accumulation scaling) on the completions flexmg's learner trained on, from the
same LoRA weights. The gradients must point the same way, and differ in size only by the
two standard deviations (TRL's Bessel-corrected one vs flexmg's population one). The tiny
warm-started model is used: its rewards vary within a group, so the gradients are not zero.
"""

from __future__ import annotations

import json
import math

import pytest

from helpers import load_benchmark, require_extra

require_extra("trl", "trl")


@pytest.mark.slow  # two rollouts and four updates of the tiny model: about a minute
def test_flexmg_and_trl_take_the_same_gradient_on_the_same_batch(tmp_path) -> None:
    bench = load_benchmark("update_equivalence")
    out = tmp_path / "eq.json"
    args = ["--model", "tiny", "--steps", "2", "--prompts", "4", "--samples", "4"]
    assert bench.main([*args, "--micro-batch", "8", "--json", str(out)]) == 0
    steps = json.loads(out.read_text())["steps"]
    assert len(steps) == 2
    bessel = math.sqrt(4 / 3)  # sample std / population std over a group of 4
    learned = [s for s in steps if s["grad_norm"]["trl"] > 0]
    assert learned, "no step had a reward that varied within a group"
    for s in learned:
        assert s["advantages"]["cosine"] == pytest.approx(1.0, abs=1e-6)
        assert s["gradient"]["cosine"] > 0.999 and s["noise_floor"]["cosine"] > 0.999
        assert s["gradient"]["norm_ratio"] == pytest.approx(bessel, rel=0.01)
    first = steps[0]["weights_moved"]
    assert first["cosine"] > 0.5 and first["norm_ratio"] > 0  # both adapters moved


def test_lora_keys_and_trl_advantages() -> None:
    bench = load_benchmark("update_equivalence")
    assert bench.lora_key("base_model.model.model.layers.3.mlp.up_proj.lora_B.coder.weight") == (
        "model.layers.3.mlp.up_proj.lora_B.weight"
    )
    adv = bench.trl_advantages([1.0, 0.0, 1.0, 1.0, 0.5, 0.5], 2)
    half = 0.5 / (math.sqrt(0.5) + 1e-4)  # a group of 2: sample std sqrt(1/2)
    assert adv[:2] == pytest.approx([half, -half])
    assert adv[4:] == [0.0, 0.0]
