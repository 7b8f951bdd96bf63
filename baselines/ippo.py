"""IPPO: independent PPO per role, the MARFT paper's baseline.

Each role learns alone: its own adapter, its own value head on its own
observation (``PolicyConfig.critic = "per_role"``), its own GAE over its own
turns across rounds (no chaining through successors' values), with the team
reward as its reward (the role's reward recorded by the env; in the built-in
workflows it equals the team reward). Everything else (rollouts, PPO update,
checkpoints, evaluation) is the shared machinery of ``flexmg.agents``:
``flexmg train --algo ippo --env math-2agent``.

Example:
    >>> from types import SimpleNamespace as S
    >>> ep = [S(role="a", reward=1.0), S(role="b", reward=1.0)]
    >>> ippo_credit(ep)
    [([0], [1.0]), ([1], [1.0])]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flexmg.agents.gae import Chain
from flexmg.agents.marft import Algorithm


def ippo_credit(episode: Sequence[Any]) -> list[Chain]:
    """One chain per role (its turns in order); each turn's reward is the role's reward."""
    chains: dict[str, Chain] = {}
    for i, s in enumerate(episode):
        indices, rewards = chains.setdefault(s.role, ([], []))
        indices.append(i)
        rewards.append(float(s.reward))
    return list(chains.values())


IPPO = Algorithm(
    name="ippo",
    credit=ippo_credit,
    critic="per_role",
    description="IPPO: independent per-role GAE and per-role value heads",
)
