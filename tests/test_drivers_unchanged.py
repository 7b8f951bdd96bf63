"""Every episode driver plays exactly what it played before the drivers were unified.

``tests/data/drivers_reference.json`` was recorded from the drivers as they were
before :class:`flexmg.vector_base.EnvRunner` became the one turn stepper and
:func:`flexmg.episodes.play_batch` the one batch driver (issue 24): per env,
``seats.play_episode``, ``seats.play_batch`` and ``episodes.play_batch`` with
deterministic scripted roles. The replay must match it field for field (wall
times left out). Re-record only when an env's behaviour changes on purpose:
``python tests/test_drivers_unchanged.py --record``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import flexmg
from flexmg.episodes import play_batch as vec_play_batch
from flexmg.integrations.seats import play_batch as seat_play_batch
from flexmg.integrations.seats import play_episode

REFERENCE = Path(__file__).parent / "data" / "drivers_reference.json"
SEEDS = [0, 1, 2]
ENV_IDS = [
    "echo",
    "math-1agent",
    "math-2agent",
    "math-3agent",
    "math-4agent",
    "check-1agent",
    "check-2agent",
    "relay-2agent",
    "split-2agent",
    "code-2agent",
]
VOLATILE = {"time", "wall_time", "elapsed", "duration", "seconds"}


def _reply(role: str, text: str) -> str:
    """A deterministic reply: right-ish or wrong depending on a hash of what the role saw."""
    digest = int(hashlib.sha256(f"{role}|{text}".encode()).hexdigest(), 16)
    numbers = [int(n) for n in re.findall(r"-?\d+", text)][:2]
    if role in ("coder", "reviewer", "planner", "tester"):
        body = "return 0" if digest % 2 else "return None"
        return f"```python\ndef solution(*args):\n    {body}\n```"
    if role in ("a", "b"):
        words = text.split()
        return words[digest % len(words)] if words else "word"
    value = sum(numbers) + (digest % 3 == 0)
    return f"\\boxed{{{value}}}" if digest % 4 else f"I think {value}."


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _scrub(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _seat_result(result: Any) -> dict[str, Any]:
    return _scrub(
        {
            "env_id": result.env_id,
            "seed": result.seed,
            "segments": [
                {"role": s.role, "round": s.round, "messages": s.messages, "text": s.text}
                for s in result.segments
            ],
            "transcripts": result.transcripts,
            "rewards": result.rewards,
            "score": result.score,
            "metrics": result.metrics,
        }
    )


def _play(env_id: str, recording: bool = False) -> dict[str, Any]:
    roles = flexmg.make(env_id).possible_agents

    def one(role: str):
        return lambda messages: _reply(role, messages[-1]["content"])

    def batched(role: str):
        return lambda batch: [_reply(role, m[-1]["content"]) for m in batch]

    def actor(role: str):
        return lambda obs: _reply(role, _seat_user_text(obs))

    episodes = [
        _seat_result(play_episode(env_id, {r: one(r) for r in roles}, seed=s)) for s in SEEDS
    ]
    batch = [
        _seat_result(r)
        for r in seat_play_batch(env_id, {r: batched(r) for r in roles}, seeds=SEEDS)
    ]
    vec = flexmg.make_vec(env_id, num_envs=len(SEEDS))
    try:
        played = vec_play_batch(vec, {r: actor(r) for r in roles}, seed=SEEDS)
    finally:
        vec.close()
    vector = [_scrub(ep.to_dict()) for ep in played]
    if recording:  # the reference predates EpisodeResult.rewards
        for ep in vector:
            ep.pop("rewards", None)
    return {"play_episode": episodes, "seat_play_batch": batch, "episodes_play_batch": vector}


def _seat_user_text(obs: dict[str, Any]) -> str:
    from flexmg.integrations.seats import observation_to_messages

    return observation_to_messages(obs)[-1]["content"]


def record() -> None:
    data = {env_id: _play(env_id, recording=True) for env_id in ENV_IDS}
    REFERENCE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE} ({len(data)} envs)")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_drivers_play_what_they_played_before(env_id: str) -> None:
    reference = json.loads(REFERENCE.read_text())[env_id]
    now = json.loads(json.dumps(_play(env_id), sort_keys=True))
    # episodes' per-role reward sums are new: they must equal the seat driver's
    summed = [ep.pop("rewards") for ep in now["episodes_play_batch"]]
    assert summed == [ep["rewards"] for ep in reference["play_episode"]]
    for driver in ("play_episode", "seat_play_batch", "episodes_play_batch"):
        assert now[driver] == reference[driver], f"{env_id}: {driver} differs from the reference"


@pytest.mark.parametrize("env_id", ["math-2agent", "check-1agent", "split-2agent"])
def test_seat_driver_step_rewards_are_the_envs(env_id: str) -> None:
    """After each turn the seat driver reports the env's own ``rewards`` and ``infos``."""
    from flexmg.integrations.seats import SeatDriver, observation_to_messages

    env, driver = flexmg.make(env_id), SeatDriver(flexmg.make(env_id), env_id, seed=3)
    env.reset(seed=3)
    expected, got = [], []
    for role in env.agent_iter():
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        text = _reply(role, observation_to_messages(obs)[-1]["content"])
        env.step(text)
        expected.append((dict(env.rewards), _scrub(env.infos)))
        turn = driver.pending()
        assert turn is not None and turn[0] == role
        driver.act(text)
        got.append((driver.step_rewards, _scrub(driver.step_infos)))
    assert driver.pending() is None and got == expected
    assert any(any(r.values()) for r, _ in expected), "the case should pay some reward"


def test_reference_is_not_trivial() -> None:
    """The cases cover right and wrong answers, several roles and more than one round."""
    data = json.loads(REFERENCE.read_text())
    scores = {ep["score"] for case in data.values() for ep in case["play_episode"]}
    assert len(scores) > 1
    rounds = {
        s["round"] for case in data.values() for ep in case["play_episode"] for s in ep["segments"]
    }
    assert rounds >= {0, 1}


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    else:
        sys.exit("usage: python tests/test_drivers_unchanged.py --record")
