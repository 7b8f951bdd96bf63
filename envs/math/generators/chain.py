"""``chain``: a chain of operations with precedence and parentheses, e.g. ``3 + 4 * (5 - 2)``.

Terms: 3 (difficulty 1) to 7 (difficulty 5); ``*`` and parentheses from
difficulty 3; difficulties 1-2 never go below zero.

Example:
    >>> task = ChainGenerator(difficulty=3).get(0)
    >>> task.prompt.startswith("What is ")
    True
    >>> ChainGenerator(terms=2, ops="+").get(0).prompt.count("+")
    1
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from .base import Generator, GeneratorConfig, Problem, check_int, check_ops, register_generator
from .expression import expression_problem

ATTEMPTS = 100  # redraws of an expression whose value breaks the config's limits


@dataclass(frozen=True)
class ChainConfig(GeneratorConfig):
    """Settings of :class:`ChainGenerator`."""

    terms: int = 3
    """Number of integers in the expression."""
    max_operand: int = 9
    """Largest integer in the expression."""
    ops: str = "+-"
    """The operations drawn from: a non-empty string of ``+-*``."""
    parens: bool = False
    """Wrap short sub-expressions in parentheses (half of the time)."""
    non_negative: bool = True
    """Redraw expressions whose value is below zero."""
    max_abs_value: int = 1000
    """Redraw expressions whose value is larger than this in absolute value."""

    def validate(self) -> None:
        """Raise ``ValueError`` on an out-of-range field."""
        check_int(self, "terms", 2, 50)
        check_int(self, "max_operand", 1, 10**9)
        check_ops(self, "ops", "+-*")
        check_int(self, "max_abs_value", 0)
        for flag in ("parens", "non_negative"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"ChainConfig.{flag} must be a bool, got {getattr(self, flag)!r}")


DIFFICULTY: dict[int, ChainConfig] = {
    1: ChainConfig(terms=3, max_operand=9, ops="+-", max_abs_value=10**3),
    2: ChainConfig(terms=4, max_operand=20, ops="+-", max_abs_value=10**4),
    3: ChainConfig(
        terms=4, max_operand=12, ops="+-*", parens=True, non_negative=False, max_abs_value=10**5
    ),
    4: ChainConfig(
        terms=5, max_operand=20, ops="+-*", parens=True, non_negative=False, max_abs_value=10**6
    ),
    5: ChainConfig(
        terms=7, max_operand=50, ops="+-*", parens=True, non_negative=False, max_abs_value=10**7
    ),
}


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


class ChainGenerator(Generator):
    """Arithmetic chains with precedence and parentheses (see the module docstring)."""

    name = "chain"
    description = "arithmetic chains with precedence and parentheses"
    config_class = ChainConfig
    difficulties = DIFFICULTY
    config: ChainConfig

    def _expr(self, rng: random.Random, terms: int) -> str:
        cfg = self.config
        if terms == 1:
            return str(rng.randint(1 if "*" in cfg.ops else 0, cfg.max_operand))
        left_terms = rng.randint(1, terms - 1)
        op = rng.choice(cfg.ops)
        left = self._expr(rng, left_terms)
        right = self._expr(rng, terms - left_terms)
        text = f"{left} {op} {right}"
        if cfg.parens and terms < 4 and rng.random() < 0.5:
            text = f"({text})"
        return text

    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""
        cfg = self.config
        for _ in range(ATTEMPTS):
            expr = self._expr(rng, cfg.terms)
            if expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
                expr = expr[1:-1]
            problem = expression_problem(expr)
            answer = problem.answer
            if isinstance(answer, str):
                raise TypeError(f"expression_problem({expr!r}) gave a text answer {answer!r}")
            value = Fraction(answer)  # one numeric type: mypy can't type abs() of int | Fraction
            if (value >= 0 or not cfg.non_negative) and abs(value) <= cfg.max_abs_value:
                break
        return problem


register_generator(ChainGenerator)
