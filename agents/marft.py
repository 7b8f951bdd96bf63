"""The learning algorithms the trainer knows: MARFT, IPPO, and any registered one.

An :class:`Algorithm` says how the shared PPO machinery assigns credit and
which critic it keeps:

* **MARFT** (the default): GAE chained through every agent in graph order with a
  centralized critic (:func:`flexmg.agents.credit.marft_credit`), and
  agent-by-agent updates: in one update the agents learn one after another in
  graph order, each agent's PPO objective weighted by how much its predecessors'
  *updated* policies changed the probability of what they said
  (``sequential=True``, see :mod:`flexmg.agents.ppo`).
* **IPPO**: one chain and one value head per role; all roles step together.
* Algorithms of other packages register through the ``flexmg.algorithms`` entry
  point (``name = "package.module:ALGORITHM"``), loaded on first lookup: the
  critic-free group baseline of :mod:`flexmg.baselines.group` is one.

Example:
    >>> get_algorithm("marft").critic, get_algorithm("ippo").critic
    ('centralized', 'per_role')
    >>> get_algorithm("marft").sequential, get_algorithm("ippo").sequential
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flexmg.agents.credit import ippo_credit, marft_credit
from flexmg.protocols import CreditFn

ENTRY_POINT_GROUP = "flexmg.algorithms"
"""The entry-point group through which other packages add algorithms."""
CRITICS = ("centralized", "per_role", "none")

AdvantageFn = Callable[[Sequence[Sequence[Any]], Sequence[Mapping[str, Any]]], None]
"""``advantages(episodes, metrics)``: set every sample's ``advantage`` and ``ret`` in place
(a critic-free algorithm; ``metrics[e]`` are episode ``e``'s env metrics, e.g. its ``prompt_id``)."""


@dataclass(frozen=True)
class Algorithm:
    """A multi-agent PPO variant: its credit structure, critic layout and update order.

    Attributes:
        name: CLI name (``--algo``).
        credit: episode samples -> chains for GAE (:func:`flexmg.agents.gae.assign_advantages`);
            None for a critic-free algorithm.
        critic: ``"centralized"`` (one value head for all roles), ``"per_role"``, or
            ``"none"`` (no critic: ``advantages`` sets the advantages).
        description: one line for help texts.
        advantages: a critic-free algorithm's advantage function (:data:`AdvantageFn`).
        sequential: agents learn one after another in graph order, each seeing its
            predecessors' updated policies (MARFT's agent-by-agent update).
        group_size: rollouts must play each prompt at least this many times.
    """

    name: str
    credit: CreditFn | None
    critic: str
    description: str = ""
    advantages: AdvantageFn | None = None
    sequential: bool = False
    group_size: int = 1

    def __post_init__(self) -> None:
        if self.critic not in CRITICS:
            raise ValueError(f"critic must be one of {CRITICS}, got {self.critic!r}")
        if (self.credit is None) == (self.advantages is None):
            raise ValueError(
                f"algorithm {self.name!r} needs exactly one of credit (with a critic) or "
                "advantages (critic-free)"
            )
        if (self.advantages is not None) != (self.critic == "none"):
            raise ValueError(
                f"algorithm {self.name!r}: a critic-free algorithm has critic='none' and an "
                "advantages function, any other has a critic and a credit function"
            )


MARFT = Algorithm(
    name="marft",
    credit=marft_credit,
    critic="centralized",
    description="MARFT: GAE chained through agents in graph order, centralized critic, "
    "agent-by-agent updates",
    sequential=True,
)

IPPO = Algorithm(
    name="ippo",
    credit=ippo_credit,
    critic="per_role",
    description="IPPO: independent per-role GAE and per-role value heads",
)

_REGISTRY: dict[str, Algorithm] = {"marft": MARFT, "ippo": IPPO}
_plugins_loaded = False


def register_algorithm(algo: Algorithm) -> None:
    """Make ``algo`` available to the trainer and the CLI under ``algo.name``."""
    if not isinstance(algo, Algorithm):
        raise TypeError(f"expected a flexmg.agents.marft.Algorithm, got {type(algo).__name__}")
    _REGISTRY[algo.name] = algo


def _load_plugins() -> None:
    """Register the algorithms other installed packages declare (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTRY:
            register_algorithm(ep.load())


def algorithm_names() -> list[str]:
    """All known algorithm names (built in and registered)."""
    _load_plugins()
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by name (``"marft"``, ``"ippo"``, ``"group"``, or a registered one)."""
    if name not in _REGISTRY:
        _load_plugins()
    if name not in _REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; choose one of {algorithm_names()}")
    return _REGISTRY[name]


__all__ = ["CRITICS", "ENTRY_POINT_GROUP", "IPPO", "MARFT", "AdvantageFn", "Algorithm",
           "algorithm_names", "get_algorithm", "marft_credit", "register_algorithm"]  # fmt: skip
