"""In-process verdicts on symbolic answers: compute both sides, no worker needed.

Answers that :mod:`flexmg.envs.math.latex_expr` reads (fractions, radicals,
``\\pi``, powers, polynomials, intervals, tuples, sets, matrices) are compared
by value here, in microseconds, instead of by math-verify in a worker process:

* numbers are computed exactly where they are rational (:class:`fractions.Fraction`),
  else to 50 significant digits with mpmath; two exact values are equal when
  they agree to 40 digits and different when they differ beyond 1e-20
  relative (the bound of :mod:`flexmg.envs.math.strict`); decimals follow the
  decimal rule of :mod:`flexmg.envs.math.tolerance`;
* expressions in variables are evaluated at three fixed complex points (so
  ``\\sqrt{x^2}`` is not ``x``): equal at all three to 35 digits is the same
  expression, different beyond 1e-12 at one point is a different one;
* tuples and intervals compare element by element with the same brackets,
  sets and lists as sets, matrices by shape then entries, unions of intervals
  in order of their left ends.

Anything else (or a case between the bounds) returns None and is left to
math-verify. Magnitudes are bounded, so no answer makes this slow.

Example:
    >>> compare(r"\\frac{\\sqrt{3}}{2}", r"\\frac{1}{2}\\sqrt{3}").verdict
    'correct'
    >>> compare(r"(x+1)^2", r"x^2 + 2x + 1").verdict, compare("2x + 1", "2x - 1").verdict
    ('correct', 'wrong')
    >>> compare(r"\\sin(x)", r"\\log 8") is None
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from .latex_expr import Ambiguous, Malformed, Node, read_shape
from .tolerance import judge

_DPS = 50
_MAX_MAGNITUDE_BITS = 4000  # 2^4000: far beyond any answer; bigger goes to the worker
_MAX_EXACT_EXPONENT = 256
_EQUAL_EXACT = 1e-40
_DIFFERENT_EXACT = 1e-20
_EQUAL_SYMBOLIC = 1e-35
_DIFFERENT_SYMBOLIC = 1e-12
# Fixed points in the complex plane (away from 0, 1 and the real axis's branch cuts).
_POINTS = ((0.5371, 0.2643), (-1.3127, 0.8419), (2.2113, -1.1071))


class _Undecided(Exception):
    """Leave this comparison to math-verify."""


class _TooBig(_Undecided):
    """A power whose magnitude is beyond 2^4000 (``9^{9^{9^9}}``)."""


@dataclass(frozen=True)
class Decision:
    """An in-process verdict: ``correct``, ``wrong`` or ``malformed`` (no expression), and why."""

    verdict: str
    detail: str


def compare(
    answer: str, gold: str, precision: int = 6, float_tolerance: float = 1e-9
) -> Decision | None:
    """The verdict on ``answer`` against ``gold``, or None to ask math-verify."""
    try:
        answer_shape = _shape(answer)
    except Malformed as exc:
        return Decision("malformed", f"not an expression: {exc}")
    except (Ambiguous, ArithmeticError, ValueError, RecursionError):
        return None
    try:
        gold_shape = _shape(gold)
        return _compare_shapes(answer_shape, gold_shape, precision, float_tolerance)
    except (Ambiguous, _Undecided, ArithmeticError, ValueError, OverflowError, RecursionError):
        return None


@lru_cache(maxsize=8192)
def _shape(text: str) -> Node:
    return read_shape(text)


def _compare_shapes(answer: Node, gold: Node, precision: int, tolerance: float) -> Decision:
    kind = gold[0]
    if answer[0] != kind:
        shapes = {answer[0], kind}
        if "expr" in shapes and shapes & {"matrix", "union", "tuple"}:
            return Decision("wrong", f"a {answer[0]} for a {kind} (math-verify never equates them)")
        raise _Undecided("different shapes")
    if kind == "expr":
        return _decide(answer[1], gold[1], precision, tolerance)
    if kind == "tuple":
        if answer[1:3] != gold[1:3] and len(answer[3]) == len(gold[3]) == 2 and _is_point(gold):
            return _all(answer[3], gold[3], precision, tolerance, "coordinate")
        if answer[1:3] != gold[1:3] or len(answer[3]) != len(gold[3]):
            if len(answer[3]) == len(gold[3]) == 2:
                return Decision(
                    "wrong",
                    f"an interval {answer[1]}..{answer[2]}, the gold's is {gold[1]}..{gold[2]}",
                )
            raise _Undecided("different brackets")
        return _all(answer[3], gold[3], precision, tolerance, "element")
    if kind == "matrix":
        a_rows, g_rows = answer[1], gold[1]
        if (len(a_rows), len(a_rows[0])) != (len(g_rows), len(g_rows[0])):
            return Decision("wrong", "a matrix of another shape")
        flat_a = [c for row in a_rows for c in row]
        flat_g = [c for row in g_rows for c in row]
        return _all(tuple(flat_a), tuple(flat_g), precision, tolerance, "entry")
    if kind == "set":
        return _sets(answer[1], gold[1], precision, tolerance)
    if kind == "union":
        if len(answer[1]) != len(gold[1]):
            raise _Undecided("unions of different lengths")
        a_sorted = sorted(answer[1], key=_left_end)
        g_sorted = sorted(gold[1], key=_left_end)
        for a_interval, g_interval in zip(a_sorted, g_sorted, strict=True):
            decision = _compare_shapes(a_interval, g_interval, precision, tolerance)
            if decision.verdict != "correct":
                return Decision("wrong", f"the union differs: {decision.detail}")
        return Decision("correct", "the same union of intervals")
    raise _Undecided(kind)


def _all(
    answer: tuple[Node, ...], gold: tuple[Node, ...], precision: int, tolerance: float, what: str
) -> Decision:
    for index, (a, g) in enumerate(zip(answer, gold, strict=True)):
        decision = _decide(a, g, precision, tolerance)
        if decision.verdict != "correct":
            return Decision("wrong", f"{what} {index + 1} differs: {decision.detail}")
    return Decision("correct", f"every {what} equal")


def _sets(
    answer: tuple[Node, ...], gold: tuple[Node, ...], precision: int, tolerance: float
) -> Decision:
    unmatched = list(gold)
    for a in answer:
        for index, g in enumerate(unmatched):
            if _decide(a, g, precision, tolerance).verdict == "correct":
                del unmatched[index]
                break
        else:
            if any(_decide(a, g, precision, tolerance).verdict == "correct" for g in gold):
                raise _Undecided("a repeated element")
            return Decision("wrong", "an element the gold does not have")
    if unmatched:
        return Decision("wrong", "the gold has an element the answer lacks")
    return Decision("correct", "the same set of values")


def _is_point(pair: Node) -> bool:
    """A pair that cannot be an interval (its first number above its second): a point."""
    import mpmath

    ends = pair[3]
    if any(end[0] == "inf" or _variables(end) for end in ends):
        return False
    with mpmath.workdps(_DPS):
        first, second = (_numeric(end, {}) for end in ends)
        if first.imag or second.imag:
            return False
        return bool(first.real > second.real)


def _left_end(interval: Node) -> float:
    import mpmath

    start = interval[3][0]
    if start[0] == "inf":
        return -math.inf if start[1] < 0 else math.inf
    with mpmath.workdps(_DPS):
        return float(_numeric(start, {}).real)


# ---------------------------------------------------------------- one value
def _decide(answer: Node, gold: Node, precision: int, tolerance: float) -> Decision:
    import mpmath

    with mpmath.workdps(_DPS):  # every step at 50 digits, comparisons included
        return _decide_at_precision(answer, gold, precision, tolerance)


def _decide_at_precision(answer: Node, gold: Node, precision: int, tolerance: float) -> Decision:
    if answer[0] == "inf" or gold[0] == "inf":
        if answer == gold:
            return Decision("correct", "the same infinity")
        return Decision("wrong", "infinity against a finite value or the other infinity")
    names = sorted(_variables(answer) | _variables(gold))
    g_places, a_places = _places(gold), _places(answer)
    if names:
        if g_places is not None or a_places is not None:
            raise _Undecided("decimals in an expression with variables")
        return _decide_symbolic(answer, gold, names)
    if _is_power(answer) and not _is_power(gold):
        try:
            _numeric(answer, {})
        except _TooBig:
            _numeric(gold, {})  # a gold within the bound: the two cannot be equal
            return Decision("wrong", "a power beyond 2^4000 for a gold far smaller")
    exact_g, exact_a = _exact(gold), _exact(answer)
    if exact_g is not None and exact_a is not None:
        agree, why = judge(
            exact_g, exact_a, g_places, a_places, _digits(answer), precision, tolerance
        )
        return Decision("correct" if agree else "wrong", why)
    g_value, a_value = _numeric(gold, {}), _numeric(answer, {})
    scale = max(abs(g_value), abs(a_value), 1e-300)
    diff = abs(g_value - a_value)
    if g_places is None and a_places is None:
        if diff <= _EQUAL_EXACT * scale:
            return Decision("correct", "the same exact value (to 40 digits)")
        if diff > _DIFFERENT_EXACT * scale:
            return Decision("wrong", "different exact values")
        raise _Undecided("too close to call in floating point")
    if abs(g_value.imag) > 1e-40 * scale or abs(a_value.imag) > 1e-40 * scale:
        raise _Undecided("a complex value against a decimal")
    g_fraction = _to_fraction(g_value.real)
    a_fraction = g_fraction if diff <= _EQUAL_EXACT * scale else _to_fraction(a_value.real)
    agree, why = judge(
        g_fraction, a_fraction, g_places, a_places, _digits(answer), precision, tolerance
    )
    return Decision("correct" if agree else "wrong", why)


def _decide_symbolic(answer: Node, gold: Node, names: list[str]) -> Decision:
    import mpmath

    equal = True
    for shift, point in enumerate(_POINTS):
        values = {
            name: mpmath.mpc(point[0] + 0.173 * k, point[1] - 0.091 * k)
            for k, name in enumerate(names, start=shift)
        }
        g_value, a_value = _numeric(gold, values), _numeric(answer, values)
        scale = max(abs(g_value), abs(a_value), 1e-300)
        diff = abs(g_value - a_value)
        if diff > _DIFFERENT_SYMBOLIC * scale:
            return Decision(
                "wrong",
                f"a different expression (they differ where {names[0]} is {point[0]}+{point[1]}i)",
            )
        if diff > _EQUAL_SYMBOLIC * scale:
            equal = False
    if not equal:
        raise _Undecided("too close to call")
    return Decision("correct", "the same expression (equal at three complex points to 35 digits)")


def _is_power(node: Node) -> bool:
    return node[0] == "pow" or (node[0] == "neg" and node[1][0] == "pow")


def _variables(node: Node) -> set[str]:
    if node[0] == "var":
        return {node[1]}
    found: set[str] = set()
    for child in node[1:]:
        if isinstance(child, tuple) and child and isinstance(child[0], str):
            found |= _variables(child)
        elif isinstance(child, tuple):
            for sub in child:
                if isinstance(sub, tuple):
                    found |= _variables(sub)
    return found


def _leaves(node: Node) -> list[Node]:
    if node[0] == "num":
        return [node]
    out: list[Node] = []
    for child in node[1:]:
        if isinstance(child, tuple) and child and isinstance(child[0], str):
            out += _leaves(child)
        elif isinstance(child, tuple):
            for sub in child:
                if isinstance(sub, tuple):
                    out += _leaves(sub)
    return out


def _places(node: Node) -> int | None:
    places = [leaf[2] for leaf in _leaves(node) if leaf[2] is not None]
    return max(places) if places else None


def _digits(node: Node) -> int:
    return max((leaf[3] for leaf in _leaves(node)), default=0)


def _exact(node: Node) -> Fraction | None:
    """The exact rational value, or None (irrational, or too big to be worth it)."""
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "neg":
        inner = _exact(node[1])
        return None if inner is None else -inner
    if kind in ("add", "mul"):
        total = Fraction(0 if kind == "add" else 1)
        for child in node[1]:
            value = _exact(child)
            if value is None:
                return None
            total = total + value if kind == "add" else total * value
        return total
    if kind == "div":
        top, bottom = _exact(node[1]), _exact(node[2])
        if top is None or bottom is None:
            return None
        if bottom == 0:
            raise _Undecided("division by zero")
        return top / bottom
    if kind == "pow":
        base, exponent = _exact(node[1]), _exact(node[2])
        if base is None or exponent is None or exponent.denominator != 1:
            return None
        if (
            abs(exponent) > _MAX_EXACT_EXPONENT
            or max(base.numerator, base.denominator).bit_length() > 512
        ):
            return None
        if base == 0 and exponent <= 0:
            raise _Undecided("0 to a non-positive power")
        return base ** int(exponent)
    return None


def _to_fraction(value: Any) -> Fraction:
    mantissa, exponent = value.man_exp
    if abs(exponent) > _MAX_MAGNITUDE_BITS * 2:
        raise _Undecided("too large")
    return Fraction(mantissa) * Fraction(2) ** exponent


def _numeric(node: Node, values: dict[str, Any]) -> Any:
    """The value of ``node`` as an mpmath complex (call within ``workdps(_DPS)``)."""
    import mpmath

    result = _evaluate(node, values, mpmath)
    if not mpmath.isfinite(result):
        raise _Undecided("not finite")
    return mpmath.mpc(result)


def _check(value: Any, mp: Any) -> Any:
    if value != 0 and abs(mp.mag(value)) > _MAX_MAGNITUDE_BITS:
        raise _Undecided("a magnitude beyond the in-process bound")
    return value


def _evaluate(node: Node, values: dict[str, Any], mp: Any) -> Any:
    kind = node[0]
    if kind == "num":
        return mp.mpf(node[1].numerator) / node[1].denominator
    if kind == "var":
        if node[1] not in values:
            raise _Undecided(f"no value for {node[1]}")
        return values[node[1]]
    if kind == "pi":
        return +mp.pi
    if kind == "e":
        return +mp.e
    if kind == "neg":
        return -_evaluate(node[1], values, mp)
    if kind == "add":
        return _check(mp.fsum(_evaluate(c, values, mp) for c in node[1]), mp)
    if kind == "mul":
        out = mp.mpf(1)
        for child in node[1]:
            out = _check(out * _evaluate(child, values, mp), mp)
        return out
    if kind == "div":
        bottom = _evaluate(node[2], values, mp)
        if bottom == 0:
            raise _Undecided("division by zero")
        return _check(_evaluate(node[1], values, mp) / bottom, mp)
    if kind == "pow":
        base = _evaluate(node[1], values, mp)
        exponent = _evaluate(node[2], values, mp)
        if base == 0:
            if exponent == 0 or mp.re(exponent) <= 0:
                raise _Undecided("0 to a non-positive power")
            return mp.mpf(0)
        if abs(exponent) * (abs(mp.mag(base)) + 1) > _MAX_MAGNITUDE_BITS:
            raise _TooBig("a power beyond the in-process bound")
        if mp.im(exponent) == 0 and mp.re(exponent) == int(mp.re(exponent)) and mp.im(base) == 0:
            return _check(mp.power(mp.re(base), int(mp.re(exponent))), mp)
        return _check(mp.power(base, exponent), mp)
    if kind == "root":
        radicand = _evaluate(node[1], values, mp)
        if node[2] is None:
            return mp.sqrt(radicand)
        index = _evaluate(node[2], values, mp)
        if index == 0:
            raise _Undecided("a zeroth root")
        if (
            mp.im(radicand) == 0
            and mp.re(radicand) < 0
            and mp.im(index) == 0
            and int(mp.re(index)) % 2
        ):
            raise _Undecided("an odd root of a negative number (real or principal?)")
        return _check(mp.power(radicand, 1 / index), mp)
    if kind == "fn":
        argument = _evaluate(node[2], values, mp)
        if abs(mp.mag(argument)) > 64:
            raise _Undecided("a function of a huge argument")
        name = node[1]
        if name in ("sec", "csc", "cot"):
            base = {"sec": mp.cos, "csc": mp.sin, "cot": mp.tan}[name](argument)
            if base == 0:
                raise _Undecided("a pole")
            return 1 / base
        if name == "ln":
            if argument == 0:
                raise _Undecided("log of zero")
            return mp.log(argument)
        function = {"arcsin": mp.asin, "arccos": mp.acos, "arctan": mp.atan}.get(name) or getattr(
            mp, name
        )
        return _check(function(argument), mp)
    raise _Undecided(f"cannot evaluate {kind}")
