"""Numbers in the grading worker: the decimal rule on what math-verify parsed.

math-verify compares numbers with ``float_rounding=6`` and chops tiny
differences, so it accepts ``\\frac{1}{2^{99}}`` for ``\\frac{1}{2^{98}}``,
``\\frac{1}{2004!}`` for ``\\frac{1}{2006!}`` and ``0.1234567`` for
``0.1234571``, and refuses a long float ``repr`` of a decimal gold. In the
worker, numbers are decided by the rule of :mod:`flexmg.envs.math.tolerance`
instead, the one every other path uses:

* :func:`judge_numbers` decides two plain numbers outright;
* :func:`numbers_agree` checks the numbers inside equal-length tuples and sets
  (and assignments such as ``x = 5``) after math-verify said "equal": it can
  only reject.

Values are computed with sympy's adaptive-precision ``evalf`` (30 digits) and
taken exactly where sympy has them exactly; a number parsed from a decimal
literal is equal to another when they agree to 14 significant digits (a
float's binary rounding is not a difference).

This module imports only sympy and, by path, :mod:`~flexmg.envs.math.tolerance`
(it runs inside the grader's worker processes, which never import flexmg).

Example:
    >>> import sympy
    >>> numbers_agree(sympy.Rational(1, 2**98), sympy.Rational(1, 2**99), "", "")
    False
    >>> judge_numbers(sympy.Rational(1, 3), sympy.Float("0.333333"), "1/3", "0.333333")
    (True, 'the decimal answer is right to all of its 6 places')
"""

from __future__ import annotations

import importlib.util
from fractions import Fraction
from pathlib import Path
from typing import Any

import sympy
from sympy import Basic, Eq, FiniteSet, Tuple

if __package__:
    from .tolerance import decimal_places, judge, significant_digits
else:  # loaded by path in the worker: load the sibling module the same way
    _spec = importlib.util.spec_from_file_location(
        "_flexmg_math_tolerance", Path(__file__).with_name("tolerance.py")
    )
    assert _spec is not None and _spec.loader is not None
    _tolerance = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_tolerance)
    decimal_places = _tolerance.decimal_places
    judge = _tolerance.judge
    significant_digits = _tolerance.significant_digits

_PRECISION = 30  # decimal digits for evalf
_FLOAT_EQUAL = Fraction(1, 10**14)  # relative: binary rounding of a parsed decimal
_MAX_BITS = 20000  # a value beyond 2^20000 is not compared exactly here


def decimals_written(text: str) -> int | None:
    """The largest number of decimal places in a decimal literal of ``text``.

    >>> decimals_written("0.25 + 1.125"), decimals_written("\\\\frac{1}{3}")
    (3, None)
    """
    return decimal_places(text)


def percent_value(expr: Basic, percent: str = "sign") -> Basic:
    """Read math-verify's ``x%`` (``x * UnevaluatedExpr(1/100)``) by the percent policy.

    ``x`` with ``"sign"``, ``x/100`` with ``"fraction"``; anything else unchanged.

    >>> from math_verify import parse
    >>> percent_value(parse("$28\\%$")[0]), percent_value(parse("$28\\%$")[0], "fraction")
    (28, 7/25)
    """
    if (
        isinstance(expr, sympy.Mul)
        and len(expr.args) == 2
        and expr.args[1] == sympy.UnevaluatedExpr(sympy.Rational(1, 100))
    ):
        return expr.args[0] if percent == "sign" else expr.args[0] / 100
    return expr


def _unwrap_assignment(expr: Basic) -> Basic:
    """``x = 5`` -> ``5``; ``a = b = 5`` -> ``5``; anything else unchanged."""
    while isinstance(expr, Eq) and isinstance(expr.lhs, sympy.Symbol):
        expr = expr.rhs
    return expr


