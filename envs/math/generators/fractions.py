"""``fractions``: fraction arithmetic; the answer is a reduced fraction or an integer.

Difficulty 1: two fractions with the same denominator, ``+`` or ``-``; 2:
different denominators; 3: ``*`` and ``/``; 4: three fractions; 5: larger
denominators and negatives.

Example:
    >>> task = FractionsGenerator(difficulty=2).get(0)
    >>> task.prompt.endswith("Give a reduced fraction.")
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from .base import (
    Generator,
    GeneratorConfig,
    Problem,
    check_int,
    check_ops,
    plain_fraction,
    register_generator,
)
from .expression import expression_problem

NEGATIVE_RATE = 0.3  # share of fractions made negative when negatives are on


@dataclass(frozen=True)
class FractionsConfig(GeneratorConfig):
    """Settings of :class:`FractionsGenerator`."""

    terms: int = 2
    """Number of fractions."""
    max_denominator: int = 9
    """Largest denominator (the smallest is 2)."""
    ops: str = "+-"
    """The operations drawn from: a non-empty string of ``+-*/``."""
    same_denominator: bool = False
    """Two proper fractions over one denominator, larger first (needs ``terms=2``, ``+-``)."""
    negatives: bool = False
    """Make some fractions negative."""

    def validate(self) -> None:
        """Raise ``ValueError`` on an out-of-range field."""
        check_int(self, "terms", 2, 10)
        check_int(self, "max_denominator", 2, 10**6)
        check_ops(self, "ops", "+-*/")
        for flag in ("same_denominator", "negatives"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(
                    f"FractionsConfig.{flag} must be a bool, got {getattr(self, flag)!r}"
                )
        if self.same_denominator and (self.terms != 2 or set(self.ops) - set("+-")):
            raise ValueError(
                "FractionsConfig.same_denominator needs terms=2 and ops from '+-', "
                f"got terms={self.terms!r}, ops={self.ops!r}"
            )


DIFFICULTY: dict[int, FractionsConfig] = {
    1: FractionsConfig(terms=2, max_denominator=9, ops="+-", same_denominator=True),
    2: FractionsConfig(terms=2, max_denominator=9, ops="+-"),
    3: FractionsConfig(terms=2, max_denominator=9, ops="+-*/"),
    4: FractionsConfig(terms=3, max_denominator=12, ops="+-*/"),
    5: FractionsConfig(terms=3, max_denominator=20, ops="+-*/", negatives=True),
}

SUFFIX = " Give a reduced fraction."


class FractionsGenerator(Generator):
    """Fraction arithmetic with reduced-fraction answers (see the module docstring)."""

    name = "fractions"
    description = "fraction arithmetic with reduced-fraction answers"
    config_class = FractionsConfig
    difficulties = DIFFICULTY
    config: FractionsConfig

    def _fraction(self, rng: random.Random) -> Fraction:
        den = rng.randint(2, self.config.max_denominator)
        value = Fraction(rng.randint(1, den * 2 - 1), den)
        return -value if self.config.negatives and rng.random() < NEGATIVE_RATE else value

    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""
        cfg = self.config
        if cfg.same_denominator:
            den = rng.randint(2, cfg.max_denominator)
            first, second = sorted((rng.randint(1, den - 1), rng.randint(1, den - 1)), reverse=True)
            op = rng.choice(cfg.ops)
            return expression_problem(f"{first}/{den} {op} {second}/{den}", SUFFIX)
        parts = [self._fraction(rng) for _ in range(cfg.terms)]
        ops = [rng.choice(cfg.ops) for _ in range(cfg.terms - 1)]
        wrap = any(op in "*/" for op in ops) or cfg.negatives
        shown = [f"({plain_fraction(p)})" if wrap else plain_fraction(p) for p in parts]
        text = shown[0]
        for i, op in enumerate(ops):
            if i > 0:
                text = f"({text})"  # evaluate left to right, explicitly
            text += f" {op} {shown[i + 1]}"
        return expression_problem(text, SUFFIX)


register_generator(FractionsGenerator)
