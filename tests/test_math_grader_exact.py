"""Plain numbers are decided in-process, exactly, and the same way the worker decides them."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexmg.envs.math import _worker, grade_detailed
from flexmg.envs.math.boxed import same_meaning_form
from flexmg.envs.math.exact import exact_value, fast_verdict
from flexmg.envs.math.grader import get_pool


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12", (Fraction(12), None, 0)),
        ("-007", (Fraction(-7), None, 0)),
        ("2.50", (Fraction(5, 2), 2, 3)),
        (".5", (Fraction(1, 2), 1, 1)),
        ("0.0300", (Fraction(3, 100), 4, 3)),
        ("3/4", (Fraction(3, 4), None, 0)),
        ("\\frac{6}{8}", (Fraction(3, 4), None, 0)),
        ("-\\dfrac{1}{2}", (Fraction(-1, 2), None, 0)),
        ("\\tfrac{-1}{2}", (Fraction(-1, 2), None, 0)),
        ("- \\frac{-1}{2}", (Fraction(1, 2), None, 0)),
    ],
)
def test_exact_value_reads_plain_numbers(text: str, value: tuple[Fraction, int, int]) -> None:
    assert exact_value(text) == value


@pytest.mark.parametrize(
    "text", ["x", "1/0", "\\frac{1}{0}", "50\\%", "15\\frac{39}{40}", "1e5", "2^3", "9" * 81, ""]
)
def test_anything_else_is_not_a_plain_number(text: str) -> None:
    assert exact_value(text) is None


def test_two_plain_numbers_are_always_decided_in_process() -> None:
    assert fast_verdict("0.333333", "\\frac{1}{3}")[0] == "correct"  # right to its 6 places
    assert fast_verdict("0.33", "\\frac{1}{3}")[0] == "wrong"  # fewer places than precision
    assert fast_verdict("0.5", "\\frac{1}{2}")[0] == "correct"
    assert fast_verdict("\\frac{1}{3}", "\\frac{2}{6}")[0] == "correct"
    assert fast_verdict("\\frac{1}{3}", "\\frac{1}{4}")[0] == "wrong"
    assert fast_verdict("0.30000000000000004", "0.3")[0] == "correct"  # rounds to the gold
    assert fast_verdict("2.0000000000000004", "2")[0] == "correct"  # a float repr
    assert fast_verdict("x", "2") is None


def _written(value: Fraction, style: int) -> str:
    if style == 0:
        return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    if style == 1:
        return f"{value.numerator}/{value.denominator}"
    if style == 2 and value.denominator == 1:
        return str(value.numerator)
    decimal = value.numerator / value.denominator
    return (
        f"{decimal:.6f}" if style == 3 else f"\\dfrac{{{value.numerator}}}{{{value.denominator}}}"
    )


numbers = st.fractions(min_value=-50, max_value=50, max_denominator=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(numbers, numbers, st.integers(0, 4), st.integers(0, 4))
def test_fast_verdict_agrees_with_the_worker(
    answer: Fraction, gold: Fraction, answer_style: int, gold_style: int
) -> None:
    content, expected = _written(answer, answer_style), _written(gold, gold_style)
    fast = fast_verdict(content, expected)
    assert fast is not None
    assert _worker.verify_boxed(content, expected)[1] == fast[0], (content, expected)


def test_plain_numbers_never_reach_the_worker() -> None:
    pool = get_pool()
    before = pool.calls
    assert grade_detailed("\\boxed{\\dfrac{6}{8}}", "0.75").reason == "correct"
    assert grade_detailed("\\boxed{3/4}", "\\frac{2}{3}").reason == "wrong"
    assert grade_detailed("\\boxed{1\\,000.}", "1000").reason == "correct"
    assert pool.calls == before


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("\\dfrac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}"),
        ("\\left( 1, \\sqrt{2} \\right)", "(1, \\sqrt{2})"),
        ("x + 1", "x+1"),
        ("\\displaystyle \\frac{\\pi}{4}", "\\frac{\\pi}{4}"),
    ],
)
def test_same_meaning_writing_is_correct_in_process(answer: str, gold: str) -> None:
    pool = get_pool()
    before = pool.calls
    assert grade_detailed("\\boxed{" + answer + "}", gold).reason == "correct"
    assert pool.calls == before
    assert _worker.verify_boxed(answer, gold)[1] == "correct"  # the worker agrees


@pytest.mark.parametrize(
    ("left", "right"), [("2 3", "23"), ("1, 000", "1,000"), ("\\pi r", "\\pir")]
)
def test_spaces_that_may_matter_are_kept(left: str, right: str) -> None:
    assert same_meaning_form(left) != same_meaning_form(right)
