"""Generators as configs, splits on canonical forms, and the default task's held-out set."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap

import pytest

import flexmg
from flexmg.env import prompt_id
from flexmg.envs.math import distinct_prompts, make_math_source
from flexmg.envs.math.generators import ArithmeticGenerator
from flexmg.envs.math.generators.expression import canonical_expression, evaluate
from flexmg.tasks import split_of, task_source_factory, task_source_names

# the math generators of the one task-source registry, by name
GENERATORS = {n: task_source_factory(n, "math") for n in task_source_names("math")}


def test_every_generator_has_a_config_table_for_every_difficulty() -> None:
    for name, cls in GENERATORS.items():
        assert sorted(cls.difficulties) == [1, 2, 3, 4, 5], name
        for difficulty, config in cls.difficulties.items():
            assert isinstance(config, cls.config_class)
            config.validate()
            assert cls(difficulty=difficulty).config == config
        assert _documented_fields(cls.config_class) == {
            f.name for f in dataclasses.fields(cls.config_class)
        }


def _documented_fields(config_class: type) -> set[str]:
    """Fields of a dataclass followed by a docstring in its source."""
    body = ast.parse(textwrap.dedent(inspect.getsource(config_class))).body[0].body
    return {
        node.target.id
        for node, after in zip(body, body[1:])
        if isinstance(node, ast.AnnAssign)
        and isinstance(after, ast.Expr)
        and isinstance(after.value, ast.Constant)
        and isinstance(after.value.value, str)
    }


def test_arithmetic_config_from_a_task_dict() -> None:
    spec = {"name": "arithmetic", "max_operand": 50, "ops": "+-"}
    src = make_math_source(spec, split="train")
    prompts = {src.get(i).prompt for i in range(400)}
    operands = [int(x) for p in prompts for x in re.findall(r"\d+", p)]
    assert max(operands) == 50 and min(operands) == 0
    assert {re.search(r"[-+*/]", p).group() for p in prompts} == {"+", "-"}
    env = flexmg.make("math-2agent", tasks=spec)
    env.reset(seed=3)
    assert env.task.meta["config"]["max_operand"] == 50
    assert env.task.id.startswith("arithmetic/d1-c")  # a custom config has its own ids


def test_config_lists_from_json_are_tuples() -> None:
    src = make_math_source({"name": "word", "templates": ["buys", "shares"], "max_number": 30})
    assert src.config.templates == ("buys", "shares")
    assert {src.get(i).meta["canonical"].split(":")[1] for i in range(60)} == {"buys", "shares"}


def test_only_multiplication_when_asked() -> None:
    src = GENERATORS["arithmetic"](ops="*", max_operand=12, max_factor=12)
    for i in range(100):
        a, b = map(int, re.fullmatch(r"What is (\d+) \* (\d+)\?", src.get(i).prompt).groups())
        assert a <= 12 and b <= 12


@pytest.mark.parametrize(
    ("name", "fields", "message"),
    [
        ("arithmetic", {"ops": "+x"}, "ops must be a non-empty string of operators"),
        ("arithmetic", {"ops": ""}, "ops must be a non-empty string"),
        ("arithmetic", {"max_operand": -1}, "max_operand must be an int from 1"),
        ("arithmetic", {"max_operand": True}, "max_operand must be an int"),
        ("arithmetic", {"max_operand": "50"}, "max_operand must be an int"),
        ("arithmetic", {"negatives": "yes"}, "negatives must be a bool"),
        ("arithmetic", {"max_opperand": 5}, r"unknown option\(s\) \['max_opperand'\]"),
        ("chain", {"terms": 1}, "terms must be an int from 2"),
        ("chain", {"ops": "/"}, "ops must be"),
        ("fractions", {"same_denominator": True, "terms": 3}, "same_denominator needs terms=2"),
        ("linear", {"form": "cubic"}, "form must be one of"),
        ("linear", {"fractional": True}, "fractional needs form='both_sides'"),
        ("word", {"templates": ("nope",)}, "templates must be a non-empty list"),
        ("word", {"max_number": 1}, "max_number must be an int from 2"),
    ],
)
def test_bad_config_fields_raise_value_error(name: str, fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GENERATORS[name](**fields)
    with pytest.raises(ValueError, match=message):
        make_math_source({"name": name, **fields})


def test_canonical_forms_identify_commuted_and_reordered_problems() -> None:
    same = [
        ("3 + 4", "4 + 3"),
        ("6 * 7", "7 * 6"),
        ("2 * 3 - 1", "(-1) + 3 * 2"),
        ("1 + 2 + 3", "3 + (2 + 1)"),
        ("(3/4) * (1/2)", "(1/2) * (3/4)"),
        ("8 / 2 * 3", "3 * 8 / 2"),
    ]
    for a, b in same:
        assert canonical_expression(a) == canonical_expression(b), (a, b)
        assert evaluate(a) == evaluate(b)
    for a, b in [("7 - 5", "5 - 7"), ("8 / 2", "2 / 8"), ("2 * 3 + 1", "2 * (3 + 1)")]:
        assert canonical_expression(a) != canonical_expression(b), (a, b)
    with pytest.raises(ValueError):
        canonical_expression("3 + + (")


def test_commuted_twins_never_straddle_the_splits() -> None:
    train = GENERATORS["arithmetic"](split="train")
    evals = GENERATORS["arithmetic"](split="eval")
    for split_source in (train, evals):
        for i in range(300):
            task = split_source.get(i)
            a, op, b = re.fullmatch(r"What is (\d+) ([-+]) (\d+)\?", task.prompt).groups()
            if op == "+":
                twin = f"{b} + {a}"
                assert split_of(canonical_expression(twin)) == split_source.split


def test_enumeration_covers_every_draw() -> None:
    for config in (
        {},
        {
            "ops": "+-*/",
            "max_operand": 6,
            "max_factor": 4,
            "max_divisor": 5,
            "max_quotient": 5,
            "negatives": True,
        },
    ):
        src = ArithmeticGenerator(split="all", **config)
        space = {p.prompt for p in src.problems()}
        assert {src.get(i).prompt for i in range(500)} <= space


def test_default_task_holds_out_at_least_300_distinct_prompts() -> None:
    held_out = distinct_prompts()  # math-2agent's default task, eval split
    assert len(held_out) >= 300
    train = set(distinct_prompts(split="train"))
    assert not train & set(held_out)
    forms = {
        split: {
            p.canonical
            for p in ArithmeticGenerator(split=split).problems()
            if split_of(p.canonical) == split
        }
        for split in ("train", "eval", "test")
    }
    assert all(forms.values())
    assert not forms["train"] & forms["eval"] and not forms["train"] & forms["test"]
    assert not forms["eval"] & forms["test"]
    # the env's eval episodes draw from exactly that set, and reach most of it
    env = flexmg.make("math-2agent", split="eval")
    seen, prompt_ids = set(), set()
    for seed in range(1000):
        env.reset(seed=seed)
        seen.add(env.task.prompt)
        if seed < 100:  # episodes carry a prompt id, so evaluations can count prompts
            env.step("")
            env.step("")
            prompt_ids.add(env.episode_metrics["prompt_id"])
    assert seen <= set(held_out) and len(seen) >= 300
    assert len(prompt_ids) == len({prompt_id(p) for p in held_out} & prompt_ids) > 80


def test_non_enumerable_generator_says_so() -> None:
    with pytest.raises(TypeError, match="cannot enumerate"):
        distinct_prompts("word")
    assert distinct_prompts(
        [flexmg.Task(id=str(i), prompt=f"p{i % 3}", answer="1") for i in range(40)], split="all"
    ) == ["p0", "p1", "p2"]
