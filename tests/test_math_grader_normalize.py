"""Answer normalisation before grading: the misreadings public grader suites exposed (issue 15)."""

from __future__ import annotations

import pytest

from flexmg.envs.math import grade, grade_detailed
from flexmg.envs.math.normalize import normalize_answer, strip_thousands_separators


def boxed(answer: str) -> str:
    return "So the answer is $\\boxed{" + answer + "}$"


# ------------------------------------------------------------ thousands separators
@pytest.mark.parametrize(
    "written", ["1\\,000", "1 000", "1{,}000", "1\\ 000", "1~000", "1\u2009000", "1\u202f000"]
)
def test_space_and_thin_space_thousands_separators(written: str) -> None:
    assert grade(boxed(written), "1000") == 1.0
    result = grade_detailed(boxed(written), "0")  # it used to read as 1 * 000 = 0
    assert (result.score, result.reason) == (0.0, "wrong")


def test_thousands_separators_in_longer_numbers_and_gold() -> None:
    assert grade(boxed("1\\,234\\,567"), "1234567") == 1.0
    assert grade(boxed("12 345.5"), "12345.5") == 1.0
    assert grade(boxed("14916"), "14{,}916") == 1.0  # MATH golds use {,}
    assert grade(boxed("1\\,000"), "1000.5") == 0.0


def test_thousands_rule_leaves_other_spacing_alone() -> None:
    assert strip_thousands_separators("2\\,3") == "2\\,3"  # not a three-digit group
    assert strip_thousands_separators("0.123 456") == "0.123 456"  # after a decimal point
    assert strip_thousands_separators("1 000/3") == "1 000/3"  # a fraction follows: unclear
    assert strip_thousands_separators("(1, 000)") == "(1, 000)"  # a tuple, not a separator


# ----------------------------------------------------------------- trailing period
@pytest.mark.parametrize(
    ("written", "gold"),
    [
        ("42.", "42"),
        ("2/3.", "\\frac{2}{3}"),
        ("\\sqrt{2}.", "\\sqrt{2}"),
        ("5\\text{ cm}.", "5"),
        ("\\frac{1}{2}.", "0.5"),
    ],
)
def test_trailing_period_inside_the_box(written: str, gold: str) -> None:
    result = grade_detailed(boxed(written), gold)
    assert (result.score, result.reason) == (1.0, "correct")


def test_a_lone_period_or_an_ellipsis_is_not_stripped_away() -> None:
    assert normalize_answer(".") == "."
    assert normalize_answer("1, 2, 3, ...") == "1, 2, 3, ..."


# ------------------------------------------------------------------- \mathrm{e}
def test_upright_e_is_eulers_number() -> None:
    assert grade(boxed("1-\\frac{1}{e}"), "1-\\frac{1}{\\mathrm{e}}") == 1.0
    assert grade(boxed("1-\\frac{1}{\\mathrm{e}}"), "1-\\frac{1}{e}") == 1.0
    assert grade(boxed("1+\\frac{1}{\\mathrm{e}}"), "1-\\frac{1}{\\mathrm{e}}") == 0.0
    assert grade(boxed("\\mathrm{e}^{2}"), "e^2") == 1.0


# ----------------------------------------------------------------- mixed numbers
@pytest.mark.parametrize(
    ("written", "gold", "score"),
    [
        ("4 4/9", "\\frac{40}{9}", 1.0),
        ("4 4/9", "4\\frac{4}{9}", 1.0),
        ("-2 1/2", "-2.5", 1.0),
        ("4 4/9", "\\frac{16}{9}", 0.0),  # not 4 * 4/9
        ("2 3/2", "3.5", 0.0),  # not a mixed number: left to math-verify (reads 2 * 3/2)
    ],
)
def test_plain_text_mixed_numbers(written: str, gold: str, score: float) -> None:
    assert grade(boxed(written), gold) == score


# --------------------------------------------------------------------- units
@pytest.mark.parametrize(
    "written",
    [
        "18 dollars",
        "18 \\text{ dollars}",
        "\\$18",
        "18\\text{dollars}",
        "18 square feet",
        "18 km/h",
        "18 m^2",
        "18 cm",
    ],
)
def test_units_in_words_are_stripped(written: str) -> None:
    assert grade(boxed(written), "18") == 1.0


def test_percent_in_words() -> None:
    assert grade(boxed("28 percent"), "28\\%") == 1.0
    assert grade(boxed("28 pct"), "28") == 1.0
    assert grade(boxed("28 pct"), "0.28") == 0.0  # percent='sign' (the default): 28% is 28


@pytest.mark.parametrize(
    ("written", "gold"),
    [
        ("18 x", "18"),  # a variable, not a unit
        ("3 xy", "3"),
        ("2 pi", "2"),  # mathematics words are never units
        ("2 \\pi", "2"),
        ("18 dollars", "19"),
        ("5 e", "5"),
    ],
)
def test_words_that_are_mathematics_are_kept(written: str, gold: str) -> None:
    assert grade(boxed(written), gold) == 0.0


def test_units_policy_keep_grades_the_box_as_written() -> None:
    result = grade_detailed(boxed("18 dollars"), "18", settings={"units": "keep"})
    assert (result.score, result.reason) == (0.0, "extra_text")
    assert normalize_answer("18 dollars", units="keep") == "18 dollars"
    assert grade(boxed("18"), "18", settings={"units": "keep"}) == 1.0


# --------------------------------------------------------------------- matrices
def test_a_wrong_matrix_is_wrong_not_unparseable() -> None:
    gold = "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}"
    result = grade_detailed(boxed("\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}"), gold)
    assert (result.score, result.reason, result.format_error) == (0.0, "wrong", False)
    assert grade(boxed("\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"), gold) == 1.0


# ------------------------------------------------------------------ hostile input
@pytest.mark.parametrize(
    "text",
    [
        "1 " * 400 + "dollars",
        "a " * 450 + "1",
        "1\\," * 300 + "000",
        "9 " * 500 + "9/9",
        "{,}" * 300,
        "x" * 999 + ".",
    ],
)
def test_normalisation_of_hostile_answers_is_total_and_stable(text: str) -> None:
    # Every rule is a bounded regular expression (no nested repetition), so this
    # is linear; the check here is that the result is a fixed point.
    once = normalize_answer(text)
    assert isinstance(once, str) and once
    assert normalize_answer(once) == once
