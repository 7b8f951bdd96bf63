"""Held-out evaluation: success, format and correctness per role and team, CIs over prompts
and (two-level) over seeds and prompts."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import pytest

from flexmg.agents.evaluation import evaluate_policy
from flexmg.evaluation import distinct_seed_plan, evaluation_record, task_key
from flexmg.metrics import (
    bootstrap_ci,
    bootstrap_ci_over_seeds,
    episode_mean,
    prompt_key,
    role_correct,
    role_format_ok,
)
from flexmg.tasks import Task


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


def test_the_interval_brackets_the_episode_mean_when_prompts_repeat() -> None:
    # one easy prompt drawn 30 times, nine hard ones once: 30 of 39 episodes succeed
    values = {"easy": [1.0] * 30, **{f"hard{i}": [0.0] for i in range(9)}}
    assert episode_mean(values) == pytest.approx(30 / 39)
    lo, hi = bootstrap_ci(values)
    assert lo <= 30 / 39 <= hi and hi - lo > 0.3  # ten prompts are little evidence
    episodes = [{"prompt_id": p, "success": bool(v)} for p, vs in values.items() for v in vs]
    out = evaluation_record(episodes)
    lo, hi = out["success_rate_ci"]
    assert out["prompts"] == 10 and lo <= out["success_rate"] <= hi


def test_empty_and_hostile_metrics_do_not_crash() -> None:
    out = evaluation_record([{}, {"per_role": "nonsense", "task_id": None}])
    assert out["episodes"] == 2 and out["success_rate"] == 0.0
    assert evaluation_record([])["success_rate_ci"] is None
    # a rate no episode reports is absent, not 0.0
    assert "format_rate" not in evaluation_record([{"per_role": {"a": None}}])
    said = [{"graded_role": "a", "per_role": {"a": {"format_ok": False}}}]
    assert pytest.approx(0.0) == evaluation_record(said)["format_rate"]


def test_prompts_are_the_prompt_text_not_the_task_id() -> None:
    # a generator can repeat a prompt under another task id: one prompt, not two
    same = {"success": True, "prompt_id": "p1"}
    out = evaluation_record([{**same, "task_id": "gen/1"}, {**same, "task_id": "gen/2"}])
    assert out["episodes"] == 2 and out["prompts"] == 1
    assert prompt_key({"task_id": "gen/1"}) == "gen/1"  # older records: the task id


def test_one_seed_of_the_two_level_bootstrap_is_the_prompt_bootstrap() -> None:
    prompts = {f"p{i}": [float(i % 3 == 0)] for i in range(30)}
    assert bootstrap_ci_over_seeds([prompts], resamples=500) == bootstrap_ci(prompts, 500)
    assert bootstrap_ci_over_seeds([]) is None and bootstrap_ci_over_seeds([{}, {}]) is None
    assert bootstrap_ci_over_seeds([{"a": [1.0]}]) is None
    assert bootstrap_ci_over_seeds([{"a": [1.0]}, {"b": [0.0]}]) == (0.0, 1.0)


def test_two_level_bootstrap_widens_when_seeds_disagree() -> None:
    # the same 100 outcomes (half successes) split over 4 seeds two ways
    agree = [{f"s{s}p{i}": [float(i % 2)] for i in range(25)} for s in range(4)]
    disagree = [{f"s{s}p{i}": [float(s % 2)] for i in range(25)} for s in range(4)]
    lo_a, hi_a = bootstrap_ci_over_seeds(agree, resamples=500)
    lo_d, hi_d = bootstrap_ci_over_seeds(disagree, resamples=500)
    assert lo_a < 0.5 < hi_a and lo_d <= 0.5 <= hi_d
    assert hi_d - lo_d > 2 * (hi_a - lo_a)
    # pooled into one seed the two are the same data: the seed level is what widens it
    pooled = [{k: v for g in disagree for k, v in g.items()}]
    lo_p, hi_p = bootstrap_ci_over_seeds(pooled, resamples=500)
    assert hi_p - lo_p < (hi_d - lo_d) / 2


def _coverage(two_level: bool, replicates: int = 40, seeds: int = 8, prompts: int = 15) -> float:
    """Share of simulated experiments whose 95% interval holds the true mean 0.5.

    Each seed has its own success probability (0.5 +- 0.2): seeds disagree, as
    training seeds do, so an interval over prompts alone is too narrow. (With 5
    seeds a percentile bootstrap covers ~85%, as a normal interval does where
    Student's t with 4 degrees of freedom belongs.)
    """
    rng = random.Random(1234)
    hits = 0
    for _ in range(replicates):
        groups = []
        for s in range(seeds):
            p = min(1.0, max(0.0, rng.gauss(0.5, 0.2)))
            groups.append({f"s{s}p{i}": [float(rng.random() < p)] for i in range(prompts)})
        if not two_level:
            groups = [{k: v for g in groups for k, v in g.items()}]
        lo, hi = bootstrap_ci_over_seeds(groups, resamples=300, seed=rng.randrange(1 << 30))
        hits += lo <= 0.5 <= hi
    return hits / replicates


def test_two_level_bootstrap_covers_the_true_mean() -> None:
    two_level, prompts_only = _coverage(True), _coverage(False)
    assert two_level >= 0.85, two_level
    assert prompts_only < two_level - 0.1, (prompts_only, two_level)


class PromptSumPolicy:
    """A greedy stand-in: boxes the sum of the task's integers (right on sums only)."""

    def __init__(self) -> None:
        self.observations = 0

    def act(self, role: str, observations: list[dict], greedy: bool = False) -> SimpleNamespace:
        self.observations += len(observations)
        texts = [
            f"\\boxed{{{sum(int(x) for x in re.findall(r'-?[0-9]+', o['task']))}}}"
            for o in observations
        ]
        n = len(texts)
        return SimpleNamespace(
            texts=texts,
            prompt_ids=[[1]] * n,
            action_ids=[[2]] * n,
            truncated=[False] * n,
            sampler_logprobs=[[-0.1]] * n,
            token_logprobs=[[-0.1]] * n,
            values=[0.0] * n,
            token_values=[[0.0]] * n,
            ref_token_logprobs=None,
        )


def test_a_task_drawn_again_is_played_once_and_counted_each_time() -> None:
    every, once = PromptSumPolicy(), PromptSumPolicy()
    full = evaluate_policy(every, "math-1agent", 150, seed=5, replay_repeats=False)
    fast = evaluate_policy(once, "math-1agent", 150, seed=5)
    assert every.observations == 150 and full["episodes"] == fast["episodes"] == 150
    played, copy_of = distinct_seed_plan("math-1agent", range(5, 155), {"split": "eval"})
    assert once.observations == len(played) == full["prompts"] < 150  # repeats were drawn
    assert sorted(set(copy_of)) == list(range(len(played)))
    assert 0.0 < full["success_rate"] < 1.0
    assert fast == full  # every figure, intervals included


def test_tasks_differing_only_in_name_share_a_key_and_others_do_not() -> None:
    base = Task("gen/1", "Write f.", "def f(): ...", {"index": 1, "tests": ["assert f()"]})
    renamed = Task("gen/2", "Write f.", "def f(): ...", {"index": 2, "tests": ["assert f()"]})
    harder = Task("gen/1", "Write f.", "def f(): ...", {"index": 1, "tests": ["assert not f()"]})
    assert task_key(base) == task_key(renamed) != task_key(harder)
