"""The learning algorithms the trainer knows: MARFT and IPPO (credit + critic layout).

MARFT chains GAE through every agent in graph order with a centralized critic;
IPPO keeps one chain and one value head per role. Both credit functions live
side by side in :mod:`flexmg.agents.credit`; everything else (rollouts, the
PPO update, checkpoints) is shared.

Example:
    >>> get_algorithm("marft").critic, get_algorithm("ippo").critic
    ('centralized', 'per_role')
"""

from __future__ import annotations

from dataclasses import dataclass

from flexmg.agents.credit import ippo_credit, marft_credit
from flexmg.protocols import CreditFn


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


MARFT = Algorithm(
    name="marft",
    credit=marft_credit,
    critic="centralized",
    description="MARFT: GAE chained through agents in graph order, centralized critic",
)

IPPO = Algorithm(
    name="ippo",
    credit=ippo_credit,
    critic="per_role",
    description="IPPO: independent per-role GAE and per-role value heads",
)

_REGISTRY: dict[str, Algorithm] = {"marft": MARFT, "ippo": IPPO}


def register_algorithm(algo: Algorithm) -> None:
    """Make ``algo`` available to the trainer and the CLI under ``algo.name``."""
    if algo.critic not in ("centralized", "per_role"):
        raise ValueError(f"critic must be 'centralized' or 'per_role', got {algo.critic!r}")
    _REGISTRY[algo.name] = algo


def algorithm_names() -> list[str]:
    """All known algorithm names."""
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by name (``"marft"``, ``"ippo"``, or a registered one)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {algorithm_names()}")
    return _REGISTRY[name]


__all__ = ["IPPO", "MARFT", "Algorithm", "algorithm_names", "get_algorithm", "marft_credit",
           "register_algorithm"]  # fmt: skip