def is_plain_number(expr: object) -> bool:
    """A sympy number that is not a set or tuple (``\\sqrt{2}``, ``0.5``, ``3\\pi``)."""
    return (
        isinstance(expr, Basic)
        and not isinstance(expr, (sympy.Set, Tuple))
        and bool(expr.is_number)
        and not expr.has(sympy.Symbol)
    )


def _fraction(expr: Basic) -> Fraction | None:
    """The value as a Fraction (exact for rationals), or None (not real, infinite, huge)."""
    try:
        value = expr.doit()
        if isinstance(value, sympy.Rational):
            return Fraction(int(value.p), int(value.q))
        number = sympy.N(value, _PRECISION)
        if not isinstance(number, sympy.Float):
            real, imaginary = number.as_real_imag()
            if imaginary != 0 and abs(imaginary) > abs(real) * sympy.Float("1e-25"):
                return None
            number = sympy.Float(real, _PRECISION)
        exact = sympy.Rational(number)
    except Exception:  # noqa: BLE001 - hostile input may make sympy raise anything
        return None
    if max(int(exact.p).bit_length(), int(exact.q).bit_length()) > _MAX_BITS:
        return None
    return Fraction(int(exact.p), int(exact.q))


def _has_float(expr: Basic) -> bool:
    return bool(expr.atoms(sympy.Float))


def judge_numbers(
    gold: Basic,
    pred: Basic,
    gold_text: str,
    pred_text: str,
    precision: int = 6,
    float_tolerance: float = 1e-9,
) -> tuple[bool, str] | None:
    """The decimal rule on two plain numbers: (agree, why), or None if they cannot be computed."""
    g_value, p_value = _fraction(gold), _fraction(pred)
    if g_value is None or p_value is None:
        return None
    if _has_float(gold) or _has_float(pred):
        scale = max(abs(g_value), abs(p_value))
        if abs(g_value - p_value) <= _FLOAT_EQUAL * scale:
            p_value = g_value
    elif g_value != p_value:
        scale = max(abs(g_value), abs(p_value))
        if abs(g_value - p_value) <= Fraction(1, 10**25) * scale:
            return None  # equal to 25 digits but not provably: let math-verify's verdict stand
    return judge(
        g_value,
        p_value,
        decimal_places(gold_text),
        decimal_places(pred_text),
        significant_digits(pred_text),
        precision,
        float_tolerance,
    )


def numbers_agree(
    gold: Basic,
    pred: Basic,
    gold_text: str,
    pred_text: str,
    precision: int = 6,
    float_tolerance: float = 1e-9,
) -> bool:
    """False when ``gold`` and ``pred`` hold numbers that really differ.

    ``gold_text``/``pred_text`` are the written answers, used to find how many
    decimal places each side states. Non-numeric objects return True (no
    opinion), so the function only ever tightens math-verify's decision.

    >>> numbers_agree(sympy.Float("0.1234571"), sympy.Float("0.1234567"), "0.1234571", "0.1234567")
    False
    """
    gold = _unwrap_assignment(gold)
    pred = _unwrap_assignment(pred)
    if isinstance(gold, (FiniteSet, Tuple)) and isinstance(pred, (FiniteSet, Tuple)):
        g_items: list[Any] = list(gold.args)
        p_items: list[Any] = list(pred.args)
        if len(g_items) != len(p_items) or not all(is_plain_number(x) for x in g_items + p_items):
            return True
        try:
            g_items.sort(key=lambda x: sympy.N(x, _PRECISION))
            p_items.sort(key=lambda x: sympy.N(x, _PRECISION))
        except (TypeError, ValueError):
            return True
        return all(
            numbers_agree(g, p, gold_text, pred_text, precision, float_tolerance)
            for g, p in zip(g_items, p_items, strict=True)
        )
    if not (is_plain_number(gold) and is_plain_number(pred)):
        return True
    verdict = judge_numbers(gold, pred, gold_text, pred_text, precision, float_tolerance)
    return True if verdict is None else verdict[0]
