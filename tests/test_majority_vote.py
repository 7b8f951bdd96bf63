"""The majority-vote benchmark: votes by value, grades the chosen value with the env, and runs
end to end on the tiny model (figures present and in range; no timing asserted)."""

from __future__ import annotations

import json

import pytest

import flexmg
from helpers import load_benchmark


@pytest.fixture(scope="module")
def mv():
    return load_benchmark("majority_vote")


def test_votes_count_equal_values_once_and_ties_go_to_the_first(mv) -> None:
    assert mv.majority(["12", "7", "12.0", None, None, None]) == ("12", 2)
    assert mv.majority(["\\frac{1}{2}", "0.5", "1/2", "3"]) == ("\\frac{1}{2}", 3)
    assert mv.majority(["7", "12"]) == ("7", 1)
    assert mv.majority([None, None]) == (None, 0)
    assert mv.majority([]) == (None, 0)


def test_the_env_grades_the_chosen_value(mv) -> None:
    kwargs = {"tasks": load_benchmark("equal_budget").TASKS, "split": "test"}
    env = flexmg.make(mv.ENV, **kwargs)
    env.reset(seed=3)
    gold = env.task.answer
    assert mv.graded(env, 3, gold) is True
    assert mv.graded(env, 3, str(int(gold) + 1)) is False
    assert mv.graded(env, 3, None) is False
    env.close()
    right = {"per_role": {"solver": {"answer": gold, "answer_correct": True}}, "task_id": "t"}
    wrong = {"per_role": {"solver": {"answer": "-5", "answer_correct": False}}, "task_id": "t"}
    none = {"per_role": {"solver": {"answer": None, "answer_correct": False}}, "task_id": "t"}
    rows = mv.vote([3, 3], [[wrong, wrong, right], [right, none, none]], kwargs)
    assert [r["majority_correct"] for r in rows] == [False, True]
    assert [r["pass@3"] for r in rows] == [1.0, 1.0]
    assert rows[0]["sampled_correct"] == pytest.approx(1 / 3)


def test_runs_end_to_end_on_the_tiny_model(mv, tmp_path, capsys) -> None:
    out = tmp_path / "majority.json"
    args = ["--model", "tiny", "--prompts", "5", "--k", "3", "--max-new-tokens", "24"]
    assert mv.main([*args, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "majority_correct" in printed and "pass@3" in printed
    result = json.loads(out.read_text())
    assert result["prompts"] == 5 and result["k"] == 3 and result["wall_s"] > 0
    assert len(result["rows"]) == 5 and all(len(r["answers"]) == 3 for r in result["rows"])
    for key in ("majority_correct", "sampled_correct", "pass@3", "no_answer"):
        assert 0.0 <= result[key]["mean"] <= 1.0 and result[key]["ci95"] is not None
    # pass@k bounds the other two, prompt by prompt
    for r in result["rows"]:
        assert r["pass@3"] >= r["sampled_correct"] and r["pass@3"] >= r["majority_correct"]
