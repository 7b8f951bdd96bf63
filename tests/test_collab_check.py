"""The check family: the checker's signal is the evaluation of the solver's expression."""

from __future__ import annotations

import pytest

import flexmg
from flexmg.envs.families.check import (
    CheckConfig,
    checker_from,
    evaluate_expression,
    find_expression,
    solver_from,
)
from flexmg.test import api_test

EPISODES = 100


def _team(solver, seed: int, env):
    env.reset(seed=seed)
    obs = env.observe("solver")
    env.step(solver(obs))
    env.step(checker_from(env.observe("checker")["context"]))
    return env.episode_metrics


@pytest.mark.parametrize("env_id", ["check-2agent", "check-1agent"])
def test_pettingzoo_api_test_passes(env_id: str) -> None:
    report = api_test(env_id, num_cycles=5, verbose=False)
    assert report.passed, report.summary()


def test_the_checker_never_sees_the_problem() -> None:
    env = flexmg.make("check-2agent")
    env.reset(seed=3)
    assert env.task.meta["expression"] not in str(env.observe("checker"))


def test_the_oracle_team_scores_one() -> None:
    env = flexmg.make("check-2agent")
    runs = [_team(lambda o: solver_from(o["task"]), seed, env) for seed in range(EPISODES)]
    assert sum(m["score"] for m in runs) / len(runs) == pytest.approx(1.0)


def test_the_checker_corrects_a_wrong_answer_from_the_evaluation() -> None:
    env = flexmg.make("check-2agent")
    env.reset(seed=5)
    wrong = int(env.task.answer) + 10
    env.step(f"Expression: {env.task.meta['expression']}\nSo \\boxed{{{wrong}}}")
    solver = env.transcript[-1]
    assert solver.info["annotation"].endswith(f"evaluates to {env.task.answer}")
    env.step(checker_from(env.observe("checker")["context"]))
    roles = env.episode_metrics["per_role"]
    assert roles["solver"]["answer_correct"] is False and roles["checker"]["answer_correct"]


def test_the_single_agent_counterpart_gets_the_evaluation_in_round_two() -> None:
    env = flexmg.make("check-1agent")
    right = 0
    for seed in range(20):
        env.reset(seed=seed)
        env.step(solver_from(env.observe("solver")["task"]))  # round 1: only the expression
        if env.agents:  # round 2: the evaluation is in its context
            obs = env.observe("solver")
            env.step(solver_from(obs["task"], obs["context"]))
        right += env.episode_metrics["answer_correct"]
        assert env.episode_metrics["rounds"] == 2
    assert right == 20


@pytest.mark.parametrize("mute", ["", "ok", "I checked it.", "Expression: none"])
def test_a_mute_solver_leaves_the_checker_at_chance(mute: str) -> None:
    env = flexmg.make("check-2agent")
    runs = [_team(lambda o: mute, seed, env) for seed in range(EPISODES)]
    assert sum(m["answer_correct"] for m in runs) / len(runs) <= 2 / EPISODES


@pytest.mark.parametrize(
    "hostile",
    [
        "9" * 200_000,
        "Expression: " + "(" * 5000 + "1" + ")" * 5000,
        "Expression: 10**10**10",
        "Expression: __import__('os').system('echo hi')",
        "1 " * 100_000 + "+",
        "(" * 60_000,
        "\u202e\U0001f600 Expression: ٣ + ٤ \ud800",
        "Expression: 1/0",
        "Expression: 99999999999999999999 * 9",
    ],
)
def test_hostile_text_never_crashes_and_is_scored_with_a_reason(hostile: str) -> None:
    env = flexmg.make("check-2agent")
    env.reset(seed=2)
    env.step(hostile)
    note = env.transcript[-1].info["annotation"]
    assert note.startswith(("no expression found", "the expression "))
    env.step(hostile)
    assert env.episode_metrics["per_role"]["checker"]["grade_reason"]


def test_the_evaluator_refuses_what_is_not_plain_arithmetic() -> None:
    assert evaluate_expression("2 ** 3")[0] is None
    assert "too long" in evaluate_expression("1+" * 100 + "1")[1]
    assert "digits" in evaluate_expression("1" * 16 + " * 2")[1]
    assert find_expression("Expression: 3 * 4 = 12") == "3 * 4"


def test_config_validates() -> None:
    with pytest.raises(ValueError, match="low < high"):
        flexmg.make("check-2agent", tasks={"low": 9, "high": 3})
    with pytest.raises(ValueError, match="bad CheckConfig fields"):
        CheckConfig.of({"digits": 3})
    env = flexmg.make("check-2agent", tasks={"shapes": ["{a} * {b} - {c}"]})
    env.reset(seed=0)
    assert " * " in env.task.meta["expression"] and " - " in env.task.meta["expression"]
