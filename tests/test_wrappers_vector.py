import sys

import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test

import flexmg
from flexmg.baselines.scripted import RandomAgent
from flexmg.episodes import rollout
from flexmg.vector import AsyncVectorEnv, SyncVectorEnv
from flexmg.wrappers import (
    LayeredParallelEnv,
    RecordTranscripts,
    SingleAgentEnv,
    TurnParallelEnv,
    read_transcripts,
)
from helpers import assert_vector_judges_in_parallel


def echo_word(obs):
    return obs["task"][5:] if obs["role"] == "a" else obs["context"][5:]


@pytest.mark.parametrize("view", [TurnParallelEnv, LayeredParallelEnv])
def test_parallel_views_pass_pettingzoo(view):
    parallel_api_test(view(flexmg.make("echo", horizon=3)), num_cycles=50)


def test_layered_view_runs_a_layer_at_once():
    wf = flexmg.Workflow(
        name="fan",
        roles={"x": "", "y": "", "z": ""},
        edges=[("x", "z"), ("y", "z")],
        tasks=[flexmg.Task(id="0", prompt="p")],
        reward=lambda t, tr: 1.0,
    )
    env = LayeredParallelEnv(wf())
    obs, infos = env.reset(seed=0)
    assert {r for r, i in infos.items() if i["acting"]} == {"x", "y"}
    obs, rew, term, trunc, infos = env.step({"x": "1", "y": "2", "z": "ignored"})
    assert obs["z"]["context"] == "[x]: 1\n[y]: 2"
    assert {r for r, i in infos.items() if i["acting"]} == {"z"}
    obs, rew, term, trunc, infos = env.step({"x": "", "y": "", "z": "3"})
    assert all(term.values()) and rew == {"x": 1.0, "y": 1.0, "z": 1.0}
    assert env.agents == []


@pytest.mark.parametrize("role", ["a", "b"])
def test_single_agent_env_passes_gymnasium_checker(role):
    other = "b" if role == "a" else "a"
    env = SingleAgentEnv(flexmg.make("echo", horizon=2), role, others={other: echo_word})
    check_env(env, skip_render_check=True)


def test_single_agent_env_requires_all_policies():
    with pytest.raises(ValueError, match="missing"):
        SingleAgentEnv(flexmg.make("echo"), "a", others={})


def test_record_transcripts_appends_and_reads(tmp_path):
    path = tmp_path / "ep.jsonl"
    env = RecordTranscripts(flexmg.make("echo"), path)
    for seed in range(3):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else echo_word(obs))
    episodes = list(read_transcripts(path))
    assert len(episodes) == 3 and all(e["metrics"]["success"] for e in episodes)
    assert episodes[1]["seed"] == 1 and len(episodes[1]["transcript"]) == 2
    with open(path, "a") as f:
        f.write('{"torn": ')  # a crash mid-write
    with pytest.warns(UserWarning, match="damaged"):
        assert len(list(read_transcripts(path))) == 3


@pytest.mark.parametrize("cls", [SyncVectorEnv, AsyncVectorEnv])
def test_vector_lockstep_and_masking(cls):
    # env i solves round 0 when i is even, else b fails until round 2 (different lengths)
    def act(obs, i):
        word = obs["task"][5:]
        fail = obs["role"] == "b" and i % 2 == 1 and int(obs["round"]) < 2
        return "wrong" if fail else word

    vec = cls([lambda: flexmg.make("echo", horizon=3) for _ in range(4)])
    try:
        vec.reset(seed=10)
        while not vec.all_done():
            role = vec.next_role()
            obs = vec.observe(role)
            mask = vec.mask(role)
            assert [o is not None for o in obs] == list(mask)
            vec.step(role, [None if o is None else act(o, i) for i, o in enumerate(obs)])
        eps = vec.episodes()
        assert [e.metrics["rounds"] for e in eps] == [1, 3, 1, 3]
        assert [e.seed for e in eps] == [10, 11, 12, 13]
        assert all(e.success for e in eps)
    finally:
        vec.close()


def test_vector_autoreset_queues_finished_episodes():
    vec = flexmg.make_vec("echo", num_envs=2, autoreset=True)
    vec.reset(seed=0)
    for _ in range(6):  # 3 episodes per env, 2 turns each
        role = vec.next_role()
        obs = vec.observe(role)
        vec.step(role, [None if o is None else "w" for o in obs])
    done = vec.pop_finished()
    assert len(done) == 6
    assert sorted(e.seed for e in done) == [0, 1, 2, 3, 4, 5]
    assert not vec.all_done()


def test_vector_errors():
    vec = flexmg.make_vec("echo", num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        vec.next_role()
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="one action per env"):
        vec.step("a", ["x"])
    with pytest.raises(TypeError, match="must be a str"):
        vec.step("a", [1, "x"])
    with pytest.raises(ValueError, match="vectorization"):
        flexmg.make_vec("echo", num_envs=2, vectorization="gpu")


def test_ray_vectorization_without_ray_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ImportError, match=r"flexmg\[ray\]"):
        flexmg.make_vec("echo", num_envs=2, vectorization="ray")


def test_async_worker_error_is_reported():
    vec = AsyncVectorEnv([lambda: flexmg.make("echo") for _ in range(2)])
    try:
        vec.reset(seed=0)
        with pytest.raises(Exception, match="dead-step|None|must be a str"):
            vec.step("a", [None, None])
    finally:
        vec.close()


def test_rollout_with_vector_env_and_random_agent():
    vec = flexmg.make_vec("echo", num_envs=3)
    res = rollout(vec, {"a": echo_word, "b": echo_word}, episodes=7, seed=0)
    assert len(res.episodes) == 7 and res.success_rate == 1.0
    res = rollout(flexmg.make("echo"), RandomAgent(seed=1), episodes=5)
    assert res.summary()["episodes"] == 5 and res.success_rate < 1.0


def _slow_reward(task, transcript):
    import os
    import time

    start = time.time()
    time.sleep(0.3)
    return flexmg.Judgement(score=1.0, metrics={"pid": os.getpid(), "span": (start, time.time())})


def _slow_env():
    wf = flexmg.Workflow(
        name="slow", roles={"a": ""}, tasks=[flexmg.Task(id="0", prompt="p")], reward=_slow_reward
    )
    return wf()


def test_async_vector_env_judges_in_parallel_processes():
    vec = AsyncVectorEnv([_slow_env for _ in range(3)])
    assert_vector_judges_in_parallel(vec)
