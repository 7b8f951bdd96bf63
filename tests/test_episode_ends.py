"""Episode ends as Gymnasium reads them: the judged last round terminates; outside limits truncate."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from gymnasium.utils.env_checker import check_env

import flexmg
from flexmg.envs.families import BUILTIN_ENVS
from flexmg.wrappers import SingleAgentEnv

ALL_IDS = ["echo-v1", *BUILTIN_ENVS]


def _wrong(obs: dict) -> str:
    return "I think it is \\boxed{-1}."


def _single_agent(env_id: str, horizon: int) -> SingleAgentEnv:
    kwargs = {"sandbox": "local"} if env_id.startswith("code") else {}
    env = flexmg.make(env_id, horizon=horizon, **kwargs)
    graded = env.graph.order()[-1]
    return SingleAgentEnv(env, graded, others={r: _wrong for r in env.possible_agents})


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_single_agent_view_passes_gymnasium_check_env_at_every_horizon(env_id: str) -> None:
    for horizon in (1, 2, 3):
        env = _single_agent(env_id, horizon)
        try:
            check_env(env, skip_render_check=True)
        finally:
            env.close()


def test_every_registered_id_is_checked() -> None:
    # a fresh interpreter: what importing flexmg registers, without ids other tests add
    code = "import json, flexmg; print(json.dumps(sorted(flexmg.registry)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == sorted(ALL_IDS)


def test_judging_the_last_round_terminates() -> None:
    env = _single_agent("math-2agent", horizon=3)
    env.reset(seed=0)
    ends = [env.step("\\boxed{-1}")[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (True, False)]
    metrics = env.env.episode_metrics
    assert metrics["rounds"] == 3 and metrics["success"] is False
    assert metrics["truncated"] is False


def _dead_step_ends(env, seed: int = 0) -> list[tuple[bool, bool]]:
    """Play an AEC env with wrong answers; (terminated, truncated) of each finished role."""
    env.reset(seed=seed)
    ends = []
    for agent in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        if term or trunc:
            ends.append((term, trunc))
        env.step(None if term or trunc else f"wrong {agent}")
    return ends


def test_an_outside_round_limit_truncates() -> None:
    env = flexmg.make("echo", horizon=3, max_rounds=2)
    assert _dead_step_ends(env) == [(False, True), (False, True)]
    assert env.episode_metrics["rounds"] == 2 and env.episode_metrics["truncated"] is True
    assert _dead_step_ends(flexmg.make("echo", horizon=2, max_rounds=5)) == [(True, False)] * 2
    with pytest.raises(ValueError, match="max_rounds must be None or an int >= 1"):
        flexmg.make("echo", max_rounds=0)


def test_pettingzoo_max_cycles_is_the_outside_limit() -> None:
    import pettingzoo

    env = pettingzoo.make("aec", "flexmg/echo-v1", horizon=3, max_cycles=1)
    assert _dead_step_ends(env) == [(False, True), (False, True)]
