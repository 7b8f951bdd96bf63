"""The split family: the holder's part is needed; a mute holder leaves the solver at chance."""

from __future__ import annotations

import pytest

import flexmg
from flexmg.envs.families.split import SplitConfig, solve_from, split_oracle
from flexmg.test import api_test

EPISODES = 120


def _play(holder, seed: int, env=None):
    """One episode: ``holder(obs)`` writes the holder's message; the solver is scripted."""
    env = env or flexmg.make("split-2agent")
    env.reset(seed=seed)
    env.step(holder(env.observe("holder")))
    obs = env.observe("solver")
    env.step(solve_from(obs["context"], obs["task"]))
    return env.episode_metrics


def test_pettingzoo_api_test_passes() -> None:
    report = api_test("split-2agent", num_cycles=5, verbose=False)
    assert report.passed, report.summary()


def test_each_role_sees_only_its_part() -> None:
    env = flexmg.make("split-2agent")
    for seed in range(20):
        env.reset(seed=seed)
        a, b, op = (env.task.meta[k] for k in ("a", "b", "op"))
        assert env.observe("holder")["task"] == f"A = {a}"
        assert env.observe("solver")["task"] == (
            f"Compute A {op} B, where B = {b}. Only the holder knows A."
        )


def test_the_oracle_team_scores_one() -> None:
    env = flexmg.make("split-2agent")
    scores = [_play(lambda obs: obs["task"], seed, env)["score"] for seed in range(EPISODES)]
    assert sum(scores) / len(scores) == pytest.approx(1.0)
    env.reset(seed=1)  # the family's task-level oracle too
    env.step(split_oracle(env.task, "holder", "", graded=False))
    env.step(split_oracle(env.task, "solver", "", graded=True))
    assert env.episode_metrics["success"]


@pytest.mark.parametrize("mute", ["", "ok", "I read it.", "The number is secret."])
def test_a_mute_holder_leaves_the_solver_at_chance(mute: str) -> None:
    env = flexmg.make("split-2agent")
    runs = [_play(lambda obs: mute, seed, env) for seed in range(EPISODES)]
    right = sum(m["answer_correct"] for m in runs) / len(runs)
    # chance: guessing A among 90 values is ~0.011; 3/120 leaves room for ties of the guess
    assert right <= 3 / EPISODES


@pytest.mark.parametrize(
    "hostile",
    [
        "9" * 200_000,
        "A = " + "\u202e\U0001f600" * 5000,
        "```python\nimport os; os.system('x')\n```",
        "\\boxed{" * 3000,
        "\ud800 A = 3",
    ],
)
def test_hostile_text_never_crashes_and_is_scored_with_a_reason(hostile: str) -> None:
    env = flexmg.make("split-2agent")
    env.reset(seed=2)
    env.step(hostile)
    env.step(hostile)
    metrics = env.episode_metrics
    assert metrics["score"] in (0.0, 0.1, 0.9, 1.0)
    assert metrics["per_role"]["solver"]["grade_reason"]
    assert metrics["grade_reason"]


def test_config_validates() -> None:
    with pytest.raises(ValueError, match="ops must be"):
        flexmg.make("split-2agent", tasks={"ops": ["**"]})
    with pytest.raises(ValueError, match="low < high"):
        SplitConfig(low=50, high=10).validate()
    env = flexmg.make("split-2agent", tasks={"low": 2, "high": 3, "ops": ["*"]})
    env.reset(seed=0)
    assert env.task.meta["op"] == "*" and env.task.meta["a"] in (2, 3)
