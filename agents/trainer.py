"""The training run shared by MARFT and IPPO: rollouts, PPO updates, evals, run folder.

``Trainer(TrainConfig(...)).run()`` trains a :class:`~flexmg.agents.policy.TeamPolicy`
on a flexmg env and writes a run folder::

    config.json          the full configuration (TrainConfig, PolicyConfig, PPOConfig)
    metrics.jsonl        one line per update ("kind": "train": its episodes, sampled actions
                         and generated tokens, losses, ...) and per evaluation ("eval")
    tb/                  TensorBoard events (the same figures)
    learning_curve.png   train success and held-out success against updates
    checkpoints/         step_<update>.ckpt (adapters, value heads, optimizers, RNG, counters)
    summary.json         eval_start/eval_end (held-out team success), correct_*, format_*,
                         mean_rounds_start/_end (held-out rounds played per episode),
                         reward_start/_end (mean team reward: a code team's test score),
                         eval_prompts, 95% bootstrap CIs over prompts, seed, updates, wall_seconds

Everything random is seeded from ``(seed, update)``: the rollout env seeds, the
sampling RNG and the minibatch order, so a run resumed from a checkpoint
(``Trainer.resume(run_dir).run()``) reproduces the uninterrupted run exactly on CPU.

Example (CPU, a few seconds per update with the tiny model)::

    from flexmg.agents.trainer import TrainConfig, Trainer
    summary = Trainer(TrainConfig(env="math-2agent", updates=2, eval_episodes=16)).run()
    summary["eval_start"], summary["eval_end"]
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

from flexmg.agents.checkpoint import (
    CheckpointError,
    capture_rng_state,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from flexmg.agents.config import PolicyConfig, PPOConfig, RunConfig, RunConfigError, TrainConfig
from flexmg.agents.evaluation import evaluate_episodes, write_eval_episodes
from flexmg.agents.marft import Algorithm, get_algorithm
from flexmg.agents.ppo import PPOLearner
from flexmg.agents.run_transcripts import evaluate_saving_transcripts, save_rollout_transcripts
from flexmg.agents.samples import RolloutBatch, collect_rollout
from flexmg.evaluation import evaluation_record
from flexmg.io import atomic_write_text, atomic_write_via, json_default
from flexmg.metrics import summarize_episodes
from flexmg.protocols import VectorEnv

CKPT_FORMAT = 1


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (stable across processes and platforms).

    >>> derive_seed(0, 1) == derive_seed(0, 1) != derive_seed(1, 0)
    True
    """
    from flexmg.tasks import stable_hash

    return stable_hash("flexmg-train", *parts) & ((1 << 63) - 1)


def default_run_dir(env: str, algo: str) -> str:
    """``runs/<env>-<algo>-<YYYYmmdd-HHMMSS>``."""
    return os.path.join("runs", f"{env}-{algo}-{datetime.now().strftime('%Y%m%d-%H%M%S')}")


def env_roles(env_id: str, env_kwargs: dict[str, Any]) -> list[str]:
    """The roles (PettingZoo ``possible_agents``) of an env id."""
    import flexmg

    env = flexmg.make(env_id, **env_kwargs)
    try:
        return list(env.possible_agents)
    finally:
        env.close()


