"""IPPO: independent PPO per role, the MARFT paper's baseline.

Each role learns alone: its own adapter, its own value head on its own
observation (``PolicyConfig.critic = "per_role"``), its own GAE over its own
turns across rounds (no chaining through successors' values), with the team
reward as its reward (the role's reward recorded by the env; in the built-in
workflows it equals the team reward). Its credit function sits next to
MARFT's in :mod:`flexmg.agents.credit`; everything else (rollouts, PPO update,
checkpoints, evaluation) is the shared machinery of ``flexmg.agents``:
``flexmg train --algo ippo --env math-2agent``.

Example:
    >>> from types import SimpleNamespace as S
    >>> ep = [S(role="a", reward=1.0), S(role="b", reward=1.0)]
    >>> ippo_credit(ep)
    [([0], [1.0]), ([1], [1.0])]
"""

from __future__ import annotations

from flexmg.agents.credit import ippo_credit
from flexmg.agents.marft import IPPO

__all__ = ["IPPO", "ippo_credit"]
