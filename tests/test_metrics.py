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
