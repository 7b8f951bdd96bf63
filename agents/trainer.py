"""The training run shared by MARFT and IPPO: rollouts, PPO updates, evals, run folder.

``Trainer(TrainConfig(...)).run()`` trains a :class:`~flexmg.agents.policy.TeamPolicy`
on a flexmg env and writes a run folder::

    config.json          the full configuration (TrainConfig, PolicyConfig, PPOConfig)
    metrics.jsonl        one line per update ("kind": "train": its episodes, sampled actions
                         and generated tokens, losses, ...) and per evaluation ("eval")
    tb/                  TensorBoard events (the same figures)
    learning_curve.png   train success and held-out success against updates
    checkpoints/         step_<update>.ckpt (adapters, value heads, optimizers, RNG, counters)
    train.log            what a person should read: flat-reward warnings, stops, resumes
    summary.json         eval_start/eval_end (held-out team success), correct_*, format_*,
                         mean_rounds_start/_end (held-out rounds played per episode),
                         reward_start/_end (mean team reward: a code team's test score),
                         eval_prompts, 95% bootstrap CIs over prompts, seed, updates, wall_seconds

Everything random is seeded from ``(seed, update)``: the rollout env seeds, the
sampling RNG and the minibatch order, so a run resumed from a checkpoint
(``Trainer.resume(run_dir).run()``) reproduces the uninterrupted run exactly on CPU.
Ctrl-C is safe: the first one lets the update under way finish, saves a checkpoint
and raises :class:`~flexmg.agents.stop.TrainingInterrupted`; the second aborts at
once, leaving the last complete checkpoint (see :mod:`flexmg.agents.stop`).

One update reads top to bottom in :meth:`Trainer.run`: :meth:`~Trainer.rollout`,
:meth:`~Trainer.learn`, :meth:`~Trainer.log_update`, then
:meth:`~Trainer.evaluate_and_log` and :meth:`~Trainer.save` when due.

Example (CPU, a few seconds per update with the tiny model)::

    from flexmg.agents.trainer import TrainConfig, Trainer
    summary = Trainer(TrainConfig(env="math-2agent", updates=2, eval_episodes=16)).run()
    summary["eval_start"], summary["eval_end"]
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import torch

from flexmg.agents.adapters import ADAPTERS_DIR, export_adapters, exportable
from flexmg.agents.checkpoint import (
    CheckpointError,
    capture_rng_state,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from flexmg.agents.config import PolicyConfig, PPOConfig, RunConfig, RunConfigError, TrainConfig
from flexmg.agents.credit import credit_ignores_role_rewards, role_rewards_differ
from flexmg.agents.evaluation import evaluate_episodes, write_eval_episodes
from flexmg.agents.marft import Algorithm, get_algorithm
from flexmg.agents.ppo import PPOLearner
from flexmg.agents.run_log import FlatRewardWatch, MetricsLogger, RunLog
from flexmg.agents.run_transcripts import evaluate_saving_transcripts, save_rollout_transcripts
from flexmg.agents.samples import RolloutBatch, collect_rollout
from flexmg.agents.stop import StopOnInterrupt, StopRequested, TrainingInterrupted
from flexmg.evaluation import evaluation_record
from flexmg.io import atomic_write_text, atomic_write_via
from flexmg.metrics import summarize_episodes
from flexmg.protocols import VectorEnv

CKPT_FORMAT = 1
EVAL_KEYS = ("success_rate", "correct_rate", "format_rate", "prompts", "success_rate_ci",
             "correct_rate_ci", "format_rate_ci", "mean_rounds", "team_reward",
             "team_reward_ci")  # fmt: skip
"""What each evaluation keeps in ``Trainer.evals`` (the checkpoint) and the summary."""

__all__ = ["RoleRewardsIgnored", "TrainConfig", "Trainer", "TrainingInterrupted",
           "read_metrics", "write_learning_curve"]  # fmt: skip


class RoleRewardsIgnored(ValueError):
    """The env gives its roles different rewards and the algorithm trains on the team's."""


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
        self._eval_pending = True  # the evaluation before training
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
        # saved by a Ctrl-C before the evaluation its update was due (or before training)
        self._eval_pending = bool(state["counters"].get("eval_pending", not self.evals))
        restore_rng_state(state["rng"])

    def checkpoint_state(
        self, wall_seconds: float, eval_pending: bool = False, rng: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Everything needed to continue exactly (see ``agents/checkpoint.py``).

        ``eval_pending``: the evaluation due after ``updates_done`` has not run (a
        Ctrl-C came first); ``rng``: the RNG state to save (default: the current one).
        """
        counters: dict[str, Any] = {"updates_done": self.updates_done, "wall_seconds": wall_seconds}
        if eval_pending:
            counters["eval_pending"] = True
        return {
            "format": CKPT_FORMAT,
            "policy": self.policy.trainable_state(),
            "optim": self.learner.state_dict(),
            "rng": rng if rng is not None else capture_rng_state(),
            "counters": counters,
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

    # ------------------------------------------------------------------ the steps
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

    def rollout(self, vec: VectorEnv, update: int) -> RolloutBatch:
        """Play update ``update``'s (0-based) episodes, scoring what is sampled.

        The rollout keeps the old log-probs and values PPO needs.
        """
        torch.manual_seed(derive_seed(self.config.seed, update, 1))
        return collect_rollout(self.policy, vec, seed=self.rollout_seeds(update))

    def learn(self, batch: RolloutBatch, update: int) -> dict[str, float]:
        """PPO update number ``update`` (0-based) on ``batch``; returns its statistics.

        The learner's :meth:`~flexmg.agents.ppo.PPOLearner.update` does credit, GAE,
        normalising and the epochs of minibatches (see ``agents/ppo.py``).

        Raises:
            RoleRewardsIgnored: the roles got different rewards, which the
                algorithm's credit does not use.
        """
        self.check_role_rewards(batch, update)
        lr_factor = self.learner.set_progress(update, self.config.updates)
        gen = torch.Generator().manual_seed(derive_seed(self.config.seed, update, 2))
        stats = self.learner.update(batch, update, generator=gen)
        return {**stats, "lr_factor": lr_factor}

    def train_step(self, vec: VectorEnv, update: int) -> tuple[RolloutBatch, dict[str, float]]:
        """:meth:`rollout` + :meth:`learn` of update ``update`` (0-based)."""
        batch = self.rollout(vec, update)
        return batch, self.learn(batch, update)

    def check_role_rewards(self, batch: RolloutBatch, update: int) -> None:
        """Refuse per-role rewards the algorithm would silently train past (MARFT's credit).

        Raises:
            RoleRewardsIgnored: one line naming the roles and what to do instead.
        """
        credit = self.algorithm.credit
        pair = role_rewards_differ(batch.episodes)
        if (
            credit is None
            or pair is None
            or not credit_ignores_role_rewards(credit, batch.episodes)
        ):
            return
        a, b = pair
        raise RoleRewardsIgnored(
            f"--algo {self.algorithm.name} trains every role on the team reward, but "
            f"{self.config.env} gives its roles different rewards (update {update + 1}, round "
            f"{a.round}: {a.role} {a.reward:g}, {b.role} {b.reward:g}); train with --algo ippo "
            "(each role learns from its own reward) or have the judge give every role the team "
            "score (no Judgement.role_scores)"
        )

    def evaluate(self) -> dict[str, Any]:
        """Held-out evaluation (greedy, ``split="eval"``) of the current policy.

        Rates the env does not report (format, correctness) are left out.
        """
        if self.config.eval_episodes == 0:
            return {"success_rate": float("nan"), "episodes": 0}
        episodes = self.evaluate_episodes()
        return evaluation_record(episodes)

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

    def eval_due(self, update: int) -> bool:
        """Whether the schedule evaluates after ``update`` updates (0: before training)."""
        cfg = self.config
        return update == 0 or update % cfg.eval_every == 0 or update == cfg.updates

    def checkpoint_due(self, update: int, end: int) -> bool:
        """Whether the schedule saves after ``update`` updates (``end``: where this call stops)."""
        every = self.config.checkpoint_every
        return update % every == 0 or update == self.config.updates or update == end

    # ------------------------------------------------------------------ run
    def run(self, stop_after: int | None = None) -> dict[str, Any]:
        """Train until ``config.updates`` (or ``stop_after`` more updates: a simulated stop).

        Each update: rollout, learn, log; then evaluate and save a checkpoint when due.
        The first Ctrl-C lets the update under way finish, saves a checkpoint and
        raises :class:`~flexmg.agents.stop.TrainingInterrupted` (a ``KeyboardInterrupt``);
        :meth:`resume` continues exactly. The second Ctrl-C aborts at once.

        Returns the summary (also written to ``summary.json`` when the run completes).
        """
        end = self._open_run_dir(stop_after)
        with _Session(self) as s:
            if self._eval_pending:
                self.evaluate_and_log(s)
            while self.updates_done < end:
                self.stop_if_asked(s, eval_pending=False)
                s.update_started = time.monotonic()
                batch = self.rollout(s.vec, self.updates_done)
                learn_started = time.monotonic()
                stats = self.learn(batch, self.updates_done)
                stats["rollout_seconds"] = learn_started - s.update_started
                stats["learn_seconds"] = time.monotonic() - learn_started
                self.updates_done += 1
                self.log_update(s, batch, stats)
                s.show_progress(batch)
                self.stop_if_asked(s, eval_pending=self.eval_due(self.updates_done))
                if self.eval_due(self.updates_done):
                    self.evaluate_and_log(s)
                if self.checkpoint_due(self.updates_done, end):
                    self.save(s)
        return self.finish(s.wall())

    def _open_run_dir(self, stop_after: int | None) -> int:
        """Create (or reopen) the run folder; returns the update this call stops after."""
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
        end = self.config.updates
        return end if stop_after is None else min(end, self.updates_done + stop_after)

    def log_update(self, s: _Session, batch: RolloutBatch, stats: dict[str, float]) -> None:
        """Write update ``updates_done``'s record (and, when due, a sample of its episodes).

        Warns (in ``train.log``) when a stretch of updates with all-equal rewards starts.
        """
        save_rollout_transcripts(self, self.updates_done, batch)
        tokens = sum(len(sample.action_ids) for sample in batch.samples)
        s.logger.log(
            {
                "kind": "train",
                "update": self.updates_done,
                "success_rate": batch.success_rate,
                "team_reward": batch.mean_team_reward,
                "mean_rounds": summarize_episodes(batch.metrics)["mean_rounds"],
                "episodes": len(batch.metrics),
                "actions": len(batch.samples),
                "generated_tokens": tokens,
                "action_tokens": tokens / max(1, len(batch.samples)),
                **stats,
                "seconds": time.monotonic() - s.update_started,
            }
        )
        flat = bool(stats.get("flat_rewards", 0.0))
        warning = s.flat.observe(
            self.updates_done, flat, batch.metrics, stats.get("truncated_frac", 0.0)
        )
        if warning:
            s.log(warning)

    def evaluate_and_log(self, s: _Session) -> None:
        """Held-out evaluation after ``updates_done`` updates: its record and episodes.

        A Ctrl-C leaves it at once: nothing it changes is in a checkpoint, so the
        checkpoint saved on the way out has the evaluation still to do.
        """
        t0, rng = time.monotonic(), capture_rng_state()
        try:
            with s.stop.interruptible():
                if self.config.eval_episodes == 0:
                    result = self.evaluate()
                else:
                    episodes = evaluate_saving_transcripts(self, self.updates_done)
                    write_eval_episodes(self.run_dir, self.updates_done, episodes)
                    result = evaluation_record(episodes)
        except StopRequested:
            self._stop(s, eval_pending=True, rng=rng)
        self._eval_pending = False
        result = {
            "kind": "eval",
            "update": self.updates_done,
            **result,
            "seconds": time.monotonic() - t0,
        }
        self.evals.append({"update": self.updates_done, **{k: result.get(k) for k in EVAL_KEYS}})
        s.logger.log(result)
        s.show_eval(result.get("success_rate"))

    def save(
        self, s: _Session, eval_pending: bool = False, rng: dict[str, Any] | None = None
    ) -> Path:
        """Save the checkpoint of ``updates_done`` (atomically; keeps the newest few)."""
        s.saved = save_checkpoint(
            self.run_dir / "checkpoints",
            self.updates_done,
            self.checkpoint_state(s.wall(), eval_pending=eval_pending, rng=rng),
            keep=self.config.keep_checkpoints,
        )
        s.saved_update = self.updates_done
        return s.saved

    def stop_if_asked(self, s: _Session, eval_pending: bool) -> None:
        """After a Ctrl-C: save a checkpoint (``eval_pending``: the evaluation is still due)."""
        if s.stop.requested:
            self._stop(s, eval_pending)

    def _stop(self, s: _Session, eval_pending: bool, rng: dict[str, Any] | None = None) -> None:
        if s.saved is None or s.saved_update != self.updates_done or eval_pending:
            self.save(s, eval_pending=eval_pending, rng=rng)
        assert s.saved is not None
        s.log(f"stopped by Ctrl-C after update {self.updates_done}: saved {s.saved}", show=False)
        raise TrainingInterrupted(self.run_dir, self.updates_done, s.saved)

    def finish(self, wall_seconds: float) -> dict[str, Any]:
        """The summary (``summary.json`` once every update is done) and the learning curve.

        A completed run of a Hugging Face model also gets ``adapters/``: each role's
        LoRA in peft's layout (:func:`~flexmg.agents.adapters.export_adapters`).
        """
        summary = self.summary(wall_seconds)
        if self.updates_done >= self.config.updates:
            if exportable(self.policy):
                export_adapters(self.policy, self.run_dir / ADAPTERS_DIR)
            atomic_write_text(self.run_dir / "summary.json", json.dumps(summary, indent=2))
        write_learning_curve(self.run_dir)
        return summary

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


class _Session:
    """What one :meth:`Trainer.run` call holds open: train envs, logs, progress bar, Ctrl-C."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer
        self.start = self.update_started = time.monotonic()
        self.saved: Path | None = None
        self.saved_update: int | None = None
        self.bar: Any = None
        self.postfix: dict[str, str] = {}

    def __enter__(self) -> _Session:
        import flexmg

        t, cfg = self.trainer, self.trainer.config
        self.log = RunLog(t.run_dir / "train.log", show=self.show)
        self.stop = StopOnInterrupt(notify=self.show).__enter__()
        logger = None
        try:
            self.logger = logger = MetricsLogger(t.run_dir, t.updates_done)
            last = self.logger.last_train
            self.flat = FlatRewardWatch(previous_flat=bool(last and last.get("flat_rewards")))
            if t.updates_done or t.evals:
                self.log(f"resumed after update {t.updates_done} of {cfg.updates}", show=False)
            else:
                self.log(f"started: {cfg.algo} on {cfg.env}, {cfg.updates} updates", show=False)
            self.vec = flexmg.make_vec(
                cfg.env,
                num_envs=cfg.episodes_per_update,
                vectorization=cfg.vectorization,
                **{**cfg.env_kwargs, "split": "train"},
            )
        except BaseException:
            if logger is not None:
                logger.close()
            self.stop.__exit__(None, None, None)
            raise
        if cfg.progress:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=cfg.updates, initial=t.updates_done, unit="upd",
                            desc=f"{cfg.algo} {cfg.env}", dynamic_ncols=True)  # fmt: skip
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            if self.bar is not None:
                self.bar.close()
            self.vec.close()
            self.logger.close()
        finally:
            self.stop.__exit__(*exc)

    def wall(self) -> float:
        """Seconds this run has trained, earlier sessions included."""
        return self.trainer.wall_before + time.monotonic() - self.start

    def show(self, line: str) -> None:
        """Print ``line`` on stderr (above the progress bar when there is one)."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def show_progress(self, batch: RolloutBatch) -> None:
        """Advance the progress bar by one update."""
        if self.bar is not None:
            self.postfix.update(
                reward=f"{batch.mean_team_reward:.3f}", succ=f"{batch.success_rate:.2f}"
            )
            self.bar.set_postfix(self.postfix, refresh=False)
            self.bar.update(1)

    def show_eval(self, success_rate: float | None) -> None:
        """Show the newest held-out success next to the progress bar."""
        if self.bar is not None:
            self.postfix["eval"] = f"{float('nan') if success_rate is None else success_rate:.3f}"
            self.bar.set_postfix(self.postfix)


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
