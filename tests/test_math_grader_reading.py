"""What an answer commits to: the reader, the decimal rule, and the honest forms it reads."""

from __future__ import annotations

from fractions import Fraction

import pytest

from flexmg.envs.math import GradingSettings, grade, grade_detailed
from flexmg.envs.math.boxed import extract_boxed, sanitize
from flexmg.envs.math.commitment import check
from flexmg.envs.math.normalize import normalize_answer
from flexmg.envs.math.reading import Reading, Refusal, plain_text, read
from flexmg.envs.math.scan import is_wrapped, split_top
from flexmg.envs.math.symbols import is_name, marks, undefined_form, variables
from flexmg.envs.math.tolerance import judge
from flexmg.envs.math.vocabulary import command_kind, word_kind

DEFAULT = GradingSettings()


def boxed(answer: str) -> str:
    return "Therefore the answer is $\\boxed{" + answer + "}$."


def reading(answer: str, gold: str, settings: GradingSettings = DEFAULT) -> Reading | Refusal:
    gold_reading = read(normalize_answer(gold), settings)
    assert isinstance(gold_reading, Reading)
    answer_reading = read(normalize_answer(sanitize(answer)), settings, gold_reading)
    if isinstance(answer_reading, Refusal):
        return answer_reading
    return check(answer_reading, gold_reading, settings) or answer_reading


# ------------------------------------------------------------------ the decimal rule
@pytest.mark.parametrize(
    ("gold", "answer", "gold_places", "answer_places", "digits", "agree"),
    [
        (Fraction(1, 3), Fraction("0.333333"), None, 6, 6, True),  # right to its 6 places
        (Fraction(1, 3), Fraction("0.33"), None, 2, 2, False),  # fewer places than precision
        (Fraction(1, 3), Fraction("0.3333339"), None, 7, 7, False),  # wrong in its 7th place
        (Fraction(3, 10), Fraction("0.30000000000000004"), 1, 17, 17, True),  # rounds to gold
        (Fraction(2), Fraction("2.0000000000000004"), None, 16, 17, True),  # a float repr
        (Fraction(5), Fraction("5.0001"), None, 4, 5, False),
        (Fraction("0.33"), Fraction(1, 3), 2, None, 0, False),  # exact answer: max(p, k) places
        (Fraction("0.1234571"), Fraction("0.1234567"), 7, 7, 7, False),
    ],
)
def test_decimal_rule(
    gold: Fraction, answer: Fraction, gold_places: int | None, answer_places: int | None,
    digits: int, agree: bool,
) -> None:  # fmt: skip
    verdict, why = judge(gold, answer, gold_places, answer_places, digits)
    assert verdict is agree and why


def test_float_tolerance_is_a_setting() -> None:
    assert grade(boxed("1.4142135625"), r"\sqrt{2}") == 0.0  # last digit wrong, 11 digits
    assert grade(boxed("1.41421356238"), r"\sqrt{2}") == 1.0  # last digit off, 12: a float
    assert grade(boxed("1.41421356238"), r"\sqrt{2}", settings={"float_tolerance": 0.0}) == 0.0
    with pytest.raises(ValueError, match="float_tolerance must be a relative error"):
        GradingSettings(float_tolerance=0.5).validate()


# --------------------------------------------------------------------------- reading
@pytest.mark.parametrize(
    ("answer", "gold", "values"),
    [
        (r"7 \text{ thousand}", "7000", ("7000",)),
        ("2.5 million", "2500000", ("2500000",)),
        ("7k", "7000", ("7000",)),
        (r"18 \text{ dollars}", "18", ("18",)),
        (r"\$18.90", "18.9", ("18.90",)),
        ("18 km/h", "18", ("18",)),
        (r"5\text{ cm}^2", "5", ("5",)),
        (r"90^\circ", "90", ("90",)),
        ("x = 3 + 4 = 7", "7", ("3 + 4", "7")),
        (r"f(x) = x^2", "x^2", ("x^2",)),
    ],
)
def test_what_an_answer_states(answer: str, gold: str, values: tuple[str, ...]) -> None:
    result = reading(answer, gold)
    assert isinstance(result, Reading), result
    assert result.items[0].values == values


def test_percent_is_read_one_way_per_setting() -> None:
    fraction = GradingSettings(percent="fraction")
    assert reading(r"700\%", "7").items[0].values == ("700",)  # type: ignore[union-attr]
    assert reading(r"700\%", "7", fraction).items[0].values == ("7",)  # type: ignore[union-attr]
    assert grade(boxed(r"700\%"), "700") == 1.0 and grade(boxed(r"700\%"), "7") == 0.0
    assert grade(boxed(r"700\%"), "7", settings=fraction) == 1.0
    assert grade(boxed(r"700\%"), "700", settings=fraction) == 0.0


