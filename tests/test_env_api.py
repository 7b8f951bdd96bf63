"""The FlexMGEnv contract, exercised on the echo example and on custom workflows."""

import json

import numpy as np
import pytest

import flexmg
from flexmg import DependencyGraph, Judgement, Workflow
from flexmg.spaces import UnicodeText
from flexmg.tasks import ListTaskSource, Task


def play(env, action_fn, seed=0):
    env.reset(seed=seed)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        env.step(None if term or trunc else action_fn(agent, obs))
    return env


def test_turn_order_follows_graph_and_context_shows_predecessors():
    env = flexmg.make("echo")
    env.reset(seed=5)
    assert env.agent_selection == "a"
    word = env.observe("a")["task"][5:]
    assert env.observe("b")["context"] == ""
    env.step(word)
    assert env.agent_selection == "b"
    assert env.observe("b")["context"] == f"[a]: {word}"
    env.step(word)
    assert env.terminations == {"a": True, "b": True}
    assert env.rewards == {"a": 1.0, "b": 1.0}
    assert env.episode_metrics["success"] is True


def test_the_last_round_ends_the_game_and_feedback_flows():
    env = play(flexmg.make("echo", horizon=3), lambda a, o: "x" + a)
    assert env.episode_metrics["rounds"] == 3
    assert env.episode_metrics["success"] is False
    assert env.episode_metrics["truncated"] is False  # the game is over: terminated
    rounds = [r.round for r in env.transcript]
    assert rounds == [0, 0, 1, 1, 2, 2]
    assert env.transcript[2].observation["feedback"].startswith("b said")
    assert "Round 1:" in env.transcript[2].observation["context"]


def test_early_termination_on_success():
    calls = []

    def act(agent, obs):
        calls.append(int(obs["round"]))
        return "ok" if int(obs["round"]) == 1 else "no"

    wf = Workflow(
        name="t",
        roles={"a": "", "b": ""},
        edges=[("a", "b")],
        tasks=[Task(id="0", prompt="p")],
        reward=lambda task, tr: float(tr[-1].action == "ok"),
    )
    env = play(wf(horizon=5), act)
    assert env.episode_metrics["rounds"] == 2
    assert env.episode_metrics["success"] is True


def test_rewards_are_score_deltas_and_sum_to_final_score():
    scores = iter([0.25, 0.75, 0.5])
    wf = Workflow(
        name="delta",
        roles={"a": ""},
        tasks=[Task(id="0", prompt="p")],
        reward=lambda task, tr: Judgement(score=next(scores)),
    )
    env = wf(horizon=3)
    env.reset(seed=0)
    total = 0.0
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        total += rew
        if term or trunc:
            env.step(None)
        else:
            env.step("x")
    assert [r.reward for r in env.transcript] == [0.25, 0.5, -0.25]
    assert total == pytest.approx(0.5)
    assert env.episode_metrics["score"] == 0.5


def test_per_role_scores_and_role_info():
    wf = Workflow(
        name="credit",
        roles={"a": "", "b": ""},
        tasks=[Task(id="0", prompt="p")],
        reward=lambda task, tr: Judgement(
            score=1.0, role_scores={"a": 0.5}, role_info={"a": {"own_correct": False}}
        ),
    )
    env = wf()
    env.reset(seed=0)
    env.step("x")
    env.step("y")
    assert env.rewards == {"a": 0.5, "b": 1.0}
    assert env.infos["a"]["own_correct"] is False
    assert env.infos["a"]["team_score"] == 1.0


def test_flexible_graph_changes_between_rounds():
    def graph_fn(round_index, transcript):
        roles = ["x", "y"]
        return DependencyGraph(roles, [("x", "y")] if round_index % 2 == 0 else [("y", "x")])

    wf = Workflow(
        name="flex",
        roles={"x": "", "y": ""},
        graph=graph_fn,
        tasks=[Task(id="0", prompt="p")],
        reward=lambda t, tr: 0.0,
    )
    env = play(wf(horizon=3), lambda a, o: a)
    assert [r.role for r in env.transcript] == ["x", "y", "y", "x", "x", "y"]


