"""When two numbers count as the same answer: the decimal rule, in one place.

Every comparison of two numeric values (in-process in :mod:`~flexmg.envs.math.exact`
and :mod:`~flexmg.envs.math.evaluate`, and in the grading worker through
:mod:`~flexmg.envs.math.strict`) ends here. With ``g`` the gold's value, ``a``
the answer's, ``k``/``m`` the decimal places each writes (``None`` for an exact
number: integers, fractions, radicals), ``p`` the settings' ``precision`` and
``r`` their ``float_tolerance``:

1. equal values are always the same answer (``0.5`` and ``\\frac12``);
2. two exact numbers are otherwise different (``\\frac{1}{2^{99}}`` is not
   ``\\frac{1}{2^{98}}``);
3. a decimal answer against a decimal gold: ``a`` must round to the gold at the
   gold's places, ``|a - g| <= 10^-k / 2`` (a gold of ``0.33`` is known to two
   places: ``0.3333333333333333`` is right, ``0.3`` is not);
4. a decimal answer against an exact gold: it must be right to every digit it
   writes and write at least ``p`` places (``0.333333`` for ``\\frac13``, not
   ``0.33`` nor ``0.3333339``), or be a machine float's ``repr`` (12 or more
   significant digits) within ``r`` relative error (``1.4142135623730951``
   for ``\\sqrt2``, ``2.0000000000000004`` for 2);
5. an exact answer against a decimal gold: equal when rounded to
   ``max(p, k)`` places (``\\pi`` for ``3.1416`` at ``precision=4``; ``\\frac13``
   is not ``0.3``).

Pure Python (no sympy): the grading worker loads this file by path.

Example:
    >>> from fractions import Fraction as F
    >>> values_agree(F(1, 3), F(333333, 10**6), gold_places=None, answer_places=6)
    True
    >>> values_agree(F(3, 10), F(1, 3), gold_places=1, answer_places=None)
    False
"""

from __future__ import annotations

import re
from fractions import Fraction

FLOAT_REPR_DIGITS = 12  # a decimal this long is a machine float's repr
_DECIMAL = re.compile(r"(\d*)\.(\d+)")
_HALF = Fraction(1, 2)


def decimal_places(text: str) -> int | None:
    """The most decimal places a decimal literal of ``text`` writes (None: no decimal).

    >>> decimal_places("0.25 + 1.125"), decimal_places("\\\\frac{1}{3}")
    (3, None)
    """
    places = [len(m.group(2)) for m in _DECIMAL.finditer(text)]
    return max(places) if places else None


def significant_digits(text: str) -> int:
    """Significant digits of the longest decimal literal in ``text`` (0 if none).

    >>> significant_digits("0.30000000000000004"), significant_digits("12")
    (17, 0)
    """
    best = 0
    for match in _DECIMAL.finditer(text):
        digits = (match.group(1) + match.group(2)).lstrip("0")
        best = max(best, len(digits))
    return best


def _half_unit(places: int) -> Fraction:
    return _HALF / 10**places if places >= 0 else _HALF * 10 ** (-places)


def judge(
    gold: Fraction,
    answer: Fraction,
    gold_places: int | None,
    answer_places: int | None,
    answer_digits: int = 0,
    precision: int = 6,
    float_tolerance: float = 1e-9,
) -> tuple[bool, str]:
    """The decimal rule of the module docstring on two exact values: (agree, why).

    ``gold_places``/``answer_places`` are the decimal places each side writes
    (None: written exactly); ``answer_digits`` is the answer's significant
    digits (:func:`significant_digits`).

    >>> judge(Fraction(3, 10), Fraction("0.30000000000000004"), 1, 17, 17)
    (True, 'the answer rounds to the gold at its 1 decimal places')
    >>> judge(Fraction(5), Fraction("5.0001"), None, 4, 5, precision=4)[0]
    False
    """
    diff = abs(gold - answer)
    if diff == 0:
        return True, "the same value"
    if gold_places is None and answer_places is None:
        return False, "different exact values"
    if answer_places is not None and gold_places is not None:
        if diff <= _half_unit(gold_places):
            return True, f"the answer rounds to the gold at its {gold_places} decimal places"
        return False, f"the answer does not round to the gold at its {gold_places} decimal places"
    if answer_places is not None:  # decimal answer, exact gold
        if answer_places >= precision and diff <= _half_unit(answer_places):
            return True, f"the decimal answer is right to all of its {answer_places} places"
        if answer_digits >= FLOAT_REPR_DIGITS and diff <= Fraction(float_tolerance) * abs(gold):
            return True, (
                f"a {answer_digits}-digit float repr within relative {float_tolerance:g} "
                "of the exact gold"
            )
        if answer_places < precision:
            return False, (
                f"the decimal answer writes {answer_places} places, fewer than the "
                f"{precision} the exact gold needs"
            )
        return False, f"the decimal answer is wrong within its {answer_places} places"
    assert gold_places is not None  # exact answer, decimal gold
    places = max(precision, gold_places)
    if diff <= _half_unit(places):
        return True, f"the exact answer rounds to the gold at {places} places"
    return False, f"the exact answer does not round to the gold at {places} places"


def values_agree(
    gold: Fraction,
    answer: Fraction,
    gold_places: int | None,
    answer_places: int | None,
    answer_digits: int = 0,
    precision: int = 6,
    float_tolerance: float = 1e-9,
) -> bool:
    """:func:`judge` without the explanation.

    >>> values_agree(Fraction(1, 3), Fraction("0.3333333333333333"), None, 16, 16)
    True
    """
    return judge(
        gold, answer, gold_places, answer_places, answer_digits, precision, float_tolerance
    )[0]
