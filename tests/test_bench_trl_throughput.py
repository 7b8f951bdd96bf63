"""The TRL throughput benchmark runs both sides end to end (a tiny chat model) and reports
every figure, positive, with the ratios flexmg / TRL; no timing is asserted."""

from __future__ import annotations

import json

import pytest

from helpers import load_benchmark, require_extra, save_tiny_chat_model

require_extra("trl", "trl")


@pytest.mark.slow  # two child processes (flexmg's learner, TRL's GRPOTrainer): tens of seconds
def test_both_sides_report_every_figure(tmp_path, capsys) -> None:
    bench = load_benchmark("bench_trl_throughput")
    model = save_tiny_chat_model(tmp_path / "model")
    out = tmp_path / "tput.json"
    args = ["--model", str(model), "--steps", "2", "--prompts", "2", "--samples", "2"]
    args += ["--max-new-tokens", "6", "--micro-batch", "2", "--skip-first", "--json", str(out)]
    assert bench.main(args) == 0
    printed = capsys.readouterr().out
    for label in ("rollout tokens/s", "update s/step", "peak RSS MiB", "flexmg/TRL"):
        assert label in printed
    result = json.loads(out.read_text())
    assert result["same_prompts"] is True
    assert result["steps_measured"] == 1  # the first of 2 steps left out
    assert result["trl_gradient_checkpointing"] is False  # as in flexmg's learner
    for side in ("flexmg", "trl"):
        figures = result[side]
        for key in ("rollout_tokens_per_s", "rollout_s", "update_s", "step_s", "peak_rss_mb"):
            assert figures[key] > 0, (side, key)
        assert figures["completions_per_step"] == 4  # 2 prompts x 2 samples
        assert 0 < figures["generated_tokens_per_step"] <= 4 * 6
        assert len(result["raw"][side]["steps"]) == 2
    # the same chat prompts reach both models, token for token
    assert result["flexmg"]["prompt_tokens_per_step"] == result["trl"]["prompt_tokens_per_step"]
    for key, ratio in result["ratio"].items():
        assert ratio == result["flexmg"][key] / result["trl"][key]


def test_the_budget_gives_trl_flexmg_train_prompts_and_reward() -> None:
    eb = load_benchmark("equal_budget")
    budget = eb.Budget(model="tiny", steps=2, prompts=3, samples=2, micro_batch=2)
    rows = eb.trl_rows(budget, chat=True)
    assert [r["seed"] for r in rows] == eb.prompt_seeds(budget, 0) + eb.prompt_seeds(budget, 1)
    system, user = rows[0]["prompt"]
    assert system == {"role": "system", "content": eb.SOLVER_PROMPT}  # the main job's instructions
    assert rows[0]["task"] in user["content"]
    import flexmg

    env = flexmg.make(eb.ENV, **budget.env_kwargs, split="train")
    env.reset(seed=rows[0]["seed"])
    gold = env.task.answer
    env.close()
    reward = eb.env_reward(budget)
    said = [f"So \\boxed{{{gold}}}.", [{"role": "assistant", "content": f"It is {gold}."}],
            "It is -1."]  # fmt: skip
    assert reward(completions=said, seed=[rows[0]["seed"]] * 3) == [1.0, 0.9, 0.0]
    assert reward.calls == [[rows[0]["seed"]] * 3]
    with pytest.raises(ValueError, match="must divide"):
        eb.Budget(prompts=3, samples=2, micro_batch=4)


@pytest.mark.parametrize("script", ["bench_trl_throughput", "trl_grpo_baseline", "majority_vote"])
def test_a_bad_task_spec_is_one_line_before_any_model_loads(script, tmp_path, capsys) -> None:
    bench = load_benchmark(script)
    out = ["--out", str(tmp_path / "run")] if script == "trl_grpo_baseline" else []
    for tasks, said in (("{oops", "--tasks is not JSON"), ('{"name": "nope"}', "generator")):
        with pytest.raises(SystemExit) as exc:
            bench.main(["--model", "tiny", "--tasks", tasks, *out])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
