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

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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


def read_run_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed ``config.json`` of a run folder (``RunLoadError`` with the path if absent).

    >>> read_run_config("/nonexistent")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    RunLoadError: /nonexistent/config.json not found: ...
    """
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise RunLoadError(
            f"{path} not found: a run folder is what `flexmg train` writes (config.json + "
            "checkpoints/); check the path"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunLoadError(f"cannot read {path}: {exc}") from exc
    for key in ("train", "roles", "policy_config"):
        if key not in data:
            raise RunLoadError(f"{path} has no {key!r} section; is it a flexmg training run?")
    return data


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
    from flexmg.agents.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
    from flexmg.agents.llm_agent import LLMAgent
    from flexmg.agents.policy import PolicyConfig, TeamPolicy

    run = Path(run_dir)
    cfg = read_run_config(run)
    ckpt = Path(checkpoint) if checkpoint else latest_checkpoint(run / "checkpoints")
    if ckpt is None:
        raise RunLoadError(
            f"no checkpoint in {run / 'checkpoints'}: the run has not saved one yet "
            "(train it further, or pass checkpoint=...)"
        )
    try:
        state = load_checkpoint(ckpt)
    except (OSError, CheckpointError) as exc:
        raise RunLoadError(f"cannot load checkpoint {ckpt}: {exc}") from exc
    pcfg = dict(cfg["policy_config"])
    if device:
        pcfg["device"] = device
    roles = list(cfg["roles"])
    policy = TeamPolicy(roles, PolicyConfig(**pcfg))
    try:
        policy.load_trainable_state(state["policy"])
    except (KeyError, ValueError) as exc:
        raise RunLoadError(f"checkpoint {ckpt} does not fit the run's policy: {exc}") from exc
    policy.eval()
    return LoadedRun(
        path=run,
        roles=roles,
        env=str(cfg["train"].get("env", "")),
        algo=str(cfg.get("algorithm", {}).get("name", cfg["train"].get("algo", ""))),
        share_parameters=bool(pcfg.get("share_parameters", False)),
        updates=int(state.get("counters", {}).get("updates_done", 0)),
        checkpoint=ckpt,
        agent=LLMAgent(policy, role=roles[0], greedy=greedy),
    )
