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
from collections.abc import Sequence
from functools import partial
from typing import Any

from flexmg.vector_base import EnvFn, EnvRunner, EpisodeResult, VectorEnvBase, WorkerError

# Old private names, kept for code that imported them.
_VectorBase = VectorEnvBase
_EnvRunner = EnvRunner

__all__ = [
    "AsyncVectorEnv",
    "EnvFn",
    "EpisodeResult",
    "SyncVectorEnv",
    "VectorEnvBase",
    "WorkerError",
    "make_vec",
]


class SyncVectorEnv(VectorEnvBase):
    """``num_envs`` Flex-MG envs stepped in lockstep in this process.

    Args:
        env_fns: one callable per env that builds it.
        autoreset: reset finished envs at once (see the module docs).
    """

    def __init__(self, env_fns: Sequence[EnvFn], autoreset: bool = False) -> None:
        super().__init__(len(env_fns), autoreset)
        self.envs = [fn() for fn in env_fns]
        self.possible_agents = list(self.envs[0].possible_agents)
        self._runners = [EnvRunner(e, i) for i, e in enumerate(self.envs)]

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
    runner: EnvRunner | None = None
    try:
        runner = EnvRunner(env_fn(), index)
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


class AsyncVectorEnv(VectorEnvBase):
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
        ctx: Any = mp.get_context(context)  # its Process type differs by start method
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
) -> VectorEnvBase:
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
