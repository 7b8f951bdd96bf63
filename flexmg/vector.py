"""Vector envs for batched LLM rollouts: N envs stepped in lockstep, role by role.

An LLM policy is fastest when it generates for many prompts at once, and a
role's prompts can only be built once its predecessors have acted. So the
vector env exposes the game one *role* at a time: ``next_role()`` names the
role that most unfinished envs are waiting on, ``observe(role)`` gives one
observation per env (``None`` for envs not waiting on that role: the mask),
and ``step(role, actions)`` applies one action per waiting env. Dead steps
(PettingZoo's ``None`` actions for finished roles) are handled inside.

Episodes that end at different rounds are masked out: a finished env yields
``None`` observations and ignores actions until the next ``reset()``. With
``autoreset=True`` a finished env is instead reset at once with the next seed
of its stream (``seed_i + k * num_envs``) and its finished episode is queued
in ``finished`` (read them with ``pop_finished()``).

``SyncVectorEnv`` steps envs in this process; ``AsyncVectorEnv`` keeps each
env in a worker process, so reward computation (sandboxed tests, grading)
runs in parallel across envs; ``RayVectorEnv`` (:mod:`flexmg.vector_ray`,
``vectorization="ray"``) spreads the envs over Ray actors, on one machine or a
cluster.

Example:
    >>> import flexmg
    >>> vec = flexmg.make_vec("echo", num_envs=3)
    >>> vec.reset(seed=0)
    >>> while not vec.all_done():
    ...     role = vec.next_role()
    ...     obs = vec.observe(role)
    ...     _ = vec.step(role, [None if o is None else o["task"][5:] for o in obs])
    >>> [ep.metrics["success"] for ep in vec.episodes()]
    [True, True, True]
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from flexmg.env import FlexMGEnv, TurnRecord

EnvFn = Callable[[], FlexMGEnv]


@dataclass
class EpisodeResult:
    """A finished episode: which env, its seed and task, the transcript and metrics."""

    env_index: int
    seed: int | None
    task_id: str
    transcript: list[TurnRecord]
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return bool(self.metrics.get("success", False))

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_index": self.env_index,
            "seed": self.seed,
            "task_id": self.task_id,
            "metrics": self.metrics,
            "transcript": [r.to_dict() for r in self.transcript],
        }


class _EnvRunner:
    """Drives one env for the vector API: skips dead steps, records finished episodes."""

    def __init__(self, env: FlexMGEnv, index: int) -> None:
        self.env = env
        self.index = index
        self.seed: int | None = None
        self.result: EpisodeResult | None = None

    def reset(self, seed: int | None, options: dict | None) -> str | None:
        self.seed = seed
        self.result = None
        self.env.reset(seed=seed, options=options)
        return self.pending()

    def pending(self) -> str | None:
        env = self.env
        while env.agents and (
            env.terminations[env.agent_selection] or env.truncations[env.agent_selection]
        ):
            env.step(None)
        if not env.agents:
            if self.result is None:
                self.result = EpisodeResult(
                    env_index=self.index,
                    seed=self.seed,
                    task_id=env.task.id if env.task else "",
                    transcript=list(env.transcript),
                    metrics=dict(env.episode_metrics),
                )
            return None
        return env.agent_selection

    def observe(self, role: str) -> dict | None:
        return self.env.observe(role) if self.pending() == role else None

    def step(self, role: str, action: str | None) -> tuple[str | None, EpisodeResult | None]:
        if self.pending() != role:
            return self.pending(), None
        if action is None:
            raise ValueError(
                f"env {self.index} is waiting on role {role!r}: its action must be a str, got None"
            )
        self.env.step(action)
        pending = self.pending()
        return pending, (self.result if pending is None else None)


class _VectorBase:
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
    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> str | None: ...
    def _observe_many(self, role: str, idx: list[int]) -> list[dict | None]: ...
    def _step_many(
        self, role: str, idx: list[int], actions: list[str]
    ) -> list[tuple[str | None, EpisodeResult | None]]: ...
    def close(self) -> None: ...

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
        for i in idx:
            if not isinstance(actions[i], str):
                raise TypeError(
                    f"env {i} waits on role {role!r}: its action must be a str, "
                    f"got {type(actions[i]).__name__}"
                )
        done = np.zeros(self.num_envs, dtype=bool)
        for i, (pending, result) in zip(idx, self._step_many(role, idx, [actions[i] for i in idx])):
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

    def __enter__(self) -> _VectorBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncVectorEnv(_VectorBase):
    """``num_envs`` Flex-MG envs stepped in lockstep in this process.

    Args:
        env_fns: one callable per env that builds it.
        autoreset: reset finished envs at once (see the module docs).
    """

    def __init__(self, env_fns: Sequence[EnvFn], autoreset: bool = False) -> None:
        super().__init__(len(env_fns), autoreset)
        self.envs = [fn() for fn in env_fns]
        self.possible_agents = list(self.envs[0].possible_agents)
        self._runners = [_EnvRunner(e, i) for i, e in enumerate(self.envs)]

    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> str | None:
        return self._runners[i].reset(seed, options)

    def _observe_many(self, role: str, idx: list[int]) -> list[dict | None]:
        return [self._runners[i].observe(role) for i in idx]

    def _step_many(self, role: str, idx: list[int], actions: list[str]):
        return [self._runners[i].step(role, a) for i, a in zip(idx, actions)]

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _worker(remote: Any, parent_remote: Any, env_fn: EnvFn, index: int) -> None:
    parent_remote.close()
    runner: _EnvRunner | None = None
    try:
        runner = _EnvRunner(env_fn(), index)
        remote.send(("ok", list(runner.env.possible_agents)))
        while True:
            cmd, args = remote.recv()
            try:
                if cmd == "reset":
                    out: Any = runner.reset(*args)
                elif cmd == "observe":
                    out = runner.observe(*args)
                elif cmd == "step":
                    out = runner.step(*args)
                elif cmd == "close":
                    runner.env.close()
                    remote.send(("ok", None))
                    break
                else:
                    raise ValueError(f"unknown command {cmd!r}")
                remote.send(("ok", out))
            except Exception as err:  # report to the parent, keep serving
                remote.send(("error", (type(err).__name__, str(err), traceback.format_exc())))
    except (EOFError, KeyboardInterrupt):
        pass
    except Exception as err:
        try:
            remote.send(("error", (type(err).__name__, str(err), traceback.format_exc())))
        except Exception:
            pass
    finally:
        remote.close()


class WorkerError(RuntimeError):
    """An exception raised inside an ``AsyncVectorEnv`` worker."""


class AsyncVectorEnv(_VectorBase):
    """``num_envs`` Flex-MG envs, each in its own worker process, stepped in lockstep.

    Every command is sent to all involved workers before any answer is read,
    so the envs' reward computation (sandboxed tests, grading) runs in parallel.

    Args:
        env_fns: one callable per env (picklable unless the context is ``fork``).
        autoreset: reset finished envs at once.
        context: multiprocessing start method (default: ``fork`` on Linux,
            ``spawn`` elsewhere).
    """

    def __init__(
        self, env_fns: Sequence[EnvFn], autoreset: bool = False, context: str | None = None
    ) -> None:
        super().__init__(len(env_fns), autoreset)
        if context is None:
            context = "fork" if sys.platform.startswith("linux") else "spawn"
        ctx = mp.get_context(context)
        self._remotes = []
        self._procs = []
        for i, fn in enumerate(env_fns):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, parent, fn, i), daemon=True)
            proc.start()
            child.close()
            self._remotes.append(parent)
            self._procs.append(proc)
        self._closed = False
        agents = [self._recv(i) for i in range(self.num_envs)]
        self.possible_agents = list(agents[0])

    def _recv(self, i: int) -> Any:
        try:
            status, payload = self._remotes[i].recv()
        except EOFError:
            raise WorkerError(f"worker {i} died (exit code {self._procs[i].exitcode})") from None
        if status == "error":
            name, message, tb = payload
            raise WorkerError(f"worker {i} raised {name}: {message}\n{tb}")
        return payload

    def _call(self, idx: list[int], cmd: str, args_per_env: list[tuple]) -> list[Any]:
        if self._closed:
            raise RuntimeError("this AsyncVectorEnv is closed")
        for i, args in zip(idx, args_per_env):
            self._remotes[i].send((cmd, args))
        return [self._recv(i) for i in idx]

    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> str | None:
        return self._call([i], "reset", [(seed, options)])[0]

    def _reset_all(self, seeds: list[int | None], options: dict | None) -> list[str | None]:
        idx = list(range(self.num_envs))
        return self._call(idx, "reset", [(s, options) for s in seeds])

    def _observe_many(self, role: str, idx: list[int]) -> list[dict | None]:
        return self._call(idx, "observe", [(role,)] * len(idx))

    def _step_many(self, role: str, idx: list[int], actions: list[str]):
        return self._call(idx, "step", [(role, a) for a in actions])

    def close(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        for remote in self._remotes:
            try:
                remote.send(("close", ()))
            except (BrokenPipeError, OSError):
                pass
        for i, remote in enumerate(self._remotes):
            try:
                if remote.poll(5):
                    remote.recv()
            except (EOFError, OSError):
                pass
            remote.close()
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def make_vec(
    env_id: str,
    num_envs: int,
    vectorization: str = "sync",
    autoreset: bool = False,
    **kwargs: Any,
) -> _VectorBase:
    """``num_envs`` copies of a registered env (see :func:`flexmg.make_vec`)."""
    from flexmg.registration import make

    make(env_id, **kwargs).close()  # fail fast, in this process, on a bad id or kwargs
    fns = [partial(make, env_id, **kwargs) for _ in range(num_envs)]
    if vectorization == "sync":
        return SyncVectorEnv(fns, autoreset=autoreset)
    if vectorization == "async":
        return AsyncVectorEnv(fns, autoreset=autoreset)
    if vectorization == "ray":
        from flexmg.vector_ray import RayVectorEnv

        return RayVectorEnv(fns, autoreset=autoreset)
    raise ValueError(f"vectorization must be 'sync', 'async' or 'ray', got {vectorization!r}")
