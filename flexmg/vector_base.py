"""What every vector env shares: the per-env driver and the lockstep-per-role logic.

:class:`VectorEnvBase` holds the lockstep API (``reset``, ``next_role``,
``observe``, ``step``, masks, autoreset); a backend implements four methods
(``_reset_one``, ``_observe_many``, ``_step_many``, ``close``) and drives each env
with an :class:`EnvRunner`. The backends are :mod:`flexmg.vector` (sync,
async) and :mod:`flexmg.vector_ray` (Ray); both import from here only.

Example:
    >>> import flexmg
    >>> from flexmg.vector_base import EnvRunner
    >>> runner = EnvRunner(flexmg.make("echo"), index=0)
    >>> runner.reset(seed=0, options=None)
    'a'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flexmg.env import FlexMGEnv, TurnRecord
from flexmg.tasks import Task

__all__ = ["EnvFn", "EnvRunner", "EpisodeResult", "VectorEnvBase", "WorkerError"]

EnvFn = Callable[[], FlexMGEnv]


@dataclass
class EpisodeResult:
    """A finished episode: which env, its seed and task, the transcript and metrics."""

    env_index: int
    seed: int | None
    task_id: str
    transcript: list[TurnRecord]
    metrics: dict[str, Any] = field(default_factory=dict)
    task: Task | None = None  # the task played (its gold answer for transcripts)
    rewards: dict[str, float] = field(default_factory=dict)  # per role, summed over the episode

    @property
    def success(self) -> bool:
        """Whether the episode's ``success`` metric is true."""
        return bool(self.metrics.get("success", False))

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (the transcript as a list of record dicts)."""
        return {
            "env_index": self.env_index,
            "seed": self.seed,
            "task_id": self.task_id,
            "metrics": self.metrics,
            "rewards": self.rewards,
            "transcript": [r.to_dict() for r in self.transcript],
        }


class EnvRunner:
    """The one turn stepper: drives one env, skips dead steps, sums rewards, records the end.

    Every driver steps envs through it: the vector envs (one runner per env),
    :func:`flexmg.episodes.play_batch` on top of them, and the seat driver of the
    framework adapters (:class:`flexmg.integrations.seats.SeatDriver`).
    ``rewards`` holds each role's rewards summed so far (PettingZoo's cumulative
    reward, collected each time the role is selected, dead steps included);
    ``step_rewards`` and ``step_infos`` are ``env.rewards`` and ``env.infos`` right
    after the last action (before the dead steps that follow it clear them);
    ``endings`` maps each role whose turns are over to its ``(terminated, truncated)``.
    """

    def __init__(self, env: FlexMGEnv, index: int) -> None:
        self.env = env
        self.index = index
        self.seed: int | None = None
        self.result: EpisodeResult | None = None
        self.rewards: dict[str, float] = {}
        self.step_rewards: dict[str, float] = {}
        self.step_infos: dict[str, dict[str, Any]] = {}
        self.endings: dict[str, tuple[bool, bool]] = {}
        self._pending: str | None = None

    def reset(self, seed: int | None, options: dict | None) -> str | None:
        """Reset the env with ``seed`` and ``options``; returns the role to act first."""
        self.seed = seed
        self.result = None
        self.rewards = {role: 0.0 for role in self.env.possible_agents}
        self.step_rewards, self.step_infos, self.endings = {}, {}, {}
        self.env.reset(seed=seed, options=options)
        return self._advance()

    def pending(self) -> str | None:
        """The role that must act next, or ``None`` once the episode is over."""
        return self._pending

    def _advance(self) -> str | None:
        """Collect the selected role's reward, take dead steps, record the end if reached."""
        env = self.env
        while env.agents:
            role = env.agent_selection
            _, reward, terminated, truncated, _ = env.last(observe=False)
            self.rewards[role] = self.rewards.get(role, 0.0) + float(reward)
            if not (terminated or truncated):
                self._pending = role
                return role
            self.endings[role] = (bool(terminated), bool(truncated))
            env.step(None)
        self._pending = None
        self.result = EpisodeResult(
            env_index=self.index,
            seed=self.seed,
            task_id=env.task.id if env.task else "",
            transcript=list(env.transcript),
            metrics=dict(env.episode_metrics),
            task=env.task,
            rewards=dict(self.rewards),
        )
        return None

    def observe(self, role: str) -> dict | None:
        """``role``'s observation, or ``None`` when another role (or nobody) is to act."""
        return self.env.observe(role) if self._pending == role else None

    def step(self, role: str, action: str | None) -> tuple[str | None, EpisodeResult | None]:
        """Apply ``role``'s ``action`` if it is that role's turn.

        Returns:
            The next pending role, and the episode's result when this step ended it.

        Raises:
            ValueError: if it is ``role``'s turn and ``action`` is ``None``.
        """
        if self._pending != role:
            return self._pending, None
        if action is None:
            raise ValueError(
                f"env {self.index} is waiting on role {role!r}: its action must be a str, got None"
            )
        self.env.step(action)
        self.step_rewards = {r: float(v) for r, v in self.env.rewards.items()}
        self.step_infos = {r: dict(i) for r, i in self.env.infos.items()}
        pending = self._advance()
        return pending, (self.result if pending is None else None)


