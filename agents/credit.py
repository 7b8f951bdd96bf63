"""Credit assignment of MARFT and IPPO, side by side: who bootstraps from whom.

A credit function maps one episode's samples (turns in play order) to *chains*
(see :func:`flexmg.agents.gae.assign_advantages`): the ordered steps along
which one value function bootstraps, with each step's reward.

* **MARFT** (:func:`marft_credit`): one chain through every turn in graph
  order (agent 1..N of round 0, then round 1, ...). The team reward goes to
  the last agent of each round; earlier agents get 0 and bootstrap from their
  successor's value, ``delta_i = r_i + gamma V_{i+1} - V_i``, so a
  predecessor is credited through what its successors then achieved.
* **IPPO** (:func:`ippo_credit`): one chain per role (its own turns across
  rounds), each turn rewarded with the role's reward; no chaining through
  other agents' values.

Example:
    >>> from types import SimpleNamespace as S
    >>> ep = [S(role="a", reward=1.0, team_reward=1.0, last_in_round=False),
    ...       S(role="b", reward=1.0, team_reward=1.0, last_in_round=True)]
    >>> marft_credit(ep), ippo_credit(ep)
    ([([0, 1], [0.0, 1.0])], [([0], [1.0]), ([1], [1.0])])
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from flexmg.protocols import Chain


def marft_credit(episode: Sequence[Any]) -> list[Chain]:
    """One chain through every turn in graph order; team reward on each round's last agent."""
    rewards = [float(s.team_reward) if s.last_in_round else 0.0 for s in episode]
    return [(list(range(len(episode))), rewards)]


def ippo_credit(episode: Sequence[Any]) -> list[Chain]:
    """One chain per role (its turns in order); each turn's reward is the role's reward."""
    chains: dict[str, Chain] = {}
    for i, s in enumerate(episode):
        indices, rewards = chains.setdefault(s.role, ([], []))
        indices.append(i)
        rewards.append(float(s.reward))
    return list(chains.values())


def rewards_are_flat(episodes: Sequence[Sequence[Any]], truncation_penalty: float = 0.0) -> bool:
    """True when every turn of the batch carries the same rewards (and penalty).

    Then every advantage is critic noise: normalising it would make unit-size
    noise and an actor step from nothing, so the learner skips the actor step.

    >>> from types import SimpleNamespace as S
    >>> rewards_are_flat([[S(reward=0.0, team_reward=0.0, truncated=False)]] * 3)
    True
    """
    kinds = {
        (float(s.reward), float(s.team_reward), bool(s.truncated) and truncation_penalty != 0)
        for episode in episodes
        for s in episode
    }
    return len(kinds) <= 1


def role_rewards_differ(episodes: Sequence[Sequence[Any]]) -> tuple[Any, Any] | None:
    """Two turns of one round whose roles got different rewards (the first found), or None.

    >>> from types import SimpleNamespace as S
    >>> ep = [S(role="a", round=0, reward=1.0), S(role="b", round=0, reward=0.0)]
    >>> [s.role for s in role_rewards_differ([ep])], role_rewards_differ([ep[:1]])
    (['a', 'b'], None)
    """
    for episode in episodes:
        first: dict[int, Any] = {}
        for s in episode:
            seen = first.setdefault(int(s.round), s)
            if float(s.reward) != float(seen.reward):
                return seen, s
    return None


def credit_ignores_role_rewards(credit: Any, episodes: Sequence[Sequence[Any]]) -> bool:
    """True when ``credit`` gives the same chains with every turn's reward set to the team's.

    Such a credit function (MARFT's) trains every role on the team reward alone.

    >>> from types import SimpleNamespace as S
    >>> ep = [S(role="a", reward=1.0, team_reward=0.5, last_in_round=False),
    ...       S(role="b", reward=0.0, team_reward=0.5, last_in_round=True)]
    >>> credit_ignores_role_rewards(marft_credit, [ep]), credit_ignores_role_rewards(ippo_credit, [ep])
    (True, False)
    """
    for episode in episodes:
        as_team = [copy.copy(s) for s in episode]
        for s in as_team:
            s.reward = s.team_reward
        if credit(episode) != credit(as_team):
            return False
    return True