class Trainer:
    """One training run (see the module docstring for the run folder).

    Args:
        config: the run's settings.
        _resume_state: internal; use :meth:`Trainer.resume`.
    """

    def __init__(
        self,
        config: TrainConfig,
        _resume_state: dict[str, Any] | None = None,
        _resolved: tuple[PolicyConfig, PPOConfig] | None = None,
        _algorithm: dict[str, Any] | None = None,
    ) -> None:
        from flexmg.agents.policy import TeamPolicy

        self.config = config
        self.algorithm: Algorithm = get_algorithm(config.algo)
        if _algorithm is not None and self.algorithm.sequential:
            # a run keeps its update order: runs saved before agent-by-agent updates
            # existed (no "sequential" in config.json) resume with all agents stepping together
            sequential = bool(_algorithm.get("sequential", False))
            self.algorithm = dataclasses.replace(self.algorithm, sequential=sequential)
        if config.episodes_per_update % config.group_size:
            raise ValueError(
                f"episodes_per_update={config.episodes_per_update} is not a multiple of "
                f"group_size={config.group_size}; make it one (e.g. "
                f"{config.group_size * max(1, config.episodes_per_update // config.group_size)})"
            )
        if config.group_size < self.algorithm.group_size:
            raise ValueError(
                f"--algo {config.algo} compares episodes of the same prompt: it needs "
                f"--group-size >= {self.algorithm.group_size}, got {config.group_size}"
            )
        self.run_dir = Path(config.run_dir or default_run_dir(config.env, config.algo))
        config.run_dir = str(self.run_dir)
        self.roles = env_roles(config.env, config.env_kwargs)
        self.policy_config, self.ppo_config = _resolved or config.resolved(
            self.roles, self.algorithm.critic
        )
        torch.manual_seed(derive_seed(config.seed, -1))
        self.policy = TeamPolicy(self.roles, self.policy_config)
        self.learner = PPOLearner(self.policy, self.ppo_config, self.algorithm)
        self.updates_done = 0
        self.wall_before = 0.0  # seconds spent in earlier sessions of this run
        self.evals: list[dict[str, Any]] = []
        self._continuing = _resume_state is not None
        if _resume_state is not None:
            self._load_state(_resume_state)

    # ------------------------------------------------------------------ construction
    @classmethod
    def resume(cls, run_dir: str | os.PathLike[str], **overrides: Any) -> Trainer:
        """Continue a run from its newest checkpoint (``overrides``: e.g. ``updates=80``).

        Raises:
            CheckpointError: no config/checkpoint in ``run_dir``, or the newest
                checkpoint is truncated or corrupted (never a silent restart).
        """
        run_dir = Path(run_dir)
        cfg_path = run_dir / "config.json"
        if not cfg_path.is_file():
            raise CheckpointError(
                f"cannot resume: {cfg_path} not found; is {run_dir} a run folder?"
            )
        try:
            saved = RunConfig.read(run_dir)
        except RunConfigError as exc:
            raise CheckpointError(f"cannot resume: {exc}") from exc
        changes = {k: v for k, v in overrides.items() if v is not None}
        train = TrainConfig.from_dict({**saved.train.to_dict(), **changes, "run_dir": str(run_dir)})
        ckpt = latest_checkpoint(run_dir / "checkpoints")
        if ckpt is None:
            raise CheckpointError(
                f"cannot resume: no checkpoint in {run_dir / 'checkpoints'}; "
                "start a new run instead"
            )
        state = load_checkpoint(ckpt)
        if state.get("format") != CKPT_FORMAT:
            raise CheckpointError(f"{ckpt}: unsupported checkpoint format {state.get('format')!r}")
        return cls(
            train,
            _resume_state=state,
            _resolved=(saved.policy_config, saved.ppo_config),
            _algorithm=dict(saved.algorithm),
        )

    def _load_state(self, state: dict[str, Any]) -> None:
        self.policy.load_trainable_state(state["policy"])
        self.learner.load_state_dict(state["optim"])
        self.updates_done = int(state["counters"]["updates_done"])
        self.wall_before = float(state["counters"]["wall_seconds"])
        self.evals = [dict(e) for e in state.get("evals", [])]
        restore_rng_state(state["rng"])

    def checkpoint_state(self, wall_seconds: float) -> dict[str, Any]:
        """Everything needed to continue exactly (see ``agents/checkpoint.py``)."""
        return {
            "format": CKPT_FORMAT,
            "policy": self.policy.trainable_state(),
            "optim": self.learner.state_dict(),
            "rng": capture_rng_state(),
            "counters": {"updates_done": self.updates_done, "wall_seconds": wall_seconds},
            "evals": self.evals,
            "config": json.dumps(self.full_config()),
        }

    def full_config(self) -> dict[str, Any]:
        """The config written to ``config.json``."""
        return RunConfig(
            train=self.config,
            algorithm={
                "name": self.algorithm.name,
                "critic": self.algorithm.critic,
                "sequential": self.algorithm.sequential,
            },
            roles=self.roles,
            policy_config=self.policy_config,
            ppo_config=self.ppo_config,
        ).to_dict()

    # ------------------------------------------------------------------ pieces
    def rollout_seed(self, update: int) -> int:
        """First env seed of the rollout of ``update`` (see :meth:`rollout_seeds`)."""
        return (
            1_000_000_000 * (self.config.seed % 1000 + 1) + update * self.config.episodes_per_update
        )

    def rollout_seeds(self, update: int) -> list[int]:
        """Env seeds of ``update``'s rollout: env ``i`` gets ``first + i // group_size``.

        Each prompt is played ``group_size`` times in a row.
        """
        first, g = self.rollout_seed(update), self.config.group_size
        return [first + i // g for i in range(self.config.episodes_per_update)]

    def evaluate(self) -> dict[str, Any]:
        """Held-out evaluation (greedy, ``split="eval"``) of the current policy."""
        if self.config.eval_episodes == 0:
            return {"success_rate": float("nan"), "episodes": 0}
        return evaluation_record(self.evaluate_episodes())

    def evaluate_episodes(self, on_batch: Any = None) -> list[dict[str, Any]]:
        """The metrics of each held-out episode :meth:`evaluate` summarizes."""
        return evaluate_episodes(
            self.policy,
            self.config.env,
            self.config.eval_episodes,
            seed=self.config.eval_seed,
            env_kwargs=self.config.env_kwargs,
            vectorization=self.config.vectorization,
            on_batch=on_batch,
        )

    def train_step(self, vec: VectorEnv, update: int) -> tuple[RolloutBatch, dict[str, float]]:
        """Rollout + PPO update number ``update`` (0-based); returns the batch and stats.

        The rollout scores what it samples (old log-probs, values); the learner's
        :meth:`~flexmg.agents.ppo.PPOLearner.update` does credit, GAE, normalising
        and the epochs of minibatches (see ``agents/ppo.py``).
        """
        torch.manual_seed(derive_seed(self.config.seed, update, 1))
        batch = collect_rollout(self.policy, vec, seed=self.rollout_seeds(update))
        lr_factor = self.learner.set_progress(update, self.config.updates)
        gen = torch.Generator().manual_seed(derive_seed(self.config.seed, update, 2))
        stats = self.learner.update(batch, update, generator=gen)
        return batch, {**stats, "lr_factor": lr_factor}

    # ------------------------------------------------------------------ run
    def run(self, stop_after: int | None = None) -> dict[str, Any]:
        """Train until ``config.updates`` (or ``stop_after`` more updates: a simulated stop).

        Returns the summary (also written to ``summary.json`` when the run completes).
        """
        import flexmg

        cfg = self.config
        start = time.monotonic()
        if not self._continuing and (
            (self.run_dir / "metrics.jsonl").exists()
            or latest_checkpoint(self.run_dir / "checkpoints") is not None
        ):
            raise FileExistsError(
                f"run folder {self.run_dir} already holds a run; continue it with "
                f"--resume {self.run_dir} (Trainer.resume) or choose another --run-dir"
            )
        self._continuing = True  # a second run() call continues this run
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "checkpoints").mkdir(exist_ok=True)
        atomic_write_text(self.run_dir / "config.json", json.dumps(self.full_config(), indent=2))
        logger = _MetricsLogger(self.run_dir, self.updates_done)
        vec = flexmg.make_vec(
            cfg.env,
            num_envs=cfg.episodes_per_update,
            vectorization=cfg.vectorization,
            **{**cfg.env_kwargs, "split": "train"},
        )
        bar = None
        try:
            if self.updates_done == 0 and not self.evals:
                self._record_eval(logger, 0, start)
            end = cfg.updates
            if stop_after is not None:
                end = min(end, self.updates_done + stop_after)
            if cfg.progress:
                from tqdm.auto import tqdm

                bar = tqdm(
                    total=cfg.updates,
                    initial=self.updates_done,
                    desc=f"{cfg.algo} {cfg.env}",
                    unit="upd",
                    dynamic_ncols=True,
                )
            while self.updates_done < end:
                t0 = time.monotonic()
                batch, stats = self.train_step(vec, self.updates_done)
                self.updates_done += 1
                save_rollout_transcripts(self, self.updates_done, batch)
                record = {
                    "kind": "train",
                    "update": self.updates_done,
                    "success_rate": batch.success_rate,
                    "team_reward": batch.mean_team_reward,
                    "mean_rounds": summarize_episodes(batch.metrics)["mean_rounds"],
                    "episodes": len(batch.metrics),
                    "actions": len(batch.samples),
                    "generated_tokens": sum(len(s.action_ids) for s in batch.samples),
                    "action_tokens": sum(len(s.action_ids) for s in batch.samples)
                    / max(1, len(batch.samples)),
                    **stats,
                    "seconds": time.monotonic() - t0,
                }
                logger.log(record)
                if self.updates_done % cfg.eval_every == 0 or self.updates_done == cfg.updates:
                    self._record_eval(logger, self.updates_done, start)
                if bar is not None:
                    last = self.evals[-1]["success_rate"] if self.evals else float("nan")
                    bar.set_postfix(
                        reward=f"{batch.mean_team_reward:.3f}",
                        succ=f"{batch.success_rate:.2f}",
                        eval=f"{last:.3f}",
                    )
                    bar.update(1)
                if (
                    self.updates_done % cfg.checkpoint_every == 0
                    or self.updates_done == cfg.updates
                    or self.updates_done == end
                ):
                    wall = self.wall_before + time.monotonic() - start
                    save_checkpoint(
                        self.run_dir / "checkpoints",
                        self.updates_done,
                        self.checkpoint_state(wall),
                        keep=cfg.keep_checkpoints,
                    )
        finally:
            if bar is not None:
                bar.close()
            vec.close()
            logger.close()
        wall = self.wall_before + time.monotonic() - start
        summary = self.summary(wall)
        if self.updates_done >= cfg.updates:
            atomic_write_text(self.run_dir / "summary.json", json.dumps(summary, indent=2))
        write_learning_curve(self.run_dir)
        return summary

    def _record_eval(self, logger: _MetricsLogger, update: int, start: float) -> None:
        t0 = time.monotonic()
        if self.config.eval_episodes == 0:
            result = self.evaluate()
        else:
            episodes = evaluate_saving_transcripts(self, update)
            write_eval_episodes(self.run_dir, update, episodes)
            result = evaluation_record(episodes)
        result = {"kind": "eval", "update": update, **result, "seconds": time.monotonic() - t0}
        keys = ("success_rate", "correct_rate", "format_rate", "prompts", "success_rate_ci",
                "correct_rate_ci", "format_rate_ci", "mean_rounds", "team_reward",
                "team_reward_ci")  # fmt: skip
        self.evals.append({"update": update, **{k: result.get(k) for k in keys}})
        logger.log(result)

    def summary(self, wall_seconds: float) -> dict[str, Any]:
        """The run's summary (``summary.json``)."""
        evals = self.evals
        return {
            "env": self.config.env,
            "algo": self.algorithm.name,
            "level": self.ppo_config.level,
            "share_parameters": self.policy_config.share_parameters,
            "model": self.policy_config.model,
            "seed": self.config.seed,
            "updates": self.updates_done,
            "episodes_per_update": self.config.episodes_per_update,
            "eval_episodes": self.config.eval_episodes,
            "eval_prompts": evals[-1].get("prompts") if evals else None,
            **_start_end(evals, "success_rate", "eval"),
            **_start_end(evals, "correct_rate", "correct"),
            **_start_end(evals, "format_rate", "format"),
            **_start_end(evals, "team_reward", "reward"),
            "mean_rounds_start": evals[0].get("mean_rounds") if evals else None,
            "mean_rounds_end": evals[-1].get("mean_rounds") if evals else None,
            "eval_best": max((e["success_rate"] for e in evals), default=None),
            "evals": evals,
            "wall_seconds": wall_seconds,
            "run_dir": str(self.run_dir),
        }


