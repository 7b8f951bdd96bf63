"""In-process verdicts on plain numbers, decided exactly with :class:`fractions.Fraction`.

Integers, decimals and fractions of integers (``\\frac{3}{4}``, ``3/4``,
``-\\dfrac{1}{2}``) are the most common answers; comparing them needs no
sympy and no worker process. The verdict is the one math-verify plus the
strict numeric check (:mod:`flexmg.envs.math.strict`) would give, exactly:

* two exact numbers (no decimal point on either side) are equal only when
  they are the same rational (the strict check allows a relative 1e-20);
* equal values are always correct, whatever is written;
* a decimal that differs from the other side is left to the worker, where
  rounding and the written-places tolerance apply (``0.333333`` for ``1/3``).

Example:
    >>> fast_verdict("\\\\dfrac{6}{8}", "0.75"), fast_verdict("3/4", "\\\\frac{2}{3}")
    ('correct', 'wrong')
    >>> fast_verdict("0.333333", "\\\\frac{1}{3}") is None  # the worker decides
    True
"""

from __future__ import annotations

import re
from fractions import Fraction

_DIGITS = 80  # longer numbers go to the worker (its strict check handles them)
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


def exact_value(text: str) -> tuple[Fraction, bool] | None:
    """``(value, written_with_decimals)`` of a plain number, else None.

    >>> exact_value("-\\\\frac{3}{4}"), exact_value("2.50"), exact_value("x")
    ((Fraction(-3, 4), False), (Fraction(5, 2), True), None)
    """
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        return None
    sign = -1 if match["sign"] == "-" else 1
    if match["int"] is not None:
        return Fraction(int(match["int"])) * sign, False
    if match["dec"] is not None:
        return Fraction(match["dec"]) * sign, True
    numerator, denominator = (
        (match["num"], match["den"])
        if match["num"]
        else (
            match["fnum"],
            match["fden"],
        )
    )
    if int(denominator) == 0:
        return None
    if match["fsign"] == "-":
        sign = -sign
    return Fraction(int(numerator), int(denominator)) * sign, False


def fast_verdict(content: str, gold: str) -> str | None:
    """``"correct"``, ``"wrong"`` or None (not plain numbers, or a decimal near miss)."""
    answer, expected = exact_value(content), exact_value(gold)
    if answer is None or expected is None:
        return None
    if answer[0] == expected[0]:
        return "correct"
    if not answer[1] and not expected[1]:
        return "wrong"
    return None
