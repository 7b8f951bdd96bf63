"""Play episodes with a team of agents and collect transcripts and metrics.

Example:
    >>> import flexmg
    >>> from flexmg.agents import rollout
    >>> echo = lambda obs: obs["task"][5:] if obs["role"] == "a" else obs["context"][5:]
    >>> result = rollout(flexmg.make("echo"), {"a": echo, "b": echo}, episodes=4, seed=0)
    >>> result.success_rate
    1.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flexmg.agents.base import Agent, as_agent
from flexmg.env import FlexMGEnv
from flexmg.protocols import VectorEnv
from flexmg.vector import EpisodeResult, SyncVectorEnv


@dataclass
class RolloutResult:
    """Episodes played by :func:`rollout` and their summary."""

    episodes: list[EpisodeResult] = field(default_factory=list)

    @property
    def success_rate(self) -> float:
        return float(np.mean([e.success for e in self.episodes])) if self.episodes else 0.0

    @property
    def mean_score(self) -> float:
        return (
            float(np.mean([e.metrics.get("score", 0.0) for e in self.episodes]))
            if self.episodes
            else 0.0
        )

    def summary(self) -> dict[str, Any]:
        rounds = [e.metrics.get("rounds", 0) for e in self.episodes]
        per_role: dict[str, dict[str, float]] = {}
        for e in self.episodes:
            for role, m in e.metrics.get("per_role", {}).items():
                acc = per_role.setdefault(role, {})
                for k, v in m.items():
                    if isinstance(v, (bool, int, float)) and v is not None:
                        acc[k] = acc.get(k, 0.0) + float(v)
        n = max(len(self.episodes), 1)
        return {
            "episodes": len(self.episodes),
            "success_rate": self.success_rate,
            "mean_score": self.mean_score,
            "mean_rounds": float(np.mean(rounds)) if rounds else 0.0,
            "per_role": {r: {k: v / n for k, v in m.items()} for r, m in per_role.items()},
        }


def _play_batch(vec: VectorEnv, team: Mapping[str, Agent], seed: int) -> list[EpisodeResult]:
    vec.reset(seed=seed)
    while not vec.all_done():
        role = vec.next_role()
        if role not in team:
            raise KeyError(f"no agent for role {role!r}; team has {sorted(team)}")
        obs = vec.observe(role)
        idx = [i for i, o in enumerate(obs) if o is not None]
        acts = team[role].act([obs[i] for i in idx])
        if len(acts) != len(idx):
            raise ValueError(
                f"agent for {role!r} returned {len(acts)} actions for {len(idx)} observations"
            )
        actions: list[str | None] = [None] * vec.num_envs
        for i, a in zip(idx, acts):
            actions[i] = a
        vec.step(role, actions)
    return vec.episodes()


def rollout(
    env: FlexMGEnv | VectorEnv,
    team: Mapping[str, Any] | Any,
    episodes: int = 1,
    seed: int = 0,
    progress: bool = False,
) -> RolloutResult:
    """Play ``episodes`` episodes; episode ``k`` uses seed ``seed + k``.

    Args:
        env: a Flex-MG env or a vector env (batched: each agent sees a batch).
        team: ``{role: agent}`` (agents or ``obs -> str`` callables), or one
            agent for every role.
        episodes: how many episodes to play.
        seed: the first episode's seed.
        progress: show a progress bar.
    """
    vec = env if isinstance(env, VectorEnv) else SyncVectorEnv([lambda: env])
    if isinstance(team, Mapping):
        agents = {r: as_agent(a) for r, a in team.items()}
    else:
        one = as_agent(team)
        agents = {r: one for r in vec.possible_agents}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=episodes, desc="episodes", unit="ep")
    result = RolloutResult()
    start = seed
    while len(result.episodes) < episodes:
        batch = _play_batch(vec, agents, start)
        start += vec.num_envs
        result.episodes.extend(batch[: episodes - len(result.episodes)])
        if bar is not None:
            bar.update(min(len(batch), bar.total - bar.n))
            bar.set_postfix(success=f"{result.success_rate:.2f}")
    if bar is not None:
        bar.close()
    return result
