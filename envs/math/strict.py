"""A stricter numeric check applied after math-verify says "equal".

math-verify compares numbers with ``float_rounding=6`` and chops tiny
differences, so it accepts ``\\frac{1}{2^{99}}`` for ``\\frac{1}{2^{98}}``,
``\\frac{1}{2004!}`` for ``\\frac{1}{2006!}`` and ``0.1234567`` for
``0.1234571``. This module can only *reject* a match, never create one:

* exact numbers (no decimal literal on either side) must agree to a relative
  error of 1e-20, evaluated with sympy's adaptive-precision ``evalf`` (an
  exactly-zero difference evaluates to a number with no significant digits);
* when a side is written with decimals, the two values must agree to half a
  unit in the last decimal place written (``0.333333`` matches ``1/3``,
  ``0.1234567`` does not match ``0.1234571``).

Only plain numbers, percentages, assignments (``x = 5``) and equal-length
tuples/sets of numbers are checked; anything else keeps math-verify's verdict.

This module imports only sympy (it also runs inside the grader's worker
processes, which never import flexmg).

Example:
    >>> import sympy
    >>> numbers_agree(sympy.Rational(1, 2**98), sympy.Rational(1, 2**99), "", "")
    False
    >>> numbers_agree(sympy.Rational(1, 3), sympy.Float("0.333333"), "1/3", "0.333333")
    True
"""

from __future__ import annotations

import re

import sympy
from sympy import Basic, Eq, FiniteSet, Mul, Rational, Tuple, UnevaluatedExpr

_DECIMAL = re.compile(r"\d*\.(\d+)")
_RELATIVE_EXACT = sympy.Float("1e-20", 30)
_PRECISION = 30  # decimal digits for evalf


def decimals_written(text: str) -> int | None:
    """The largest number of decimal places in a decimal literal of ``text``.

    >>> decimals_written("0.25 + 1.125"), decimals_written("\\\\frac{1}{3}")
    (3, None)
    """
    places = [len(m.group(1)) for m in _DECIMAL.finditer(text)]
    return max(places) if places else None


def _percent_variants(expr: Basic) -> list[Basic]:
    """``50%`` may mean 50 or 0.5 (math-verify accepts both); others as is."""
    if (
        isinstance(expr, Mul)
        and len(expr.args) == 2
        and expr.args[1] == UnevaluatedExpr(Rational(1, 100))
    ):
        return [expr.args[0], expr.args[0] / 100]
    return [expr]


def _unwrap_assignment(expr: Basic) -> Basic:
    """``x = 5`` -> ``5``; ``a = b = 5`` -> ``5``; anything else unchanged."""
    while isinstance(expr, Eq) and isinstance(expr.lhs, sympy.Symbol):
        expr = expr.rhs
    return expr


def _is_plain_number(expr: object) -> bool:
    return isinstance(expr, Basic) and not isinstance(expr, (sympy.Set, Tuple)) and expr.is_number


def _scalar_agrees(gold: Basic, pred: Basic, places: int | None) -> bool:
    """True unless the two numbers provably differ beyond the allowed tolerance."""
    try:
        g = sympy.N(gold.doit(), _PRECISION)
        p = sympy.N(pred.doit(), _PRECISION)
        diff = sympy.N(gold.doit() - pred.doit(), _PRECISION)
    except Exception:
        return True  # cannot evaluate: keep math-verify's verdict
    if not all(isinstance(v, (sympy.Number, sympy.Expr)) for v in (g, p, diff)):
        return True
    if diff == 0 or (isinstance(diff, sympy.Float) and diff._prec <= 1):
        return True  # exactly zero, or no significant digit distinguishable from 0
    try:
        size = abs(diff)
        if places is not None:
            tolerance = sympy.Float(10, _PRECISION) ** (-places) / 2
            return bool(size <= tolerance * (1 + sympy.Float("1e-9")))
        scale = max(abs(g), abs(p))
        return bool(size <= _RELATIVE_EXACT * scale)
    except (TypeError, ValueError):
        return True  # complex/unorderable: keep math-verify's verdict


def numbers_agree(gold: Basic, pred: Basic, gold_text: str, pred_text: str) -> bool:
    """False when ``gold`` and ``pred`` are numbers that really differ.

    ``gold_text``/``pred_text`` are the written answers, used to find how many
    decimal places each side states. Non-numeric objects return True (no
    opinion), so the function only ever tightens math-verify's decision.

    >>> numbers_agree(sympy.Float("0.1234571"), sympy.Float("0.1234567"), "0.1234571", "0.1234567")
    False
    """
    places_list = [d for d in (decimals_written(gold_text), decimals_written(pred_text)) if d]
    places = max(places_list) if places_list else None
    gold = _unwrap_assignment(gold)
    pred = _unwrap_assignment(pred)
    if isinstance(gold, (FiniteSet, Tuple)) and isinstance(pred, (FiniteSet, Tuple)):
        g_items, p_items = list(gold.args), list(pred.args)
        if len(g_items) != len(p_items) or not all(_is_plain_number(x) for x in g_items + p_items):
            return True
        try:
            g_items.sort(key=lambda x: sympy.N(x, _PRECISION))
            p_items.sort(key=lambda x: sympy.N(x, _PRECISION))
        except (TypeError, ValueError):
            return True
        return all(
            numbers_agree(g, p, gold_text, pred_text) for g, p in zip(g_items, p_items, strict=True)
        )
    if not (_is_plain_number(gold) and _is_plain_number(pred)):
        return True
    return any(
        _scalar_agrees(g, p, places)
        for g in _percent_variants(gold)
        for p in _percent_variants(pred)
    )
