"""The critic-free group baseline: per-agent group-relative advantages (GRPO-style, as in MAGRPO).

Each prompt is played ``group_size`` times in one rollout (``flexmg train
--group-size G``). An agent's advantage on an episode is how much better the
episode went for it than the other episodes of the same prompt:
``(R - mean_group(R)) / (std_group(R) + eps)``, where ``R`` is the sum of the
agent's rewards in the episode (the team reward in the built-in envs). No
critic is trained; each agent learns with PPO's clipped objective on its own
adapter, all agents stepping together. A group whose episodes all scored the
same gives zero advantages: nothing to learn from it.

``flexmg train --algo group --group-size 8 --env math-2agent``

Example:
    >>> from types import SimpleNamespace as S
    >>> eps = [[S(role="a", reward=r, action_ids=[1])] for r in (1.0, 0.0, 1.0, 1.0)]
    >>> group_advantages(eps, [{"prompt_id": "p"}] * 2 + [{"prompt_id": "q"}] * 2)
    >>> [round(e[0].advantage, 3) for e in eps]
    [1.0, -1.0, 0.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from flexmg.agents.marft import Algorithm

__all__ = ["GROUP", "group_advantages"]

EPSILON = 1e-6


def _role_returns(episode: Sequence[Any]) -> dict[str, float]:
    """Each role's summed reward over its turns of one episode."""
    out: dict[str, float] = {}
    for s in episode:
        out[s.role] = out.get(s.role, 0.0) + float(s.reward)
    return out


def group_advantages(
    episodes: Sequence[Sequence[Any]], metrics: Sequence[Mapping[str, Any]]
) -> None:
    """Set every turn's ``advantage``, ``token_advantages`` and ``ret`` from its prompt's group.

    Episodes are grouped by ``metrics[e]["prompt_id"]`` (the env's id of the prompt);
    within a group, each role's return is standardized over the group's episodes.
    """
    if len(episodes) != len(metrics):
        raise ValueError(f"{len(episodes)} episodes but {len(metrics)} metrics")
    groups: dict[str, list[int]] = {}
    for e, m in enumerate(metrics):
        groups.setdefault(str(m.get("prompt_id", e)), []).append(e)
    returns = [_role_returns(ep) for ep in episodes]
    for members in groups.values():
        roles = {r for e in members for r in returns[e]}
        for role in roles:
            values = [returns[e].get(role, 0.0) for e in members]
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
            for e in members:
                adv = 0.0 if std < EPSILON else (returns[e].get(role, 0.0) - mean) / (std + EPSILON)
                for s in episodes[e]:
                    if s.role == role:
                        s.advantage = adv
                        s.token_advantages = [adv] * max(len(s.action_ids), 1)
                        s.ret = returns[e][role]
                        s.token_returns = [s.ret] * max(len(s.action_ids), 1)


GROUP = Algorithm(
    name="group",
    credit=None,
    critic="none",
    description="critic-free: per-agent advantages relative to the other episodes of the "
    "same prompt (needs --group-size >= 2)",
    advantages=group_advantages,
    group_size=2,
)
"""The group baseline, registered as ``--algo group`` (entry point ``flexmg.algorithms``)."""
