"""flexmg for verl: an agent loop and a ``compute_score`` (extra ``verl``).

* :class:`FlexMGAgentLoop` (``agent_name: flexmg_agent``) plays whole workflows
  through verl's server manager, one packed trajectory per episode;
* :func:`compute_score` scores single responses with flexmg's graders
  (``reward.custom_reward_function.path=pkg://flexmg.integrations.verl.reward``).

The dataset comes from ``flexmg export ENV_ID --format parquet`` (verl's fields:
:mod:`flexmg.integrations.export`). The agent loop imports verl; ``compute_score`` does
not. verl pins an older transformers than flexmg, so it lives in its own venv
(``bash scripts/setup_verl.sh``); see docs/integrations/verl.md.

Example:
    >>> from flexmg.integrations.verl import compute_score
    >>> compute_score("math-1agent", r"\\boxed{4}", "4")
    1.0
"""

from __future__ import annotations

from typing import Any

from flexmg.integrations.verl.reward import compute_score

__all__ = ["FlexMGAgentLoop", "compute_score"]


def __getattr__(name: str) -> Any:
    if name == "FlexMGAgentLoop":  # imports verl: only on demand
        from flexmg.integrations.verl.agent_loop import FlexMGAgentLoop

        return FlexMGAgentLoop
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