def test_observation_in_space_and_spaces_cached():
    env = flexmg.make("echo", horizon=2)
    env.reset(seed=0)
    for a in env.possible_agents:
        assert env.observation_space(a) is env.observation_space(a)
        assert env.observation_space(a).contains(env.observe(a))
        assert "observation" not in env.observation_space(a).spaces
        assert isinstance(env.action_space(a), UnicodeText)


def test_long_action_is_truncated_and_flagged():
    env = flexmg.make("echo", max_action_chars=10)
    env.reset(seed=0)
    env.step("y" * 1000)
    assert env.infos["a"]["action_truncated"] is True
    assert env.transcript[-1].action == "y" * 10


def test_surrogates_are_repaired_and_flagged():
    env = flexmg.make("echo")
    env.reset(seed=0)
    env.step("bad\ud800x")
    assert env.infos["a"]["invalid_unicode"] is True
    assert env.transcript[-1].action == "bad\ufffdx"
    json.dumps([r.to_dict() for r in env.transcript], ensure_ascii=False).encode("utf-8")


def test_programmer_errors_are_clear():
    env = flexmg.make("echo")
    with pytest.raises(RuntimeError, match="reset"):
        env.step("x")
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"role 'a'.*str.*int"):
        env.step(3)
    with pytest.raises(KeyError, match="unknown agent"):
        env.observe("nobody")
    env.step("x")
    env.step("x")
    with pytest.raises(ValueError, match="None"):
        env.step("late")


def test_seed_reproduces_episode():
    e1, e2 = flexmg.make("echo"), flexmg.make("echo")
    tasks1 = [e1.reset(seed=s) or e1.task.id for s in range(10)]
    tasks2 = [e2.reset(seed=s) or e2.task.id for s in range(10)]
    assert tasks1 == tasks2
    assert len(set(tasks1)) > 1


def test_transcript_records():
    env = play(flexmg.make("echo"), lambda a, o: "apple")
    rec = env.transcript[1]
    assert (rec.round, rec.role, rec.position) == (0, "b", 1)
    assert rec.observation["role"] == "b"
    assert rec.time >= 0
    assert rec.team_reward == env.episode_metrics["score"]
    assert isinstance(rec.observation["round"], np.integer)


def test_workflow_validation_errors():
    with pytest.raises(ValueError, match="exactly one"):
        Workflow(name="w", roles={"a": ""}, tasks=[Task(id="0", prompt="p")])
    with pytest.raises(ValueError, match="cycle"):
        Workflow(
            name="w",
            roles={"a": "", "b": ""},
            edges=[("a", "b"), ("b", "a")],
            tasks=[Task(id="0", prompt="p")],
            reward=lambda t, tr: 0.0,
        )
    wf = Workflow(
        name="w", roles={"a": ""}, tasks=[Task(id="0", prompt="p")], reward=lambda t, tr: "nope"
    )
    env = wf()
    env.reset(seed=0)
    with pytest.raises(TypeError, match="float or a flexmg.Judgement"):
        env.step("x")
    with pytest.raises(TypeError, match="unexpected keyword"):
        wf(sandbox="docker")


def test_roles_and_prompts_overrides():
    env = flexmg.make("echo", prompts={"b": "Echo!"})
    assert env.instructions["b"] == "Echo!"
    with pytest.raises(ValueError, match="unknown role"):
        flexmg.make("echo", prompts={"zz": "?"})
    env = flexmg.make("echo", roles={"a": "speak", "b": "repeat", "c": "watch"})
    assert env.possible_agents == ["a", "b", "c"]


def test_list_task_source_split_never_overlaps():
    tasks = [Task(id=f"t{i}", prompt=str(i)) for i in range(200)]
    parts = [
        {t.id for t in ListTaskSource(tasks, split=s).tasks} for s in ("train", "eval", "test")
    ]
    assert all(parts) and sum(map(len, parts)) == len(set().union(*parts))
    assert set().union(*parts) == {t.id for t in tasks}