@pytest.mark.parametrize(
    ("answer", "gold", "reason"),
    [
        ("x + 1 = 7", "7", "relation"),
        ("x = 8 = 7", "7", "relation"),  # a false side in a chain (decided when compared)
        ("y = 5", "x = 5", "relation"),
        (r"x \ge 7", "7", "relation"),
        (r"7 \text{ (or maybe 8)}", "7", "hedged"),
        (r"\approx 7", "7", "hedged"),
        (r"\pm 7", "7", "hedged"),
        (r"\cancel{8} 7", "7", "obscured"),
        (r"\color{white}{8} 7", "8", "obscured"),
        ("⁷", "7", "obscured"),
        (r"\def\x{7}\x", "7", "unknown_command"),
        (r"\{7\}", "7", "shape"),
        ("2", r"1, 2, \ldots, n", "shape"),
        ("7 8", "15", "shape"),
        ("E'", "E", "marks"),
        ("4343_7", "4343_6", "marks"),
        (r"\hat{x}", "x", "marks"),
        ("7x/x", "7", "free_variable"),
        ("0^0", "1", "indeterminate"),
        ("7 cm", "7", "extra_text"),  # with units="keep" below
    ],
)
def test_refusals(answer: str, gold: str, reason: str) -> None:
    settings = GradingSettings(units="keep") if reason == "extra_text" else DEFAULT
    result = grade_detailed(boxed(answer), gold, settings=settings)
    assert (result.score, result.reason, result.format_error) == (0.0, reason, False)
    assert result.detail


def test_gold_text_answers_compare_as_text() -> None:
    assert plain_text(r"\text{(C)}") == "C" and plain_text(r"\textbf{Even.}") == "even"
    assert plain_text("p - q") is None and plain_text("2x") is None
    assert grade(boxed("C"), r"\text{(C)}") == 1.0
    assert grade(boxed(r"\text{(C) or (D)}"), r"\text{(C)}") == 0.0
    assert grade(boxed(r"\text{Even}"), r"\text{even}") == 1.0


def test_a_gold_list_may_be_answered_one_box_per_value() -> None:
    assert grade(r"roots $\boxed{3}$ and $\boxed{5}$", "3, 5") == 1.0
    assert grade(r"roots $\boxed{3}$ and $\boxed{6}$", "3, 5") == 0.0
    result = grade_detailed(r"$\boxed{3}$ or $\boxed{5}$", "3")  # a single gold: still a hedge
    assert (result.reason, result.format_error) == ("multiple_boxed", True)
    result = grade_detailed(r"$\boxed{3}$, $\boxed{5}$, $\boxed{7}$", "3, 5")
    assert result.reason == "multiple_boxed"


def test_gold_written_with_boxes_or_prose() -> None:
    assert grade(boxed("1, 2"), r"\boxed{1} papers and \boxed{2} bins") == 1.0
    assert grade(boxed("1, 2"), r"\boxed{1} no no no no no \boxed{2}") == 0.0  # the last box
    assert grade(boxed("004"), r"so \boxed{004} and again \boxed{004}") == 1.0


# ---------------------------------------------------------------- honest forms
@pytest.mark.parametrize(
    ("completion", "gold"),
    [
        (r"so \boxed 4.", "4"),
        (r"$\boxed 42$", "42"),
        (r"\boxed{\boxed 5}", "5"),
        (boxed("√2"), r"\sqrt{2}"),
        (boxed("2π"), r"2\pi"),
        (boxed("½"), r"\frac12"),
        (boxed("x²"), "x^2"),
        (boxed("1.5e6"), "1500000"),
        (boxed("1e-05"), "0.00001"),
        (boxed(r"6.02 \times 10^{23}"), "602000000000000000000000"),
        (boxed(r"10,\!080"), "10080"),
        (boxed("0.30000000000000004"), "0.3"),
        (boxed("0.3333333333333333"), "0.33"),
    ],
)
def test_honest_forms(completion: str, gold: str) -> None:
    result = grade_detailed(completion, gold)
    assert (result.score, result.reason) == (1.0, "correct"), result
    assert result.detail


def test_sanitize_keeps_superscripts_in_place_and_drops_invisible_characters() -> None:
    assert sanitize("x² + a₁") == "x^{2} + a_{1}"
    assert sanitize("7\u200b8\u202e") == "78"
    assert extract_boxed(r"\boxed -3, \boxed{4}") == ["-3", "4"]


# --------------------------------------------------------------------- pieces
def test_symbols() -> None:
    assert marks("f'(x) + 4343_{6} + \\log_2 8") == {"f'", "4343_6"}
    assert marks(r"0.\overline{3}") == frozenset()  # a repeating decimal, not an accent
    assert variables(r"2x^2 + \theta y_1 - e") == {"x", "theta", "y"}
    assert is_name("a_{10}") and is_name("f(2)") and is_name("|AB|") and is_name(r"\angle ABC")
    assert not is_name("x + 1") and not is_name("2x") and not is_name("8")
    assert undefined_form(r"\frac{3}{0}") and undefined_form("10^0") is None


def test_scan_and_vocabulary() -> None:
    assert split_top("(1, 2), [3, 4)", ",") == ["(1, 2)", " [3, 4)"]
    assert is_wrapped(r"\{1, 2\}", r"\{", r"\}") and not is_wrapped("(1)(2)", "(", ")")
    assert command_kind("frac") == "math" and command_kind("approx") == "hedge"
    assert command_kind("phantom") == "hidden" and command_kind("newcommand") == "macro"
    assert word_kind("thousands") == "scale" and word_kind("Perhaps") == "hedge"
    assert word_kind("apples") == "unit" and word_kind("or") == "join"


def test_settings_round_trip_with_the_new_fields() -> None:
    settings = GradingSettings(percent="fraction", float_tolerance=1e-6)
    assert GradingSettings.from_mapping(settings.to_dict()) == settings
    assert len(settings.key()) == 6
    with pytest.raises(ValueError, match="percent must be one of"):
        GradingSettings(percent="both").validate()
