"""What a wrong math answer is: off by one, the wrong sign, none at all, an earlier role's, other.

A learning report that only counts right answers cannot tell a policy that
learned arithmetic from one that learned to undo one systematic slip, or a
verifier that checks from one that copies. :func:`answer_kind` names the kind
of each answer from the role's committed answer (``infos[role]["answer"]``),
the env's verdict on its value (``answer_correct``), the gold answer and the
answers of the roles before it in the round.

Example:
    >>> answer_kind("13", False, "12"), answer_kind("-12", False, "12")
    ('off_by_one', 'sign')
    >>> answer_kind("13", False, "12", earlier=["13"]), answer_kind(None, False, "12")
    ('repeats_earlier', 'no_answer')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction

RIGHT = "right"
ANSWER_KINDS: tuple[str, ...] = (
    RIGHT,
    "off_by_one",
    "sign",
    "no_answer",
    "repeats_earlier",
    "other",
)
"""The kinds :func:`answer_kind` returns: ``right`` and the five kinds of wrong answers."""

_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)(?:\s*/\s*(\d+))?\s*$")
_FRAC = re.compile(r"^\s*(-?)\\[dt]?frac\{(-?\d+)\}\{(\d+)\}\s*$")


def number_of(text: str | None) -> Fraction | None:
    """The exact value of a plain number, ``a/b`` or ``\\frac{a}{b}`` (None for anything else).

    >>> number_of("1,234"), number_of("-\\\\frac{3}{4}"), number_of("x + 1")
    (Fraction(1234, 1), Fraction(-3, 4), None)
    """
    if text is None:
        return None
    try:
        return _exact(text)
    except ValueError:  # a number past Python's int-conversion limit (hostile text)
        return None


def _exact(text: str) -> Fraction | None:
    plain = text.replace(",", "").replace("$", "").strip()
    found = _NUMBER.match(plain)
    if found:
        value, denominator = Fraction(found.group(1)), found.group(2)
        if denominator is None:
            return value
        return value / int(denominator) if int(denominator) else None
    found = _FRAC.match(plain)
    if found and int(found.group(3)):
        value = Fraction(int(found.group(2)), int(found.group(3)))
        return -value if found.group(1) else value
    return None


def same_answer(a: str | None, b: str | None) -> bool:
    """Two committed answers say the same: equal values, or equal text when not numbers.

    >>> same_answer("12", "12.0"), same_answer("x+1", "x + 1"), same_answer(None, None)
    (True, True, False)
    """
    if a is None or b is None:
        return False
    va, vb = number_of(a), number_of(b)
    if va is not None and vb is not None:
        return va == vb
    return "".join(a.split()) == "".join(b.split())


def answer_kind(
    answer: str | None,
    correct: bool | None,
    gold: str,
    earlier: Sequence[str | None] = (),
) -> str:
    """``right``, or which kind of wrong answer ``answer`` is (see :data:`ANSWER_KINDS`).

    Args:
        answer: the role's committed answer (None: it gave none).
        correct: the env's verdict on its value (``answer_correct``).
        gold: the task's gold answer.
        earlier: the committed answers of the roles before it in the round.

    The first kind that applies wins, in this order: no answer, repeating an
    earlier role's (wrong) answer, off by one, the wrong sign, other.
    """
    if correct:
        return RIGHT
    if answer is None:
        return "no_answer"
    if any(same_answer(answer, e) for e in earlier):
        return "repeats_earlier"
    value, target = number_of(answer), number_of(gold)
    if value is not None and target is not None:
        if abs(value - target) == 1:
            return "off_by_one"
        if value == -target and target != 0:
            return "sign"
    return "other"
