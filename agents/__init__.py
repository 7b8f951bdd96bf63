"""Agents for Flex-MG envs: the agent protocol, scripted/random agents, LLM agents, MARFT.

The light pieces (protocol, scripted agents, ``rollout``, the configs
``TrainConfig``/``PolicyConfig``/``PPOConfig``, ``MARFT``) import no torch; the
LLM pieces (``LLMAgent``, ``TeamPolicy``, ``Trainer``) load torch, transformers
and peft on first use (``pip install 'flexmg[train]'``).

Example:
    >>> from flexmg.agents import RandomAgent, rollout
    >>> import flexmg
    >>> rollout(flexmg.make("echo"), RandomAgent(seed=0), episodes=2).summary()["episodes"]
    2
"""

from __future__ import annotations

import importlib
from typing import Any

from flexmg.agents.base import (
    Agent,
    EmptyAgent,
    FunctionAgent,
    RandomAgent,
    ScriptedAgent,
    as_agent,
)
from flexmg.agents.episodes import RolloutResult, rollout

_LAZY = {
    "LLMAgent": "flexmg.agents.llm_agent",
    "TeamPolicy": "flexmg.agents.policy",
    "PolicyConfig": "flexmg.agents.config",
    "Trainer": "flexmg.agents.trainer",
    "TrainConfig": "flexmg.agents.config",
    "PPOConfig": "flexmg.agents.config",
    "MARFT": "flexmg.agents.marft",
}

__all__ = [
    "Agent",
    "EmptyAgent",
    "FunctionAgent",
    "RandomAgent",
    "RolloutResult",
    "ScriptedAgent",
    "as_agent",
    "rollout",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        try:
            module = importlib.import_module(_LAZY[name])
        except ModuleNotFoundError as err:
            if err.name and err.name.split(".")[0] in {
                "torch",
                "transformers",
                "peft",
                "tokenizers",
            }:
                raise ImportError(
                    f"flexmg.agents.{name} needs {err.name!r}: pip install 'flexmg[train]'"
                ) from err
            raise
        return getattr(module, name)
    raise AttributeError(f"module 'flexmg.agents' has no attribute {name!r}")
