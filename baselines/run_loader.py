"""Load a training run folder (``flexmg train``) as a team of agents.

A run folder holds ``config.json`` (roles, ``policy_config``) and
``checkpoints/step_<update>.ckpt`` (see :mod:`flexmg.agents.trainer`). The
loader rebuilds the :class:`~flexmg.agents.policy.TeamPolicy` from the saved
config, restores its adapters and value heads from the newest (or a given)
checkpoint and wraps it in an :class:`~flexmg.agents.llm_agent.LLMAgent`,
which groups each batch of observations by role and generates with that
role's adapter. Decoding is greedy by default (what held-out evaluation uses).

Example (needs a run folder)::

    from flexmg.baselines.run_loader import load_run
    run = load_run("runs/math-2agent-marft-20250101-120000")
    run.roles, run.updates          # (['solver', 'verifier'], 40)
    team = run.agent                # act(list[obs]) -> list[str]
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flexmg.agents.config import RunConfig


class RunLoadError(RuntimeError):
    """A run folder cannot be loaded (missing config/checkpoint, incompatible state)."""


@dataclass
class LoadedRun:
    """A run loaded as an agent: ``agent`` acts for every role in ``roles``."""

    path: Path
    roles: list[str]
    env: str
    algo: str
    share_parameters: bool
    updates: int
    checkpoint: Path
    agent: Any

    def describe(self) -> dict[str, Any]:
        """JSON-friendly facts about the run (recorded in leaderboard results)."""
        return {
            "path": str(self.path),
            "roles": self.roles,
            "env": self.env,
            "algo": self.algo,
            "share_parameters": self.share_parameters,
            "updates": self.updates,
            "checkpoint": str(self.checkpoint),
        }


def read_run_config(run_dir: str | os.PathLike[str]) -> RunConfig:
    """The ``config.json`` of a run folder (``RunLoadError`` with the path if absent or bad).

    >>> read_run_config("/nonexistent")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    RunLoadError: /nonexistent/config.json not found: ...
    """
    from flexmg.agents.config import RunConfig, RunConfigError

    try:
        return RunConfig.read(run_dir)
    except RunConfigError as exc:
        raise RunLoadError(str(exc)) from exc


def load_run(
    run_dir: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str] | None = None,
    device: str | None = None,
    greedy: bool = True,
) -> LoadedRun:
    """Load ``run_dir`` (newest checkpoint unless ``checkpoint`` is given) as an agent.

    Args:
        run_dir: a folder written by ``flexmg train`` / ``Trainer``.
        checkpoint: a specific ``.ckpt`` file (default: the newest in ``checkpoints/``).
        device: override the run's device (``"cpu"``, ``"cuda"``, ...).
        greedy: greedy decoding (default) instead of sampling.
    """
    from flexmg.agents.checkpoint import CheckpointError, restore_policy
    from flexmg.agents.config import RunConfigError
    from flexmg.agents.llm_agent import LLMAgent

    try:
        restored = restore_policy(run_dir, checkpoint, device)
    except (OSError, RunConfigError, CheckpointError) as exc:
        raise RunLoadError(str(exc)) from exc
    cfg, roles = restored.config, list(restored.config.roles)
    return LoadedRun(
        path=Path(run_dir),
        roles=roles,
        env=cfg.train.env,
        algo=cfg.algorithm.get("name", cfg.train.algo),
        share_parameters=restored.policy.config.share_parameters,
        updates=restored.updates,
        checkpoint=restored.checkpoint,
        agent=LLMAgent(restored.policy, role=roles[0], greedy=greedy),
    )
