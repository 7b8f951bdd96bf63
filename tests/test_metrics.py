"""flexmg.metrics.summarize_episodes on real episodes and on odd metric dicts."""

from __future__ import annotations

import pytest

import flexmg
from flexmg.agents.episodes import rollout
from flexmg.baselines.scripted import make_oracle
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
