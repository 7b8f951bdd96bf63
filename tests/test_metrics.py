"""flexmg.metrics.summarize_episodes on real episodes and on odd metric dicts."""

from __future__ import annotations

import pytest

import flexmg
from flexmg.baselines.scripted import make_oracle
from flexmg.episodes import rollout
from flexmg.metrics import summarize_episodes


def test_summary_of_oracle_episodes_on_a_real_env() -> None:
    vec = flexmg.make_vec("math-2agent", num_envs=3, split="eval")
    try:
        result = rollout(vec, make_oracle(vec), episodes=3, seed=0, progress=False)
    finally:
        vec.close()
    s = summarize_episodes(ep.metrics for ep in result.episodes)
    assert s["episodes"] == 3
    assert s["success_rate"] == 1.0 and s["score"] == 1.0
    assert s["graded_role"] in ("solver", "verifier")
    assert set(s["format_error"]) == {"solver", "verifier"}
    assert all(rate == 0.0 for rate in s["format_error"].values())


def test_empty_and_odd_values() -> None:
    empty = summarize_episodes([])
    assert empty["episodes"] == 0 and empty["success_rate"] == 0.0 and empty["format_error"] == {}
    odd = summarize_episodes([
        {"score": None, "rounds": "two", "team_reward": 1, "per_role": "not a dict"},
        {"success": 1, "score": "0.5", "per_role": {"a": {"format_error": 1}, "b": "x"}},
    ])  # fmt: skip
    assert odd["success_rate"] == 0.5 and odd["score"] == 0.25 and odd["rounds"] == 0.0
    assert odd["team_reward"] == 0.5 and odd["format_error"] == {"a": 1.0}


def test_a_non_dict_episode_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"item 1 is EpisodeResult|item 1 is str"):
        summarize_episodes([{}, "episode"])


def test_format_correctness_per_role_and_role_means() -> None:
    right = {"format_ok": True, "answer_correct": True, "chars": 10, "note": "text"}
    unboxed = {"format_ok": False, "answer_correct": True, "truncated": True}
    s = summarize_episodes([
        {"task_id": "t1", "success": True, "graded_role": "v", "per_role": {"s": right, "v": right}},
        {"task_id": "t1", "success": False, "graded_role": "v", "per_role": {"v": unboxed}},
    ])  # fmt: skip
    assert s["prompts"] == 1 and s["format_rate"] == 0.5 and s["correct_rate"] == 1.0
    assert s["per_role"]["v"] == {"success": 0.5, "format": 0.5, "correct": 1.0, "truncated": 0.5}
    assert s["per_role"]["s"] == {"success": 1.0, "format": 1.0, "correct": 1.0, "truncated": 0.0}
    # role_means: every numeric per-role metric over all episodes (a missing one counts 0)
    assert s["role_means"]["s"] == {"format_ok": 0.5, "answer_correct": 0.5, "chars": 5.0}
    assert s["role_means"]["v"]["truncated"] == 0.5


def test_prompt_intervals_resample_prompts() -> None:
    from flexmg.metrics import prompt_intervals

    many = [{"task_id": f"p{i}", "success": i % 2 == 0} for i in range(40)]
    ci = prompt_intervals(many)
    assert ci["success_rate"] is not None and ci["success_rate"][0] < 0.5 < ci["success_rate"][1]
    assert ci["format_rate"] == [0.0, 0.0]
    assert prompt_intervals(many[:1]) == dict.fromkeys(
        ("success_rate", "format_rate", "correct_rate", "team_reward")
    )
    # The mean team reward (a code team's test score) gets its interval too.
    scored = [{"task_id": f"p{i}", "team_reward": (i % 4) / 4} for i in range(40)]
    lo, hi = prompt_intervals(scored)["team_reward"]
    assert lo < 0.375 < hi and hi - lo < 0.4


def test_seeds_evaluated_on_the_same_prompts_count_the_prompts_once() -> None:
    from flexmg.metrics import bootstrap_ci, bootstrap_ci_over_seeds, prompt_values

    table = {f"p{i}": [float(i % 3 == 0)] * (1 + i % 2) for i in range(40)}
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    one = bootstrap_ci(table)
    shared = bootstrap_ci_over_seeds([table] * 3, shared_prompts=True)
    apart = bootstrap_ci_over_seeds([table] * 3)
    assert one and shared and apart
    # three identical seeds on one prompt set are one seed's evidence, not three
    assert abs(width(shared) - width(one)) < 0.2 * width(one)
    assert width(apart) < 0.75 * width(one)  # what treating the prompts as new would claim
    better = {p: [1.0] * len(v) for p, v in table.items()}
    assert width(bootstrap_ci_over_seeds([table, better], shared_prompts=True)) > width(shared)
    assert bootstrap_ci_over_seeds([{"a": [1.0]}] * 2, shared_prompts=True) is None
    episodes = [{"task_id": "a", "team_reward": 0.5}, {"task_id": "a", "success": True}]
    assert prompt_values(episodes, "team_reward") == {"a": [0.5, 0.0]}
    with pytest.raises(ValueError, match="key must be one of"):
        prompt_values(episodes, "score")


def test_learning_curve_intervals_over_seeds_and_shared_prompts(tmp_path) -> None:
    from flexmg.agents.evaluation import write_eval_episodes
    from helpers import load_benchmark

    learning_curve = load_benchmark("learning_curve")
    runs = []
    for seed, right in enumerate((30, 34)):  # of 40 prompts, right at the end
        run = tmp_path / f"seed{seed}"
        start = [{"task_id": f"p{i}", "success": i < 10} for i in range(40)]
        end = [{"task_id": f"p{i}", "success": i < right} for i in range(40)]
        write_eval_episodes(run, 0, start)
        write_eval_episodes(run, 30, end)
        runs.append(run)
    pooled = learning_curve.over_seeds(runs)
    s = pooled["success"]
    assert (s["seeds"], s["prompts"], s["start"], s["end"]) == (2, 40, 0.25, 0.8)
    assert s["gain"] == pytest.approx(0.55)
    assert s["start_ci"][0] < 0.25 < s["start_ci"][1] and s["end_ci"][0] < 0.8 < s["end_ci"][1]
    assert 0 < s["gain_ci"][0] < 0.55 < s["gain_ci"][1]
    assert s["shared_prompts"] is True
    other = tmp_path / "other-prompts"
    write_eval_episodes(other, 0, [{"task_id": f"q{i}", "success": i < 5} for i in range(40)])
    write_eval_episodes(other, 30, [{"task_id": f"q{i}", "success": i < 20} for i in range(40)])
    apart = learning_curve.over_seeds([*runs, other])["success"]
    assert apart["shared_prompts"] is False and apart["prompts"] == 80
    (tmp_path / "bare").mkdir()
    assert learning_curve.over_seeds([*runs, tmp_path / "bare"]) is None
