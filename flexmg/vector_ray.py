"""A vector env whose envs live in Ray actors: judging spread over a Ray cluster.

Same lockstep-per-role API as :class:`~flexmg.vector.SyncVectorEnv` and
:class:`~flexmg.vector.AsyncVectorEnv` (``next_role`` / ``observe`` / ``step``),
but the envs live in Ray actors (by default one per CPU of the cluster), so
reward computation (sandboxed tests, grading) runs on whatever machines the
Ray cluster has. Call ``ray.init(address=...)``
first to join a cluster; without it Ray starts a local instance on first use.
Ray is an optional dependency: ``pip install 'flexmg[ray]'``.

Example:
    >>> import flexmg
    >>> vec = flexmg.make_vec("echo", num_envs=2, vectorization="ray")  # doctest: +SKIP
    >>> vec.reset(seed=0)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flexmg.vector_base import EnvFn, EnvRunner, VectorEnvBase, WorkerError

__all__ = ["RayVectorEnv"]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(
            "vectorization='ray' needs Ray: pip install 'flexmg[ray]' (or pip install ray)"
        ) from None
    return ray


class _EnvActor:
    """Some envs inside one Ray actor, stepped one after another (same driver as elsewhere)."""

    def __init__(self, env_fns: list[EnvFn], indices: list[int]) -> None:
        self.runners = {i: EnvRunner(fn(), i) for fn, i in zip(env_fns, indices, strict=True)}

    def possible_agents(self) -> list[str]:
        return list(next(iter(self.runners.values())).env.possible_agents)

    def call(self, method: str, calls: list[tuple[int, tuple]]) -> list[Any]:
        return [getattr(self.runners[i], method)(*args) for i, args in calls]

    def close(self) -> None:
        for runner in self.runners.values():
            runner.env.close()


class RayVectorEnv(VectorEnvBase):
    """``num_envs`` Flex-MG envs spread over Ray actors, stepped in lockstep.

    Env ``i`` lives in actor ``i % num_actors``. Every call goes to all involved
    actors before any answer is awaited, so the actors judge in parallel (the
    envs of one actor judge one after another).

    Args:
        env_fns: one callable per env (serialized with cloudpickle).
        autoreset: reset finished envs at once.
        num_actors: Ray actors (processes) to spread the envs over (default: the
            cluster's CPU count, at most ``num_envs``).
        actor_options: passed to ``ActorClass.options`` (e.g. ``{"num_cpus": 1,
            "scheduling_strategy": "SPREAD"}`` to spread actors over a cluster).
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFn],
        autoreset: bool = False,
        num_actors: int | None = None,
        actor_options: dict[str, Any] | None = None,
    ) -> None:
        self._ray = _import_ray()
        self._actors: list[Any] = []
        self._closed = True
        super().__init__(len(env_fns), autoreset)
        if num_actors is None:
            if not self._ray.is_initialized():
                self._ray.init()
            num_actors = int(self._ray.cluster_resources().get("CPU", 1))
        if num_actors < 1:
            raise ValueError(f"num_actors must be >= 1, got {num_actors}")
        n = min(num_actors, self.num_envs)
        actor_cls = self._ray.remote(_EnvActor).options(**(actor_options or {}))
        groups = [list(range(k, self.num_envs, n)) for k in range(n)]
        self._actors = [actor_cls.remote([env_fns[i] for i in g], g) for g in groups]
        self._home = {i: k for k, g in enumerate(groups) for i in g}
        self._closed = False
        try:
            agents = self._get([a.possible_agents.remote() for a in self._actors])
        except BaseException:
            self.close()
            raise
        self.possible_agents = list(agents[0])

    @property
    def num_actors(self) -> int:
        """How many Ray actors hold the envs."""
        return len(self._actors)

    def _get(self, refs: list[Any]) -> list[Any]:
        try:
            return self._ray.get(refs)
        except self._ray.exceptions.RayError as err:
            raise WorkerError(f"a Ray env actor failed: {err}") from None

    def _call(self, idx: list[int], method: str, args_per_env: list[tuple]) -> list[Any]:
        if self._closed:
            raise RuntimeError("this RayVectorEnv is closed")
        per_actor: dict[int, list[tuple[int, tuple]]] = {}
        for i, args in zip(idx, args_per_env, strict=True):
            per_actor.setdefault(self._home[i], []).append((i, args))
        keys = list(per_actor)
        answers = self._get([self._actors[k].call.remote(method, per_actor[k]) for k in keys])
        out = {}
        for k, values in zip(keys, answers, strict=True):
            out.update({i: v for (i, _), v in zip(per_actor[k], values, strict=True)})
        return [out[i] for i in idx]

    def _reset_one(self, i: int, seed: int | None, options: dict | None) -> str | None:
        return self._call([i], "reset", [(seed, options)])[0]

    def _reset_all(self, seeds: list[int | None], options: dict | None) -> list[str | None]:
        return self._call(list(range(self.num_envs)), "reset", [(s, options) for s in seeds])

    def _observe_many(self, role: str, idx: list[int]) -> list[dict | None]:
        return self._call(idx, "observe", [(role,)] * len(idx))

    def _step_many(self, role: str, idx: list[int], actions: list[str]):
        return self._call(idx, "step", [(role, a) for a in actions])

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        try:
            ray.get([a.close.remote() for a in self._actors], timeout=10)
        except Exception:
            pass  # a dead actor has nothing left to close
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:
                pass
        self._actors = []

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
