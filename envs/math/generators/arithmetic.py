"""``arithmetic``: one binary operation on integers, e.g. ``What is 27 + 14?``.

Difficulty 1 (the default task of the math envs): operands up to 40, ``+`` or
``-``, never negative; 2: up to 99; 3: adds ``*`` by one digit; 4: three
digits, ``*`` by two digits, negatives; 5: adds exact division. Any field can
be set: ``{"name": "arithmetic", "max_operand": 50, "ops": "+-"}``. ``phrasing``
asks the same problems in other words (``"unseen"``: one of twelve wordings per
problem, word problems among them; see :mod:`.phrasings`).

Example:
    >>> src = ArithmeticGenerator(difficulty=1)
    >>> task = src.get(0)
    >>> task.prompt.startswith("What is"), task.meta["difficulty"]
    (True, 1)
    >>> len(ArithmeticGenerator(split="eval").distinct_prompts()) >= 300
    True
    >>> ArithmeticGenerator(ops="+", phrasing="add").get(0).prompt
    'Add 32 and 18.'
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass

from .base import Generator, GeneratorConfig, Problem, check_int, check_ops, register_generator
from .expression import expression_problem
from .phrasings import ANY_UNSEEN, DEFAULT_PHRASING, TEMPLATES, known_phrasings, phrase, phrasings


@dataclass(frozen=True)
class ArithmeticConfig(GeneratorConfig):
    """Settings of :class:`ArithmeticGenerator`."""

    max_operand: int = 40
    """Largest operand of ``+`` and ``-``, and largest first factor of ``*``."""
    ops: str = "+-"
    """The operations drawn from: a non-empty string of ``+-*/``."""
    max_factor: int = 9
    """Largest second factor of ``*``."""
    max_divisor: int = 99
    """Largest divisor of ``/`` (divisions are always exact)."""
    max_quotient: int = 99
    """Largest result of ``/``."""
    negatives: bool = False
    """Allow negative operands and results; when off, ``a - b`` always has ``a >= b``."""
    phrasing: str = DEFAULT_PHRASING
    """The prompt's wording: ``what_is``, ``unseen`` (one of the others per problem) or a name."""

    def validate(self) -> None:
        """Raise ``ValueError`` on an out-of-range field."""
        check_int(self, "max_operand", 1, 10**9)
        check_ops(self, "ops", "+-*/")
        check_int(self, "max_factor", 1, 10**9)
        check_int(self, "max_divisor", 1, 10**9)
        check_int(self, "max_quotient", 0, 10**9)
        if not isinstance(self.negatives, bool):
            raise ValueError(f"ArithmeticConfig.negatives must be a bool, got {self.negatives!r}")
        if self.phrasing not in known_phrasings():
            raise ValueError(
                f"ArithmeticConfig.phrasing must be one of {', '.join(known_phrasings())}; "
                f"got {self.phrasing!r}"
            )
        named = self.phrasing not in (DEFAULT_PHRASING, ANY_UNSEEN)
        missing = [op for op in self.ops if named and self.phrasing not in TEMPLATES[op]]
        if missing:
            raise ValueError(
                f"ArithmeticConfig.phrasing {self.phrasing!r} has no wording for {missing}; "
                f"use 'unseen' or one that every op of {self.ops!r} has"
            )
        if self.negatives and any(self.phrasing in phrasings(op, False) and self.phrasing not in
                                  phrasings(op, True) for op in self.ops):  # fmt: skip
            raise ValueError(
                f"ArithmeticConfig.phrasing {self.phrasing!r} is a word problem; it needs "
                "negatives=False"
            )


DIFFICULTY: dict[int, ArithmeticConfig] = {
    1: ArithmeticConfig(max_operand=40, ops="+-"),
    2: ArithmeticConfig(max_operand=99, ops="+-"),
    3: ArithmeticConfig(max_operand=99, ops="+-*", max_factor=9),
    4: ArithmeticConfig(max_operand=999, ops="+-*", max_factor=99, negatives=True),
    5: ArithmeticConfig(max_operand=999, ops="+-*/", max_factor=99, negatives=True),
}

NEGATIVE_RATE = 0.3  # share of first operands made negative when negatives are on


def problem(a: int, op: str, b: int, phrasing: str = DEFAULT_PHRASING) -> Problem:
    """The problem ``a op b`` with its exact answer and canonical form, in a wording.

    >>> problem(-3, "*", 4).prompt
    'What is (-3) * 4?'
    >>> problem(3, "+", 4, "equals").prompt, problem(3, "+", 4, "equals").canonical
    ('3 + 4 = ?', 'S(+3,+4)')
    """
    base = expression_problem(f"({a}) {op} {b}" if a < 0 else f"{a} {op} {b}")
    if phrasing == DEFAULT_PHRASING:
        return base
    return dataclasses.replace(base, prompt=phrase(a, op, b, phrasing), phrasing=phrasing)


class ArithmeticGenerator(Generator):
    """A single ``+``, ``-``, ``*`` or ``/`` on integers (see the module docstring)."""

    name = "arithmetic"
    description = "a single +, -, x or / on integers"
    config_class = ArithmeticConfig
    difficulties = DIFFICULTY
    config: ArithmeticConfig

    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""
        cfg = self.config
        op = rng.choice(cfg.ops)
        if op == "/":
            b = rng.randint(1, cfg.max_divisor)
            a = rng.randint(0, cfg.max_quotient) * b
        elif op == "*":
            a, b = rng.randint(0, cfg.max_operand), rng.randint(0, cfg.max_factor)
        else:
            a, b = rng.randint(0, cfg.max_operand), rng.randint(0, cfg.max_operand)
            if op == "-" and not cfg.negatives and a < b:
                a, b = b, a
        if cfg.negatives and rng.random() < NEGATIVE_RATE:
            a = -a
        wording = cfg.phrasing
        if wording == ANY_UNSEEN:
            wording = rng.choice(phrasings(op, cfg.negatives))
        return problem(a, op, b, wording)

    def problems(self) -> Iterator[Problem]:
        """Every problem the config can draw (large for the higher difficulties)."""
        cfg = self.config
        for op in dict.fromkeys(cfg.ops):
            wordings = (
                phrasings(op, cfg.negatives) if cfg.phrasing == ANY_UNSEEN else (cfg.phrasing,)
            )
            for a, b in self._operands(op):
                for wording in wordings:
                    yield problem(a, op, b, wording)
                    if cfg.negatives and a > 0:
                        yield problem(-a, op, b, wording)

    def _operands(self, op: str) -> Iterator[tuple[int, int]]:
        cfg = self.config
        if op == "/":
            for b in range(1, cfg.max_divisor + 1):
                for quotient in range(cfg.max_quotient + 1):
                    yield quotient * b, b
            return
        high_b = cfg.max_factor if op == "*" else cfg.max_operand
        for a in range(cfg.max_operand + 1):
            for b in range(high_b + 1):
                if op != "-" or cfg.negatives or a >= b:
                    yield a, b


register_generator(ArithmeticGenerator)
