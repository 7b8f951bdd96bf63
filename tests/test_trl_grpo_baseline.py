"""The TRL GRPO baseline trains with a real GRPOTrainer on flexmg's prompts and reward, saves
its adapter in peft's layout (loadable in plain transformers) and scores it against the base
model on the same test prompts (a tiny chat model, two steps; no timing asserted)."""

from __future__ import annotations

import json

import pytest

from helpers import load_benchmark, require_extra, save_tiny_chat_model

require_extra("trl", "trl")


@pytest.mark.slow  # two GRPO steps of a real trainer, then two evaluations: tens of seconds
def test_trains_saves_a_peft_adapter_and_evaluates_it(tmp_path, capsys) -> None:
    bench = load_benchmark("trl_grpo_baseline")
    model = save_tiny_chat_model(tmp_path / "model")
    run = tmp_path / "run"
    args = ["--model", str(model), "--steps", "2", "--prompts", "2", "--samples", "2"]
    args += ["--max-new-tokens", "6", "--micro-batch", "2"]
    assert bench.main([*args, "--out", str(run)]) == 0
    record = json.loads((run / "run.json").read_text())
    assert len(record["step_seconds"]) == 2 and all(s > 0 for s in record["step_seconds"])
    assert len(record["reward"]) == 2 and all(0.0 <= r <= 1.0 for r in record["reward"])
    assert record["gradient_checkpointing"] is False and record["loss_type"]
    eb = load_benchmark("equal_budget")
    budget = eb.Budget.from_dict(record["budget"])
    assert record["prompts_trained"] == [eb.prompt_seeds(budget, k) for k in range(2)]

    # peft's layout: plain transformers + peft load it, no flexmg code involved
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    config = json.loads((run / "adapter" / "adapter_config.json").read_text())
    assert config["r"] == 16 and config["lora_alpha"] == 32
    assert set(config["target_modules"]) == set(eb.LORA_TARGETS)
    tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model), run / "adapter")
    assert any("lora_B" in n for n, _ in tuned.named_parameters())

    with pytest.raises(SystemExit):  # a second run into the same folder is refused
        bench.main([*args, "--out", str(run)])
    capsys.readouterr()
    assert bench.main(["--evaluate", str(run), "--prompts", "3"]) == 0
    assert "base model vs adapter" in capsys.readouterr().out
    report = json.loads((run / "report.json").read_text())["test"]
    assert report["prompts"] == 3 and report["samples_per_prompt"] == 1
    for mode in ("greedy", "sampled"):
        figure = report["team"][mode]["correct"]
        assert {"start", "end", "gain", "gain_ci"} <= set(figure)
        assert figure["gain"] == pytest.approx(figure["end"] - figure["start"], abs=1e-3)
    assert sum(report["team"]["transitions"].values()) == 3
    per_minute = json.loads((run / "report.json").read_text())["gain_per_train_minute"]
    assert set(per_minute) == {"greedy", "sampled"}
    assert (run / "report.md").read_text().startswith("# TRL GRPOTrainer")
    kept = json.loads((run / "report_2.episodes.json").read_text())  # for seeds_report --against
    assert kept["key"] == "3-0-1" and set(kept["start"]) == set(kept["end"]) == {"test"}


def test_unseen_phrasings_keep_the_trained_prompt() -> None:
    """Held-out sets differ from the test split only in the task's phrasing (not the instructions)."""
    bench = load_benchmark("trl_grpo_baseline")
    eb = load_benchmark("equal_budget")
    budget = eb.Budget.from_dict({**eb.Budget().to_dict(), "solver_prompt": "Solve it."})
    sets = bench.evaluation_sets(budget, 5, 3)
    (test, n_test), (unseen, n_unseen) = sets["test"], sets["unseen phrasings"]
    assert (n_test, n_unseen) == (5, 3)
    assert unseen["prompts"] == test["prompts"] == {"solver": "Solve it."}
    assert unseen["tasks"] == {**test["tasks"], "phrasing": "unseen"}
