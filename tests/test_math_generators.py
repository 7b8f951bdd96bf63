"""Procedural math generators: determinism, split hygiene, exact answers, difficulty."""

from __future__ import annotations

import ast
import operator
import re
from fractions import Fraction

import pytest

from flexmg.envs.math import grade
from flexmg.envs.math.generators import Generator, format_number
from flexmg.tasks import TaskSource, split_of, task_source_factory, task_source_names

# the math generators of the one task-source registry, by name
GENERATORS = {n: task_source_factory(n, "math") for n in task_source_names("math")}

NAMES = sorted(GENERATORS)
DIFFICULTIES = range(1, 6)


def test_required_generators_exist() -> None:
    assert {"arithmetic", "chain", "fractions", "linear", "word"} <= set(GENERATORS)
    for name, cls in GENERATORS.items():
        assert issubclass(cls, Generator) and cls.name == name
        assert isinstance(cls(), TaskSource)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_deterministic_by_split_and_index(name: str, difficulty: int) -> None:
    a, b = GENERATORS[name](difficulty=difficulty), GENERATORS[name](difficulty=difficulty)
    for i in (0, 1, 7, 12345, -3):
        ta, tb = a.get(i), b.get(i)
        assert (ta.id, ta.prompt, ta.answer) == (tb.id, tb.prompt, tb.answer)
        assert ta.meta == tb.meta
    other_seed = GENERATORS[name](difficulty=difficulty, seed=1)
    assert [a.get(i).prompt for i in range(20)] != [other_seed.get(i).prompt for i in range(20)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_train_eval_and_test_never_overlap(name: str, difficulty: int) -> None:
    tasks = {
        split: [GENERATORS[name](difficulty=difficulty, split=split).get(i) for i in range(n)]
        for split, n in (("train", 400), ("eval", 100), ("test", 100))
    }
    forms = {split: {t.meta["canonical"] for t in drawn} for split, drawn in tasks.items()}
    prompts = {split: {t.prompt for t in drawn} for split, drawn in tasks.items()}
    for a, b in (("train", "eval"), ("train", "test"), ("eval", "test")):
        assert not prompts[a] & prompts[b]
        assert not forms[a] & forms[b]  # no canonical form is on two sides
    for split, split_forms in forms.items():
        assert {split_of(c) for c in split_forms} == {split}


def _eval_arith(text: str) -> Fraction:
    """Exact value of + - * / and parentheses on integers (independent of the generators)."""
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return walk(node.left) / walk(node.right)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](walk(node.left), walk(node.right))
        raise AssertionError(f"unexpected syntax in {text!r}")

    return walk(ast.parse(text, mode="eval").body)


def _check_expression_task(prompt: str, answer: str) -> None:
    expression = re.fullmatch(r"What is (.+)\?(?: Give a reduced fraction\.)?", prompt)
    assert expression, prompt
    assert answer == format_number(_eval_arith(expression.group(1))), prompt


def _check_linear_task(prompt: str, answer: str) -> None:
    equation = re.fullmatch(r"Solve (?:for x: )?(.+)\.", prompt)
    assert equation, prompt
    lhs, rhs = equation.group(1).split("=")
    x = _eval_arith(answer_to_python(answer))

    def value(side: str) -> Fraction:
        side = re.sub(r"(\d)x", r"\1*x", side).replace("x", f"({x})")
        return _eval_arith(side.strip())

    assert value(lhs) == value(rhs), (prompt, answer)


def answer_to_python(answer: str) -> str:
    m = re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", answer)
    return f"{m.group(1)}{m.group(2)}/{m.group(3)}" if m else answer


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_answers_are_exact(difficulty: int) -> None:
    for name, check in (
        ("arithmetic", _check_expression_task),
        ("chain", _check_expression_task),
        ("fractions", _check_expression_task),
        ("linear", _check_linear_task),
    ):
        src = GENERATORS[name](difficulty=difficulty, split="all")
        for i in range(150):
            task = src.get(i)
            check(task.prompt, task.answer)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_word_problem_answers_follow_their_worked_solution(difficulty: int) -> None:
    src = GENERATORS["word"](difficulty=difficulty, split="all")
    for i in range(150):
        task = src.get(i)
        assert re.fullmatch(r"\d+", task.answer), task
        steps = [step.split("=") for step in task.meta["solution"].split(";")]
        for left, result in steps:  # every step of the worked solution is right
            assert _eval_arith(left.strip()) == int(result), task
        assert int(steps[-1][1]) == int(task.answer), task


def test_fraction_answers_are_reduced() -> None:
    for d in DIFFICULTIES:
        src = GENERATORS["fractions"](difficulty=d)
        for i in range(100):
            m = re.fullmatch(r"-?\\frac\{(\d+)\}\{(\d+)\}|-?\d+", src.get(i).answer)
            assert m, src.get(i).answer
            if m.group(1):
                num, den = int(m.group(1)), int(m.group(2))
                assert Fraction(num, den).denominator == den and den > 1


def test_arithmetic_difficulty_one_is_two_operands_up_to_40() -> None:
    src = GENERATORS["arithmetic"](difficulty=1)
    seen = set()
    for i in range(500):
        task = src.get(i)
        m = re.fullmatch(r"What is (\d+) ([+-]) (\d+)\?", task.prompt)
        assert m, task.prompt
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        assert max(a, b) <= 40
        assert int(task.answer) == (a + b if op == "+" else a - b) >= 0
        seen.add(task.prompt)
    assert len(seen) > 400  # 500 draws from about two thousand training prompts


@pytest.mark.parametrize("name", NAMES)
def test_low_difficulty_prompts_are_short(name: str) -> None:
    src = GENERATORS[name](difficulty=1)
    assert max(len(src.get(i).prompt) for i in range(200)) <= 80


@pytest.mark.parametrize("name", NAMES)
def test_generated_answers_grade_correct(name: str) -> None:
    for d in (1, 3, 5):
        task = GENERATORS[name](difficulty=d).get(0)
        assert grade(f"\\boxed{{{task.answer}}}", task.answer) == 1.0
        assert task.meta["difficulty"] == d and task.meta["source"] == f"generator:{name}"


def test_bad_configuration_is_reported() -> None:
    with pytest.raises(ValueError, match="difficulty must be an int from 1 to 5"):
        GENERATORS["linear"](difficulty=9)
    with pytest.raises(ValueError, match="split must be"):
        GENERATORS["linear"](split="dev")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="infinite"):
        len(GENERATORS["chain"]())
    with pytest.raises(TypeError, match="index must be an int"):
        GENERATORS["chain"]().get("0")  # type: ignore[arg-type]
