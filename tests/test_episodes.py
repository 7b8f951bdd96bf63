"""The one episode driver: rollouts of agents, PPO rollouts of a policy, and their errors."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import flexmg
from flexmg.agents.samples import collect_rollout
from flexmg.episodes import play_batch, rollout
from flexmg.evaluation import evaluation_record
from flexmg.metrics import summarize_episodes


def _echo(obs: dict) -> str:
    return obs["task"][5:] if obs["role"] == "a" else obs["context"][5:]


class EchoPolicy:
    """A stand-in team policy: echoes like the echo env wants, with made-up token data."""

    def __init__(self, wrong_for: str | None = None) -> None:
        self.wrong_for = wrong_for
        self.calls: list[tuple[str, int, bool]] = []

    def act(self, role: str, observations: list[dict], greedy: bool = False) -> SimpleNamespace:
        self.calls.append((role, len(observations), greedy))
        texts = [_echo(o) if role != self.wrong_for else "nope" for o in observations]
        n = len(texts)
        return SimpleNamespace(
            texts=texts,
            prompt_ids=[[1, 2]] * n,
            action_ids=[[3, 4, 5]] * n,
            truncated=[i % 2 == 0 for i in range(n)],
            sampler_logprobs=[[-0.1] * 3] * n,
            token_logprobs=[[-0.1] * 3] * n,
            values=[0.5] * n,
            token_values=[[0.5] * 3] * n,
            ref_token_logprobs=None,
        )


class Mute:
    def act(self, observations: list[dict]) -> list[str]:
        return []


def test_the_driver_plays_every_env_to_its_end() -> None:
    vec = flexmg.make_vec("echo", num_envs=3)
    seen: list[tuple[str, list[int]]] = []

    def record(role: str, envs: list[int], actions: list[str]) -> None:
        seen.append((role, envs))

    try:
        episodes = play_batch(vec, _echo, seed=5, on_step=record)
    finally:
        vec.close()
    assert [ep.seed for ep in episodes] == [5, 6, 7] and all(ep.success for ep in episodes)
    assert seen == [("a", [0, 1, 2]), ("b", [0, 1, 2])]


def test_a_rollout_plays_the_seeds_it_is_given() -> None:
    vec = flexmg.make_vec("echo", num_envs=2)
    try:
        counted = rollout(vec, _echo, episodes=3, seed=10)
        given = rollout(vec, _echo, episodes=3, seed=[42, 7, 7])
        with pytest.raises(ValueError, match="2 seeds for 3 episodes"):
            rollout(vec, _echo, episodes=3, seed=[1, 2])
        with pytest.raises(TypeError, match="an int or a sequence of ints"):
            rollout(vec, _echo, episodes=1, seed=1.5)  # type: ignore[arg-type]
    finally:
        vec.close()
    assert [ep.seed for ep in counted.episodes] == [10, 11, 12]
    assert [ep.seed for ep in given.episodes] == [42, 7, 7]  # the last batch's pad is dropped
    assert given.episodes[1].task_id == given.episodes[2].task_id


def test_rollouts_of_agents_and_of_a_policy_share_the_driver_and_its_errors() -> None:
    vec = flexmg.make_vec("echo", num_envs=2)
    try:
        with pytest.raises(ValueError, match="the actor for 'a' returned 0 actions for 2"):
            rollout(vec, {"a": Mute(), "b": _echo}, episodes=2)
        bad = EchoPolicy()
        bad.act = lambda role, obs, greedy=False: SimpleNamespace(texts=[])  # type: ignore[method-assign]
        with pytest.raises(ValueError, match="the actor for 'a' returned 0 actions for 2"):
            collect_rollout(bad, vec, seed=0)
        with pytest.raises(KeyError, match="no agent for role 'b'"):
            rollout(vec, {"a": _echo}, episodes=2)
        with pytest.raises(RuntimeError, match="did not finish after 1 role steps"):
            collect_rollout(EchoPolicy(), vec, seed=0, max_steps=1)
    finally:
        vec.close()


def test_a_policy_rollout_becomes_samples_and_metrics() -> None:
    vec = flexmg.make_vec("echo", num_envs=4)
    policy = EchoPolicy(wrong_for="b")
    try:
        batch = collect_rollout(policy, vec, seed=0, greedy=True)
    finally:
        vec.close()
    assert policy.calls == [("a", 4, True), ("b", 4, True)]
    assert [[(s.role, s.turn) for s in ep] for ep in batch.episodes] == [[("a", 0), ("b", 1)]] * 4
    assert all(s.last_in_round == (s.role == "b") for s in batch.samples)
    assert batch.metrics[0]["truncated_actions"] == 2  # row 0 of both role batches
    assert batch.metrics[0]["per_role"]["a"]["truncated"] is True
    summary = summarize_episodes(batch.metrics)
    assert batch.success_rate == summary["success_rate"] == 0.0
    assert batch.mean_team_reward == summary["team_reward"]
    assert summary["per_role"]["a"]["truncated"] == 0.5


def test_every_summary_is_a_view_of_flexmg_metrics() -> None:
    vec = flexmg.make_vec("echo", num_envs=3)
    try:
        result = rollout(vec, {"a": _echo, "b": _echo}, episodes=5, seed=0)
    finally:
        vec.close()
    metrics = [ep.metrics for ep in result.episodes]
    s = summarize_episodes(metrics)
    assert result.summary() == {
        "episodes": 5,
        "success_rate": s["success_rate"],
        "mean_score": s["score"],
        "mean_rounds": s["rounds"],
        "per_role": s["role_means"],
    }
    assert result.success_rate == s["success_rate"] == 1.0 and result.mean_score == s["score"]
    record = evaluation_record(metrics)
    for key in ("episodes", "prompts", "success_rate"):
        assert record[key] == s[key]  # type: ignore[literal-required]
    # echo names no graded role: the team's format and correctness are absent, not 0.0
    assert "format_rate" not in record and "correct_rate" not in record
    assert record["team_reward"] == s["team_reward"] and record["rounds"] == s["rounds"]
    assert record["per_role"] == s["per_role"]
