"""Held-out evaluation: success, format and correctness per role and team, CIs over prompts."""

from __future__ import annotations

import pytest

from flexmg.agents.evaluation import evaluation_record
from flexmg.metrics import bootstrap_ci, role_correct, role_format_ok


def _episode(task: str, success: bool, solver: dict, verifier: dict) -> dict:
    return {
        "task_id": task,
        "success": success,
        "team_reward": float(success),
        "rounds": 1,
        "graded_role": "verifier",
        "per_role": {"solver": solver, "verifier": verifier},
    }


def test_env_flags_win_over_the_older_fields() -> None:
    # a boxed but wrong answer: well formed, not correct
    assert role_format_ok({"format_ok": True, "own_correct": False, "format_error": False})
    assert not role_correct({"answer_correct": False, "own_correct": True})
    # an unboxed right value: correct however it is written, format not ok
    assert role_correct({"answer_correct": True, "own_correct": None})
    assert not role_format_ok({"format_ok": False, "own_correct": None})
    # without the new flags: graded without a format error is well formed
    assert role_format_ok({"own_correct": False, "format_error": False})
    assert not role_format_ok({"own_correct": None, "format_error": False})
    assert not role_format_ok({"own_correct": False, "format_error": True})


def test_team_is_the_graded_role_and_prompts_are_distinct() -> None:
    right = {"format_ok": True, "answer_correct": True}
    unboxed = {"format_ok": False, "answer_correct": True}
    wrong = {"format_ok": True, "answer_correct": False}
    metrics = [
        _episode("t1", True, wrong, right),
        _episode("t1", True, wrong, right),  # the same prompt again
        _episode("t2", False, right, unboxed),
        _episode("t3", False, right, wrong),
    ]
    out = evaluation_record(metrics)
    assert out["episodes"] == 4 and out["prompts"] == 3
    assert out["success_rate"] == 0.5
    assert out["format_rate"] == 0.75 and out["correct_rate"] == 0.75
    assert out["per_role"]["solver"] == {
        "success": 0.5, "format": 1.0, "correct": 0.5, "truncated": 0.0,
    }  # fmt: skip
    lo, hi = out["correct_rate_ci"]
    assert 0.0 <= lo <= 0.75 <= hi <= 1.0


def test_bootstrap_is_over_prompts_and_needs_two() -> None:
    assert bootstrap_ci({"only": [1.0, 0.0, 1.0]}) is None
    lo, hi = bootstrap_ci({f"p{i}": [float(i % 2)] for i in range(40)})
    assert lo < 0.5 < hi and hi - lo < 0.4
    # many episodes of one fixed outcome per prompt do not narrow the interval
    wide = bootstrap_ci({f"p{i}": [float(i % 2)] * 50 for i in range(4)})
    assert wide is not None and wide[1] - wide[0] >= 0.45


def test_empty_and_hostile_metrics_do_not_crash() -> None:
    out = evaluation_record([{}, {"per_role": "nonsense", "task_id": None}])
    assert out["episodes"] == 2 and out["success_rate"] == 0.0
    assert evaluation_record([])["success_rate_ci"] is None
    assert pytest.approx(0.0) == evaluation_record([{"per_role": {"a": None}}])["format_rate"]
