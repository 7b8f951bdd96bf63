"""In-process verdicts on plain numbers, decided exactly with :class:`fractions.Fraction`.

Integers, decimals and fractions of integers (``\\frac{3}{4}``, ``3/4``,
``-\\dfrac{1}{2}``) are the most common answers; comparing them needs no
sympy, no mpmath and no worker process. Two plain numbers are always decided
here, by the decimal rule of :mod:`flexmg.envs.math.tolerance` (the same rule
the worker applies to numbers math-verify parses).

Example:
    >>> fast_verdict("\\\\dfrac{6}{8}", "0.75")[0], fast_verdict("3/4", "\\\\frac{2}{3}")[0]
    ('correct', 'wrong')
    >>> fast_verdict("0.333333", "\\\\frac{1}{3}")
    ('correct', 'the decimal answer is right to all of its 6 places')
    >>> fast_verdict("x", "1") is None
    True
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import NamedTuple

from .settings import DEFAULT, GradingSettings
from .tolerance import judge

_DIGITS = 80  # longer numbers go to the in-process evaluator or the worker
_NUMBER = re.compile(
    rf"""(?P<sign>[+-]?)\s*(?:
        (?P<int>\d{{1,{_DIGITS}}})
      | (?P<dec>\d{{0,{_DIGITS}}}\.\d{{1,{_DIGITS}}})
      | (?P<num>\d{{1,{_DIGITS}}})\s*/\s*(?P<den>\d{{1,{_DIGITS}}})
      | \\[dt]?frac\s*\{{\s*(?P<fsign>[+-]?)\s*(?P<fnum>\d{{1,{_DIGITS}}})\s*\}}
        \s*\{{\s*(?P<fden>\d{{1,{_DIGITS}}})\s*\}}
    )""",
    re.VERBOSE,
)


class ExactNumber(NamedTuple):
    """A plain number: its exact value, decimal places written (None: exact), significant digits."""

    value: Fraction
    places: int | None
    digits: int


def exact_value(text: str) -> ExactNumber | None:
    """The exact value of a plain number, else None.

    >>> exact_value("-\\\\frac{3}{4}"), exact_value("2.50"), exact_value("x")
    (ExactNumber(value=Fraction(-3, 4), places=None, digits=0), ExactNumber(value=Fraction(5, 2), places=2, digits=3), None)
    """
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        return None
    sign = -1 if match["sign"] == "-" else 1
    if match["int"] is not None:
        return ExactNumber(Fraction(int(match["int"])) * sign, None, 0)
    if match["dec"] is not None:
        decimal = match["dec"]
        places = len(decimal.split(".")[1])
        digits = len(decimal.replace(".", "").lstrip("0"))
        return ExactNumber(Fraction(decimal) * sign, places, digits)
    numerator, denominator = (
        (match["num"], match["den"]) if match["num"] else (match["fnum"], match["fden"])
    )
    if int(denominator) == 0:
        return None
    if match["fsign"] == "-":
        sign = -sign
    return ExactNumber(Fraction(int(numerator), int(denominator)) * sign, None, 0)


def fast_verdict(
    content: str, gold: str, settings: GradingSettings = DEFAULT
) -> tuple[str, str] | None:
    """``("correct" | "wrong", why)`` for two plain numbers, else None."""
    answer, expected = exact_value(content), exact_value(gold)
    if answer is None or expected is None:
        return None
    agree, why = judge(
        expected.value,
        answer.value,
        expected.places,
        answer.places,
        answer.digits,
        settings.precision,
        settings.float_tolerance,
    )
    return ("correct" if agree else "wrong"), why
