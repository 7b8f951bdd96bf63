"""The procedural code task family: determinism, the canonical split, hidden tests
graded through the real local sandbox, wrong variants, and the code envs on it."""

from __future__ import annotations

import dataclasses
import doctest
import random

import pytest

import flexmg
from flexmg.envs.code import (
    DEFAULT_CODE_TASKS,
    DIFFICULTY_CONFIGS,
    ProceduralCodeConfig,
    ProceduralCodeTasks,
    builtin_tasks,
    canonical_key,
    grade_many,
    make_code_source,
    procedural,
    procedural_spec,
    reference_solution,
    source,
    wrong_solution,
    wrong_solutions,
)
from flexmg.envs.code.procedural_spec import canonical_form, evaluate, render_code

LEVELS = (1, 2, 3, 4, 5)


def fenced(code: str) -> str:
    return f"My solution:\n```python\n{code}```\n"


def sample(level: int, n: int, split: str = "all", seed: int = 0) -> list:
    src = ProceduralCodeTasks(difficulty=level, seed=seed, split=split)
    return [src.get(i) for i in range(n)]


# ----------------------------------------------------------------- determinism


def test_a_fixed_seed_gives_the_same_task_and_other_seeds_other_tasks():
    a = [ProceduralCodeTasks(difficulty=2, seed=5).get(i) for i in range(30)]
    b = [ProceduralCodeTasks(difficulty=2, seed=5).get(i) for i in range(30)]
    assert [(t.id, t.prompt, t.answer, t.meta["tests"]) for t in a] == [
        (t.id, t.prompt, t.answer, t.meta["tests"]) for t in b
    ]
    other = [ProceduralCodeTasks(difficulty=2, seed=6).get(i).prompt for i in range(30)]
    assert other != [t.prompt for t in a]


def test_tasks_have_the_code_task_shape():
    for level in LEVELS:
        for task in sample(level, 40):
            meta = task.meta
            assert meta["entry_point"] == "f" and meta["source"] == "procedural"
            assert meta["difficulty"] == level
            assert len(meta["tests"]) == DIFFICULTY_CONFIGS[level].n_tests
            assert all(t.startswith("assert f(") for t in meta["tests"])
            assert task.prompt.startswith("Write `f(") and "\n" not in task.prompt
            assert task.answer == reference_solution(task) and task.answer.startswith("def f(")
            # the prompt's example is the first hidden test
            example = task.prompt.split("For example, ")[1].removesuffix(".")
            assert meta["tests"][0] == "assert " + example.replace(" returns ", " == ", 1)


def test_the_difficulty_mix_and_the_default_mix():
    mixed = ProceduralCodeTasks(difficulty=[1, 4])
    assert {mixed.get(i).meta["difficulty"] for i in range(40)} == {1, 4}
    default = make_code_source("procedural")
    assert {default.get(i).meta["difficulty"] for i in range(40)} == {1, 2}


def test_difficulty_adds_operations_and_branches():
    mean_len = [sum(len(t.answer) for t in sample(level, 200)) / 200 for level in LEVELS]
    assert mean_len == sorted(mean_len) and mean_len[-1] > 1.5 * mean_len[0]
    kinds = {level: {t.meta["category"] for t in sample(level, 200)} for level in LEVELS}
    assert "branch" not in kinds[1] | kinds[2] and "branch" in kinds[3] and "branch" in kinds[5]
    assert any(" if x " in t.answer for t in sample(2, 200))  # list filters from level 2
    assert any("elif" in t.answer or t.answer.count("if x") == 2 for t in sample(4, 200))


# ----------------------------------------------------------------- the split


def test_no_canonical_form_is_in_both_train_and_eval():
    for level in (*LEVELS, None):
        train = ProceduralCodeTasks(difficulty=level, split="train")
        held = ProceduralCodeTasks(difficulty=level, split="eval")
        train_keys = {train.get(i).meta["canonical"] for i in range(400)}
        eval_keys = {held.get(i).meta["canonical"] for i in range(200)}
        assert train_keys and eval_keys and not train_keys & eval_keys, level


def test_equivalent_tasks_share_a_canonical_form_and_so_a_split():
    twins = [
        ({"kind": "arith", "steps": [["+", 2], ["+", 1]]}, {"kind": "arith", "steps": [["+", 3]]}),
        (
            {"kind": "list_map", "steps": [["*", 2]], "keep": None},
            {"kind": "list_map", "steps": [["*", 2]], "keep": [">", -100]},
        ),
        (
            {"kind": "string", "ops": [["head", 3], ["head", 5]]},
            {"kind": "string", "ops": [["head", 3]]},
        ),
    ]
    for a, b in twins:
        assert render_code(a) != render_code(b)
        assert canonical_form(a) == canonical_form(b)
    assert canonical_form(twins[0][1]) != canonical_form({"kind": "arith", "steps": [["+", 4]]})
    # the generator's own tasks: equal canonical keys always agree on the split
    side: dict[str, str] = {}
    for split in ("train", "eval"):
        for task in sample(1, 400, split=split) + sample(2, 400, split=split):
            assert side.setdefault(task.meta["canonical"], split) == split
            assert canonical_key(task) == task.meta["canonical"]


