"""Property-based fuzzing of whole episodes: every turn's action is arbitrary LLM-like text.

For random texts (any unicode, lone surrogates, control characters, answer and code
fences, very long strings), mixed across roles and rounds: no exception, every
observation lies in its space, rewards are finite, each role's rewards over the
episode sum to the episode's score, and the episode ends with its metrics.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flexmg

_any_char = st.characters(codec=None)  # every code point, lone surrogates included
_fragments = st.sampled_from(
    [
        "\\boxed{",
        "}",
        "\\boxed{42}",
        "\\frac{1}{0}",
        "```python\n",
        "```",
        "def solve(*a):\n    return 0\n",
        "while True: pass\n",
        "import os; os._exit(0)\n",
        "assert False\n",
        "\x00",
        "\ud800",
    ]
)
_actions = st.one_of(
    st.text(_any_char, max_size=200),
    st.lists(st.one_of(_fragments, st.text(_any_char, max_size=20)), max_size=12).map("".join),
    st.integers(min_value=10_000, max_value=60_000).map(lambda n: "9" * n),
)


def _play(env: Any, actions: list[str], seed: int) -> None:
    env.reset(seed=seed)
    totals = {a: 0.0 for a in env.possible_agents}
    turn = 0
    for agent in env.agent_iter(1_000):
        obs, reward, term, trunc, info = env.last()
        assert math.isfinite(reward)
        totals[agent] += reward
        assert env.observation_space(agent).contains(obs), agent
        if term or trunc:
            env.step(None)
            continue
        env.step(actions[turn % len(actions)])
        turn += 1
    metrics = env.episode_metrics
    assert metrics and isinstance(metrics["success"], bool)
    for agent, total in totals.items():
        assert total == pytest.approx(metrics["score"], abs=1e-6), (agent, totals, metrics)


@pytest.mark.parametrize("env_id", ["math-2agent", "math-4agent"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=st.lists(_actions, min_size=1, max_size=8), seed=st.integers(0, 10_000))
def test_math_episodes_survive_any_text(env_id: str, actions: list[str], seed: int) -> None:
    env = flexmg.make(env_id)
    try:
        _play(env, actions, seed)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["code-2agent", "code-4agent"])
def test_code_episodes_survive_any_text(env_id: str) -> None:
    try:
        env = flexmg.make(env_id, sandbox="local")
    except Exception as e:  # bubblewrap missing on this machine
        pytest.skip(f"the local sandbox cannot run here: {e}")

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(actions=st.lists(_actions, min_size=1, max_size=8), seed=st.integers(0, 10_000))
    def episodes(actions: list[str], seed: int) -> None:
        _play(env, actions, seed)

    try:
        episodes()
    finally:
        env.close()
