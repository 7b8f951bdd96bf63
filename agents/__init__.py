"""The learner: MARFT and IPPO training a team of LoRA agents on a flexmg env.

* algorithm: :mod:`~flexmg.agents.ppo` (the update), :mod:`~flexmg.agents.gae`,
  :mod:`~flexmg.agents.credit`, :mod:`~flexmg.agents.critic`, and the algorithm
  registry :mod:`~flexmg.agents.marft` (``MARFT``, ``IPPO``);
* policy: :mod:`~flexmg.agents.policy` (``TeamPolicy``: one base model, a LoRA
  adapter per role, value heads) and :mod:`~flexmg.agents.llm_agent` (a policy as
  an actor, ``LLMAgent``);
* rollout samples: :mod:`~flexmg.agents.samples`;
* the training run: :mod:`~flexmg.agents.trainer`, :mod:`~flexmg.agents.evaluation`,
  :mod:`~flexmg.agents.checkpoint` and its settings :mod:`~flexmg.agents.config`.

What plays episodes (``flexmg.episodes``, ``flexmg.actors``), the models and their
decoding (``flexmg.models``) and the scripted agents (``flexmg.baselines.scripted``)
live in their own packages. Only the configs and the algorithm registry import no
torch; the rest loads torch, transformers and peft (``pip install 'flexmg[train]'``).

Example:
    >>> from flexmg.agents import MARFT, PolicyConfig
    >>> MARFT.critic, PolicyConfig(lora_r=4).lora_r
    ('centralized', 4)
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "LLMAgent": "flexmg.agents.llm_agent",
    "TeamPolicy": "flexmg.agents.policy",
    "PolicyConfig": "flexmg.agents.config",
    "Trainer": "flexmg.agents.trainer",
    "TrainConfig": "flexmg.agents.config",
    "PPOConfig": "flexmg.agents.config",
    "MARFT": "flexmg.agents.marft",
    "IPPO": "flexmg.agents.marft",
}

__all__ = [*_LAZY]


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