class VectorEnvBase:
    """Shared logic of the sync and async vector envs."""

    num_envs: int
    possible_agents: list[str]

    def __init__(self, num_envs: int, autoreset: bool) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.autoreset = autoreset
        self._pending: list[str | None] = [None] * num_envs
        self._results: list[EpisodeResult | None] = [None] * num_envs
        self._seeds: list[int | None] = [None] * num_envs
        self._has_reset = False
        self.finished: list[EpisodeResult] = []

    # subclasses implement these four
    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> str | None:
        raise NotImplementedError(f"{type(self).__name__} must implement _reset_one")

    def _observe_many(self, role: str, idx: list[int]) -> list[dict | None]:
        raise NotImplementedError(f"{type(self).__name__} must implement _observe_many")

    def _step_many(
        self, role: str, idx: list[int], actions: list[str]
    ) -> list[tuple[str | None, EpisodeResult | None]]:
        raise NotImplementedError(f"{type(self).__name__} must implement _step_many")

    def close(self) -> None:
        """Close every env and release the backend's resources."""
        ...

    def reset(self, seed: int | Sequence[int] | None = None, options: dict | None = None) -> None:
        """Reset every env; env ``i`` gets ``seed + i`` (or ``seed[i]`` for a list)."""
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = [int(s) for s in seed]
            if len(seeds) != self.num_envs:
                raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} envs")
        self._seeds = seeds
        self._results = [None] * self.num_envs
        self.finished = []
        self._pending = self._reset_all(seeds, options)
        self._has_reset = True

    def _reset_all(self, seeds: list[int | None], options: dict | None) -> list[str | None]:
        return [self._reset_one(i, s, options) for i, s in enumerate(seeds)]

    def _require_reset(self) -> None:
        if not self._has_reset:
            raise RuntimeError("call vec.reset() before stepping the vector env")

    def pending_roles(self) -> list[str | None]:
        """The role each env waits on (``None`` for a finished env)."""
        return list(self._pending)

    def mask(self, role: str) -> np.ndarray:
        """Boolean array: which envs wait on ``role``."""
        return np.array([p == role for p in self._pending], dtype=bool)

    def all_done(self) -> bool:
        """True when every env has finished its episode (never with autoreset)."""
        self._require_reset()
        return all(p is None for p in self._pending)

    def next_role(self) -> str:
        """The role most unfinished envs wait on (ties: declaration order)."""
        self._require_reset()
        counts = Counter(p for p in self._pending if p is not None)
        if not counts:
            raise RuntimeError("all episodes are finished: call vec.reset()")
        order = {r: i for i, r in enumerate(self.possible_agents)}
        return max(counts, key=lambda r: (counts[r], -order.get(r, 0)))

    def observe(self, role: str) -> list[dict | None]:
        """One observation per env: a dict where the env waits on ``role``, else ``None``."""
        self._require_reset()
        idx = [i for i, p in enumerate(self._pending) if p == role]
        obs: list[dict | None] = [None] * self.num_envs
        for i, o in zip(idx, self._observe_many(role, idx)):
            obs[i] = o
        return obs

    def step(self, role: str, actions: Sequence[str | None]) -> np.ndarray:
        """Apply ``actions[i]`` in every env waiting on ``role`` (others are ignored).

        Returns a boolean array: which envs finished their episode with this step.
        """
        self._require_reset()
        if len(actions) != self.num_envs:
            raise ValueError(
                f"step() needs one action per env ({self.num_envs}), got {len(actions)}"
            )
        idx = [i for i, p in enumerate(self._pending) if p == role]
        sent: list[str] = []
        for i in idx:
            action = actions[i]
            if not isinstance(action, str):
                raise TypeError(
                    f"env {i} waits on role {role!r}: its action must be a str, "
                    f"got {type(action).__name__}"
                )
            sent.append(action)
        done = np.zeros(self.num_envs, dtype=bool)
        for i, (pending, result) in zip(idx, self._step_many(role, idx, sent)):
            self._pending[i] = pending
            if result is not None:
                done[i] = True
                self._results[i] = result
                if self.autoreset:
                    self.finished.append(result)
                    seed = self._seeds[i]
                    self._seeds[i] = None if seed is None else seed + self.num_envs
                    self._pending[i] = self._reset_one(i, self._seeds[i], None)
        return done

    def episodes(self) -> list[EpisodeResult]:
        """The finished episode of every env (after ``all_done()``), in env order."""
        missing = [i for i, r in enumerate(self._results) if r is None]
        if missing:
            raise RuntimeError(f"envs {missing} have not finished their episode yet")
        return list(self._results)  # type: ignore[arg-type]

    def pop_finished(self) -> list[EpisodeResult]:
        """With autoreset: the episodes finished since the last call."""
        out, self.finished = self.finished, []
        return out

    def __enter__(self) -> VectorEnvBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WorkerError(RuntimeError):
    """An exception raised inside a vector env's worker (process or Ray actor)."""
