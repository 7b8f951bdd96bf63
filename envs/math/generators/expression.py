"""Arithmetic expressions of the generators: exact values and canonical forms.

A canonical form names a problem up to commutation and reordering: ``3 + 4``
and ``4 + 3`` share one, so do ``2 * 3 - 1`` and ``-1 + 3 * 2``. The train/eval
split is decided on it, so equivalent problems never straddle the two splits.
Only the generators' own expressions are parsed here (integers, ``+ - * /``,
parentheses, unary minus), never agent text.

Example:
    >>> canonical_expression("3 + 4 * 2") == canonical_expression("2 * 4 + 3")
    True
    >>> canonical_expression("7 - 5") == canonical_expression("5 - 7")
    False
    >>> evaluate("(3/4) / (1/2)")
    Fraction(3, 2)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction

from .base import Problem, plain_fraction

_TOKEN = re.compile(r"\s*(\d+|[-+*/()])")

Node = tuple  # ("num", "12") | ("neg", node) | (op, left, right)


def parse(text: str) -> Node:
    """The syntax tree of a generator's expression (``ValueError`` on anything else).

    >>> parse("1 - (2)")
    ('-', ('num', '1'), ('num', '2'))
    """
    tokens = _tokens(text)
    node, pos = _sum(tokens, 0)
    if pos != len(tokens):
        raise ValueError(f"unexpected {tokens[pos]!r} in expression {text!r}")
    return node


def evaluate(text: str) -> Fraction:
    """The exact value of an expression.

    >>> evaluate("2 - 3 * (4 - 6)")
    Fraction(8, 1)
    """
    return _value(parse(text))


def expression_problem(expression: str, suffix: str = "") -> Problem:
    """The problem "What is ``expression``?" with its exact answer and canonical form.

    >>> expression_problem("(-3) * 4").answer
    -12
    >>> expression_problem("1/2 + 1/4", " Give a reduced fraction.").solution
    '1/2 + 1/4 = 3/4'
    """
    value = evaluate(expression)
    return Problem(
        prompt=f"What is {expression}?{suffix}",
        answer=int(value) if value.denominator == 1 else value,
        solution=f"{expression} = {plain_fraction(value)}",
        canonical=canonical_expression(expression),
    )


def canonical_expression(text: str) -> str:
    """A normal form equal for expressions that differ by commutation/reordering.

    Sums are read as multisets of signed terms and products as multisets of
    factors and divisors, so ``a - b + c`` and ``c + a - b`` agree.

    >>> canonical_expression("(-3) + 5")
    'S(+5,-3)'
    """
    return _canonical(parse(text))


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    stripped = text.rstrip()
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if not match:
            raise ValueError(f"unexpected character at {pos} in expression {text!r}")
        tokens.append(match.group(1))
        pos = match.end()
    if not tokens:
        raise ValueError("empty expression")
    return tokens


def _sum(tokens: list[str], pos: int) -> tuple[Node, int]:
    return _left_assoc(tokens, pos, ("+", "-"), _product)


def _product(tokens: list[str], pos: int) -> tuple[Node, int]:
    return _left_assoc(tokens, pos, ("*", "/"), _atom)


def _left_assoc(
    tokens: list[str], pos: int, ops: tuple[str, ...], operand: Callable[..., tuple[Node, int]]
) -> tuple[Node, int]:
    """``operand (op operand)*`` for one precedence level, grouped to the left."""
    node, pos = operand(tokens, pos)
    while pos < len(tokens) and tokens[pos] in ops:
        op = tokens[pos]
        right, pos = operand(tokens, pos + 1)
        node = (op, node, right)
    return node, pos


def _atom(tokens: list[str], pos: int) -> tuple[Node, int]:
    if pos >= len(tokens):
        raise ValueError("expression ends early")
    token = tokens[pos]
    if token == "-":
        inner, pos = _atom(tokens, pos + 1)
        return ("neg", inner), pos
    if token == "(":
        inner, pos = _sum(tokens, pos + 1)
        if pos >= len(tokens) or tokens[pos] != ")":
            raise ValueError("unbalanced parentheses")
        return inner, pos + 1
    if token.isdigit():
        return ("num", token), pos + 1
    raise ValueError(f"unexpected {token!r}")


def _value(node: Node) -> Fraction:
    kind = node[0]
    if kind == "num":
        return Fraction(int(node[1]))
    if kind == "neg":
        return -_value(node[1])
    left, right = _value(node[1]), _value(node[2])
    if kind == "+":
        return left + right
    if kind == "-":
        return left - right
    if kind == "*":
        return left * right
    return left / right


def _terms(node: Node, sign: str, out: list[str]) -> None:
    if node[0] in ("+", "-"):
        _terms(node[1], sign, out)
        flip = {"+": "-", "-": "+"}[sign] if node[0] == "-" else sign
        _terms(node[2], flip, out)
    elif node[0] == "neg":
        _terms(node[1], {"+": "-", "-": "+"}[sign], out)
    else:
        out.append(sign + _canonical(node))


def _factors(node: Node, power: str, out: list[str]) -> None:
    if node[0] in ("*", "/"):
        _factors(node[1], power, out)
        _factors(node[2], power if node[0] == "*" else {"*": "/", "/": "*"}[power], out)
    else:
        out.append(power + _canonical(node))


def _canonical(node: Node) -> str:
    kind = node[0]
    if kind == "num":
        return str(int(node[1]))
    if kind in ("+", "-", "neg"):
        terms: list[str] = []
        _terms(node, "+", terms)
        return f"S({','.join(sorted(terms))})"
    factors: list[str] = []
    _factors(node, "*", factors)
    return f"P({','.join(sorted(factors))})"
