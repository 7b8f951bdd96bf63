"""``linear``: solve a linear equation for x.

Difficulty 1: ``x + 3 = 7``; 2: ``4x = 12``; 3: ``3x + 4 = 19`` with negative
solutions; 4: x on both sides; 5: fractional solutions.

Example:
    >>> LinearGenerator(difficulty=1).get(0).prompt.startswith("Solve x + ")
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
    plain_fraction,
    register_generator,
)

FORMS = ("shift", "scale", "affine", "both_sides")


@dataclass(frozen=True)
class LinearConfig(GeneratorConfig):
    """Settings of :class:`LinearGenerator`."""

    form: str = "shift"
    """``shift`` (x + b = c), ``scale`` (ax = c), ``affine`` (ax + b = c) or
    ``both_sides`` (ax + b = cx + e)."""
    max_solution: int = 9
    """Largest |x| (for fractional solutions: largest |numerator|)."""
    max_coefficient: int = 9
    """Largest |a| and |c|."""
    max_constant: int = 9
    """Largest |b|."""
    negatives: bool = False
    """Allow negative solutions and constants."""
    fractional: bool = False
    """Fractional solutions (``both_sides`` only)."""

    def validate(self) -> None:
        """Raise ``ValueError`` on an out-of-range field."""
        if self.form not in FORMS:
            raise ValueError(f"LinearConfig.form must be one of {FORMS}, got {self.form!r}")
        check_int(self, "max_solution", 1, 10**6)
        check_int(self, "max_coefficient", 2, 10**6)
        check_int(self, "max_constant", 1, 10**6)
        for flag in ("negatives", "fractional"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"LinearConfig.{flag} must be a bool, got {getattr(self, flag)!r}")
        if self.fractional and self.form != "both_sides":
            raise ValueError("LinearConfig.fractional needs form='both_sides'")


DIFFICULTY: dict[int, LinearConfig] = {
    1: LinearConfig(form="shift", max_solution=9, max_constant=9),
    2: LinearConfig(form="scale", max_solution=12, max_coefficient=9),
    3: LinearConfig(
        form="affine", max_solution=10, max_coefficient=9, max_constant=20, negatives=True
    ),
    4: LinearConfig(
        form="both_sides", max_solution=12, max_coefficient=12, max_constant=30, negatives=True
    ),
    5: LinearConfig(
        form="both_sides",
        max_solution=30,
        max_coefficient=12,
        max_constant=50,
        negatives=True,
        fractional=True,
    ),
}


def _signed(value: int) -> str:
    return f"+ {value}" if value >= 0 else f"- {-value}"


def _problem(prompt: str, x: Fraction, solution: str, equation: str) -> Problem:
    return Problem(prompt, x, solution, canonical="linear:" + " ".join(equation.split()))


class LinearGenerator(Generator):
    """Solve a linear equation ``ax + b = c`` for x (see the module docstring)."""

    name = "linear"
    description = "solve a linear equation ax + b = c for x"
    config_class = LinearConfig
    difficulties = DIFFICULTY
    config: LinearConfig

    def _solution(self, rng: random.Random) -> int:
        cfg = self.config
        return rng.randint(-cfg.max_solution if cfg.negatives else 0, cfg.max_solution)

    def _constant(self, rng: random.Random) -> int:
        b = rng.randint(1, self.config.max_constant)
        return rng.choice([-1, 1]) * b if self.config.negatives else b

    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""
        cfg = self.config
        if cfg.form == "shift":
            x, b = self._solution(rng), self._constant(rng)
            eq = f"x {_signed(b)} = {x + b}"
            return _problem(f"Solve {eq}.", Fraction(x), f"x = {x + b} - {b} = {x}", eq)
        if cfg.form == "scale":
            x, a = self._solution(rng), rng.randint(2, cfg.max_coefficient)
            eq = f"{a}x = {a * x}"
            return _problem(f"Solve {eq}.", Fraction(x), f"x = {a * x} / {a} = {x}", eq)
        if cfg.form == "affine":
            x, a, b = self._solution(rng), rng.randint(2, cfg.max_coefficient), self._constant(rng)
            eq = f"{a}x {_signed(b)} = {a * x + b}"
            return _problem(f"Solve {eq}.", Fraction(x), f"x = ({a * x + b} - {b}) / {a} = {x}", eq)
        return self._both_sides(rng)

    def _both_sides(self, rng: random.Random) -> Problem:
        cfg = self.config
        a = rng.randint(2, cfg.max_coefficient)
        c = rng.choice(
            [k for k in range(-cfg.max_coefficient, cfg.max_coefficient + 1) if k not in (0, a)]
        )
        b = self._constant(rng)
        if cfg.fractional:
            x = Fraction(rng.randint(-cfg.max_solution, cfg.max_solution), rng.randint(2, 9))
        else:
            x = Fraction(self._solution(rng))
        e = (a - c) * x + b
        if e.denominator != 1:  # keep coefficients integral: scale the equation
            scale = e.denominator
            a, b, c, e = a * scale, b * scale, c * scale, e * scale
        e_int = int(e)
        c_text = "x" if c == 1 else "-x" if c == -1 else f"{c}x"
        rhs = f"{c_text} {_signed(e_int)}" if e_int else c_text
        eq = f"{a}x {_signed(b)} = {rhs}"
        solution = f"({a} - {c})x = {e_int} - {b}, so x = {plain_fraction(x)}"
        return _problem(f"Solve for x: {eq}.", x, solution, eq)


register_generator(LinearGenerator)