def test_eval_split_has_at_least_300_distinct_prompts_at_the_default_mix():
    held = make_code_source(split="eval")
    tasks = [held.get(i) for i in range(2500)]
    assert len({t.prompt for t in tasks}) >= 300
    assert len({t.meta["canonical"] for t in tasks}) >= 300  # distinct problems, not rewordings
    assert {t.meta["split"] for t in tasks} == {"eval"}


# ----------------------------------------------------------------- the sandbox


@pytest.fixture(scope="module")
def graded_sample() -> list:
    return [t for level in LEVELS for t in sample(level, 12, seed=level)]


def test_the_oracle_scores_one_on_every_difficulty_through_the_sandbox(sandbox, graded_sample):
    grades = grade_many(
        [fenced(reference_solution(t)) for t in graded_sample], graded_sample, sandbox
    )
    bad = [
        (t.id, g.status, g.details[:2]) for t, g in zip(graded_sample, grades) if g.reward != 1.0
    ]
    assert not bad
    assert all(g.total == len(t.meta["tests"]) for t, g in zip(graded_sample, grades))


def test_wrong_variants_score_below_one_through_the_sandbox(sandbox, graded_sample):
    rng = random.Random(0)
    wrong = [wrong_solution(t, rng) for t in graded_sample]
    grades = grade_many([fenced(code) for code in wrong], graded_sample, sandbox)
    assert all(g.status == "failed" and g.reward < 1.0 for g in grades), [
        (t.answer, code, g.status)
        for t, code, g in zip(graded_sample, wrong, grades)
        if g.reward >= 1
    ][:3]
    assert sum(g.reward for g in grades) > 0  # systematic slips, not garbage: some tests pass


def test_every_task_has_labelled_wrong_variants_that_differ_from_the_answer():
    labels = set()
    for level in LEVELS:
        for task in sample(level, 150):
            options = wrong_solutions(task)
            assert options, task.answer
            assert all(code != task.answer and code.startswith("def f(") for _, code in options)
            labels |= {label for label, _ in options}
    assert labels == {
        "off_by_one",
        "wrong_operator",
        "wrong_comparison",
        "missing_step",
        "swapped_branches",
    }
    task = sample(3, 1)[0]
    draws = {wrong_solution(task, random.Random(s)) for s in range(20)}
    assert len(draws) > 1  # the rng chooses among the variants


def _passes(code: str, tests: list[str]) -> list[bool]:
    """Run generated code and its asserts in this process (our own generated text only)."""
    namespace: dict = {}
    exec(code, namespace)
    results = []
    for test in tests:
        try:
            exec(test, namespace)
        except Exception:
            results.append(False)
        else:
            results.append(True)
    return results


def test_rendered_code_agrees_with_the_spec_on_many_tasks():
    """Broader than the sandbox sample: the reference passes every hidden test and every
    listed wrong variant fails at least one, on 80 tasks per level."""
    for level in LEVELS:
        for task in sample(level, 80, seed=100 + level):
            assert all(_passes(task.answer, task.meta["tests"])), task.answer
            for label, code in wrong_solutions(task):
                assert not all(_passes(code, task.meta["tests"])), (label, code)


def test_expected_values_come_from_the_spec_not_from_running_code():
    task = sample(1, 1)[0]
    spec, inputs = task.meta["spec"], task.meta["inputs"]
    assert task.meta["tests"][0].endswith(f"== {evaluate(spec, inputs[0])!r}")


def test_oracle_and_noisy_teacher_reject_tasks_of_other_sources():
    other = builtin_tasks()[0]
    for call in (reference_solution, canonical_key, wrong_solutions):
        with pytest.raises(ValueError, match="not a procedural code task"):
            call(other)