def _start_end(evals: list[dict[str, Any]], key: str, name: str) -> dict[str, Any]:
    """``<name>_start``/``<name>_end`` and their ``_ci`` from the first and last evaluation."""
    out: dict[str, Any] = {}
    for suffix, e in (("start", evals[0] if evals else {}), ("end", evals[-1] if evals else {})):
        out[f"{name}_{suffix}"] = e.get(key)
        out[f"{name}_{suffix}_ci"] = e.get(f"{key}_ci")
    return out


class _MetricsLogger:
    """metrics.jsonl + TensorBoard; on resume, drops records after the checkpoint."""

    def __init__(self, run_dir: Path, updates_done: int) -> None:
        self.path = run_dir / "metrics.jsonl"
        kept: list[str] = []
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash
                if int(rec.get("update", 0)) <= updates_done:
                    kept.append(line)
        atomic_write_text(self.path, "".join(k + "\n" for k in kept))
        self.file = self.path.open("a", encoding="utf-8")
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(run_dir / "tb"), purge_step=updates_done + 1)
        except ImportError:  # tensorboard is optional: metrics.jsonl has everything
            self.tb = None

    def log(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record, default=json_default) + "\n")
        self.file.flush()
        if self.tb is not None:
            kind, step = record.get("kind", "train"), int(record.get("update", 0))
            for k, v in record.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "update":
                    if math.isfinite(float(v)):
                        self.tb.add_scalar(f"{kind}/{k}", float(v), step)
            self.tb.flush()

    def close(self) -> None:
        self.file.close()
        if self.tb is not None:
            self.tb.close()


def read_metrics(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All records of a run's ``metrics.jsonl``."""
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_learning_curve(run_dir: str | os.PathLike[str]) -> Path:
    """Plot train success and held-out success, correctness and format into ``learning_curve.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    records = read_metrics(run_dir)
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    fig, ax = plt.subplots(figsize=(6, 4))
    if train:
        ax.plot(
            [r["update"] for r in train],
            [r["success_rate"] for r in train],
            alpha=0.5,
            label="train success (sampled)",
        )
    styles = (("success_rate", "held-out success", "o"), ("correct_rate", "held-out correctness", "s"),
              ("format_rate", "held-out format", "^"))  # fmt: skip
    for key, label, marker in styles:
        points = [(r["update"], r[key]) for r in evals if r.get(key) is not None]
        if points:
            ax.plot(*zip(*points, strict=True), marker=marker, label=f"{label} (greedy)")
    ax.set_xlabel("update")
    ax.set_ylabel("rate (team)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(run_dir.name)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    out = run_dir / "learning_curve.png"
    try:
        atomic_write_via(out, lambda fh: fig.savefig(fh, format="png", dpi=100))
    finally:
        plt.close(fig)
    return out
