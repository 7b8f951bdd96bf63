"""The MARFT algorithm: credit chained through the agents in graph order, centralized critic.

An :class:`Algorithm` is everything that distinguishes one multi-agent PPO
variant from another in this package: how an episode's turns are chained for
GAE (its *credit* function) and the critic layout passed to
``PolicyConfig.critic``. The training loop (``agents/trainer.py``) and the PPO
machinery (``agents/ppo.py``) are shared; IPPO (``flexmg.baselines.ippo``) is
another :class:`Algorithm` plugged into the same trainer.

MARFT credit (MARFT.md): all turns of an episode form one chain in graph order
(agent 1..N of round 0, then round 1, ...); the team reward is given to the
last agent of each round, earlier agents get 0 and bootstrap from their
successor's value: ``delta_i = r_i + gamma V_{i+1} - V_i``.

Example:
    >>> from types import SimpleNamespace as S
    >>> ep = [S(team_reward=1.0, last_in_round=False), S(team_reward=1.0, last_in_round=True)]
    >>> marft_credit(ep)
    [([0, 1], [0.0, 1.0])]
    >>> get_algorithm("marft").critic
    'centralized'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flexmg.agents.gae import Chain

CreditFn = Callable[[Sequence[Any]], list[Chain]]


@dataclass(frozen=True)
class Algorithm:
    """A multi-agent PPO variant: its credit structure and critic layout.

    Attributes:
        name: CLI name (``--algo``).
        credit: episode samples -> chains (see :func:`flexmg.agents.gae.assign_advantages`).
        critic: ``"centralized"`` (one value head for all roles) or ``"per_role"``.
        description: one line for help texts.
    """

    name: str
    credit: CreditFn
    critic: str
    description: str = ""


def marft_credit(episode: Sequence[Any]) -> list[Chain]:
    """One chain through every turn in graph order; team reward on each round's last agent."""
    rewards = [float(s.team_reward) if s.last_in_round else 0.0 for s in episode]
    return [(list(range(len(episode))), rewards)]


MARFT = Algorithm(
    name="marft",
    credit=marft_credit,
    critic="centralized",
    description="MARFT: GAE chained through agents in graph order, centralized critic",
)

# name -> "module:attribute" for algorithms living outside this module (imported lazily,
# so flexmg.agents does not import flexmg.baselines at import time).
_EXTERNAL = {"ippo": "flexmg.baselines.ippo:IPPO"}
_REGISTRY: dict[str, Algorithm] = {"marft": MARFT}


def register_algorithm(algo: Algorithm) -> None:
    """Make ``algo`` available to the trainer and the CLI under ``algo.name``."""
    if algo.critic not in ("centralized", "per_role"):
        raise ValueError(f"critic must be 'centralized' or 'per_role', got {algo.critic!r}")
    _REGISTRY[algo.name] = algo


def algorithm_names() -> list[str]:
    """All known algorithm names."""
    return sorted(set(_REGISTRY) | set(_EXTERNAL))


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by name (``"marft"``, ``"ippo"``, or a registered one)."""
    if name not in _REGISTRY and name in _EXTERNAL:
        module, attr = _EXTERNAL[name].split(":")
        register_algorithm(getattr(importlib.import_module(module), attr))
    if name not in _REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {algorithm_names()}")
    return _REGISTRY[name]