# ----------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kinds": ()}, "kinds"),
        ({"kinds": ("loops",)}, "unknown kinds"),
        ({"operations": (3, 2)}, "operations"),
        ({"ops": ("**",)}, "ops"),
        ({"max_const": 1}, "max_const"),
        ({"comparisons": ("~",)}, "unknown comparisons"),
        ({"filter_rate": 1.5}, "filter_rate"),
        ({"filter_rate": 0.5}, "needs at least one"),
        ({"kinds": ("branch",), "comparisons": (">",)}, "branch"),
        ({"n_tests": 2}, "n_tests"),
        ({"input_range": 3}, "input_range"),
        ({"branches": True}, "branches"),
    ],
)
def test_config_validate_names_the_bad_field(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(ProceduralCodeConfig(), **change).validate()


def test_the_difficulty_table_is_valid_and_a_custom_config_is_used():
    for cfg in DIFFICULTY_CONFIGS.values():
        cfg.validate()
    custom = ProceduralCodeConfig(kinds=("string",), n_tests=4, show_example=False)
    task = ProceduralCodeTasks(config=custom).get(0)
    assert task.meta["category"] == "string" and len(task.meta["tests"]) == 4
    assert "For example" not in task.prompt
    with pytest.raises(ValueError, match="n_tests"):
        ProceduralCodeTasks(config=dataclasses.replace(custom, n_tests=0))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"difficulty": 6}, ValueError),
        ({"difficulty": [0, 1]}, ValueError),
        ({"difficulty": 2.5}, ValueError),
        ({"difficulty": "12"}, ValueError),
        ({"seed": "0"}, ValueError),
        ({"eval_fraction": "0.2"}, ValueError),
        ({"split": "dev"}, ValueError),
        ({"eval_fraction": 1.0}, ValueError),
        ({"config": {"n_tests": 3}}, TypeError),
    ],
)
def test_bad_source_arguments_are_clear_errors(kwargs, error):
    with pytest.raises(error):
        ProceduralCodeTasks(**kwargs)
    with pytest.raises(TypeError, match="int"):
        ProceduralCodeTasks().get("0")
    with pytest.raises(TypeError, match="infinite"):
        len(ProceduralCodeTasks())


# ----------------------------------------------------------------- make_code_source and envs


def test_make_code_source_knows_the_family_by_name_and_by_dict():
    assert DEFAULT_CODE_TASKS == "procedural"
    assert make_code_source().get(0).meta["source"] == "procedural"
    by_dict = make_code_source({"name": "procedural", "difficulty": 3, "seed": 2}, split="eval")
    task = by_dict.get(4)
    assert task.meta["difficulty"] == 3 and task.meta["seed"] == 2 and task.meta["split"] == "eval"
    assert make_code_source("procedural", difficulty=4).get(0).meta["difficulty"] == 4
    assert make_code_source("builtin").get(0).meta["source"] == "builtin"
    with pytest.raises(ValueError, match="family 'name'"):
        make_code_source({"name": "nope"})
    with pytest.raises(ValueError, match="bad options"):
        make_code_source({"name": "procedural", "colour": "red"})


def test_the_code_envs_default_to_the_procedural_family():
    env = flexmg.make("code-2agent")
    try:
        env.reset(seed=0)
        assert env.task.meta["source"] == "procedural"
    finally:
        env.close()
    env = flexmg.make("code-2agent", tasks={"name": "procedural", "difficulty": 2})
    try:
        env.reset(seed=1)
        assert env.task.meta["difficulty"] == 2
    finally:
        env.close()
    env = flexmg.make("code-3agent", tasks="procedural", split="eval")
    try:
        env.reset(seed=2)
        assert env.task.meta["split"] == "eval" and env.task.meta["difficulty"] in (1, 2)
    finally:
        env.close()


def _play_round(env, coder: str, reviewer: str) -> None:
    for message in (coder, reviewer):
        env.step(message)


def test_two_rounds_give_the_coder_failed_test_feedback_and_a_retry():
    env = flexmg.make("code-2agent", sandbox="local", horizon=2, tasks={"name": "procedural"})
    try:
        env.reset(seed=3)
        task = env.task
        wrong = fenced(wrong_solution(task, random.Random(0)))
        _play_round(env, wrong, wrong)
        obs = env.observe("coder")
        assert obs["round"] == 1 and "Hidden tests:" in obs["feedback"]
        assert "wrong result" in obs["feedback"]
        hidden = [t.removeprefix("assert ") for t in task.meta["tests"][1:]]  # [0] is in the prompt
        shown = obs["feedback"] + obs["context"]
        assert not any(t in shown or t.split(" == ")[0] in shown for t in hidden)
        right = fenced(task.answer)
        _play_round(env, right, right)
        metrics = env.episode_metrics
        assert metrics["success"] and metrics["rounds"] == 2
        assert metrics["score"] == 1.0
        coder_rewards = [r.reward for r in env.transcript if r.role == "coder"]
        assert sum(coder_rewards) == pytest.approx(1.0)  # round rewards add up to the score
        env.reset(seed=3)  # solved at once: the episode ends after one round
        _play_round(env, fenced(env.task.answer), fenced(env.task.answer))
        assert env.episode_metrics["rounds"] == 1 and env.episode_metrics["success"]
    finally:
        env.close()


def test_hostile_replies_never_crash_the_procedural_env():
    env = flexmg.make("code-1agent", sandbox="local", horizon=2)
    try:
        env.reset(seed=9)
        for reply in (
            "```python\ndef f(x):\n    return ö\n```",
            "\ud800" * 50 + "```python\n\x00```",
        ):
            env.step(reply)
        assert env.episode_metrics["score"] == 0.0 and env.episode_metrics["rounds"] == 2
    finally:
        env.close()


@pytest.mark.parametrize(
    "module", [procedural, procedural_spec, source], ids=lambda m: m.__name__.rsplit(".", 1)[1]
)
def test_the_docstring_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
