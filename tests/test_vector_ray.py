"""RayVectorEnv: the lockstep vector API with each env in a Ray actor (a local Ray instance)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

import flexmg
from flexmg.vector import SyncVectorEnv, WorkerError
from helpers import assert_vector_judges_in_parallel

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'flexmg[ray]'")
from flexmg.vector_ray import RayVectorEnv  # noqa: E402

pytestmark = pytest.mark.slow  # starts a Ray instance (a few seconds)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def _play(vec: Any, seed: int) -> list[Any]:
    vec.reset(seed=seed)
    turns = 0
    while not vec.all_done():
        role = vec.next_role()
        obs = vec.observe(role)
        vec.step(role, [None if o is None else f"\\boxed{{{len(o['task']) % 7}}}" for o in obs])
        turns += 1
    return vec.episodes()


def test_ray_envs_give_the_same_episodes_as_sync() -> None:
    fns = [partial(flexmg.make, "math-2agent", horizon=2) for _ in range(5)]
    sync, remote = SyncVectorEnv(fns), RayVectorEnv(fns)  # 5 envs on 2 actors (2 CPUs)
    try:
        assert remote.num_actors == 2
        assert remote.possible_agents == sync.possible_agents
        expected, got = _play(sync, 5), _play(remote, 5)
    finally:
        sync.close()
        remote.close()
    assert [e.seed for e in got] == [5, 6, 7, 8, 9]
    assert [e.metrics for e in got] == [e.metrics for e in expected]
    assert [[t.action for t in e.transcript] for e in got] == [
        [t.action for t in e.transcript] for e in expected
    ]


def test_ray_envs_judge_in_parallel() -> None:
    def slow_env() -> Any:  # nested: Ray ships it by value
        import os
        import time

        def reward(task: Any, transcript: Any) -> Any:
            start = time.time()
            time.sleep(0.5)
            return flexmg.Judgement(
                score=1.0, metrics={"pid": os.getpid(), "span": (start, time.time())}
            )

        wf = flexmg.Workflow(
            name="slow", roles={"a": ""}, tasks=[flexmg.Task(id="0", prompt="p")], reward=reward
        )
        return wf()

    vec = RayVectorEnv([slow_env for _ in range(3)], num_actors=3)
    assert_vector_judges_in_parallel(vec)


def test_ray_errors_are_clear() -> None:
    vec = flexmg.make_vec("echo", num_envs=2, vectorization="ray")
    try:
        vec.reset(seed=0)
        with pytest.raises(TypeError, match="must be a str"):
            vec.step("a", [None, None])
        vec.step("a", ["w", "w"])
        assert vec.next_role() == "b"
    finally:
        vec.close()
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset(seed=0)

    def broken() -> Any:
        raise OSError("no such dataset")

    with pytest.raises(WorkerError, match="no such dataset"):
        RayVectorEnv([broken])
    with pytest.raises(ValueError, match="num_actors"):
        RayVectorEnv([broken], num_actors=0)
