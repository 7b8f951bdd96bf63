"""Procedural math task generators: seeded, infinite, answers computed exactly.

Every generator is a task source (``name``, ``get(index)``): the task at
``index`` depends only on ``(generator, difficulty, seed, split, index)``.
Train and eval never overlap: a task's split is decided by a stable hash of
its prompt, and ``get`` redraws deterministically until the task lands in the
requested split. ``difficulty`` runs from 1 (tiny numbers, short prompts; what
a character-level model can learn) to 5.

Example:
    >>> src = ArithmeticGenerator(difficulty=1)
    >>> task = src.get(0)
    >>> task.prompt.startswith("What is"), task.meta["difficulty"]
    (True, 1)
    >>> src.get(0) == task
    True
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any, ClassVar

from flexmg.tasks import Split, Task, in_eval_split, stable_hash

MAX_REDRAWS = 10_000


def format_number(value: Fraction | int) -> str:
    """Exact LaTeX for a rational: ``12``, ``-7``, ``\\frac{3}{4}``, ``-\\frac{1}{2}``.

    >>> format_number(Fraction(-6, 8))
    '-\\\\frac{3}{4}'
    """
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def plain_fraction(value: Fraction) -> str:
    """How a fraction is written in a prompt: ``3/4``, ``-1/2``, ``5``."""
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


class Generator(ABC):
    """Base class: subclasses set ``name`` and implement :meth:`draw`.

    Args:
        difficulty: 1 (easiest) to 5.
        seed: selects an independent stream of tasks.
        split: ``"train"``, ``"eval"`` or ``"all"``.
        eval_fraction: share of distinct prompts reserved for evaluation.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(
        self,
        difficulty: int = 1,
        seed: int = 0,
        split: Split = "train",
        eval_fraction: float = 0.2,
    ) -> None:
        if (
            isinstance(difficulty, bool)
            or not isinstance(difficulty, int)
            or not 1 <= difficulty <= 5
        ):
            raise ValueError(
                f"{self.name}: difficulty must be an int from 1 to 5, got {difficulty!r}"
            )
        if split not in ("train", "eval", "all"):
            raise ValueError(f"split must be 'train', 'eval' or 'all', got {split!r}")
        if not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if not 0.0 < eval_fraction < 1.0:
            raise ValueError(
                f"eval_fraction must be strictly between 0 and 1, got {eval_fraction!r}"
            )
        self.difficulty = difficulty
        self.seed = seed
        self.split = split
        self.eval_fraction = eval_fraction

    @abstractmethod
    def draw(self, rng: random.Random) -> tuple[str, Fraction | int | str, str]:
        """One random problem: ``(prompt, exact answer, worked solution)``."""

    def get(self, index: int) -> Task:
        """The task at ``index`` (any int; the same on every call and machine)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"task index must be an int, got {index!r}")
        for attempt in range(MAX_REDRAWS):
            rng = random.Random(
                stable_hash(self.name, self.difficulty, self.seed, self.split, index, attempt)
            )
            prompt, answer, solution = self.draw(rng)
            if self.split == "all" or in_eval_split(prompt, self.eval_fraction) == (
                self.split == "eval"
            ):
                answer_text = answer if isinstance(answer, str) else format_number(answer)
                meta: dict[str, Any] = {
                    "source": f"generator:{self.name}",
                    "generator": self.name,
                    "difficulty": self.difficulty,
                    "seed": self.seed,
                    "index": index,
                    "split": self.split,
                    "solution": solution,
                }
                task_id = f"{self.name}/d{self.difficulty}/s{self.seed}/{self.split}/{index}"
                return Task(id=task_id, prompt=prompt, answer=answer_text, meta=meta)
        raise RuntimeError(
            f"{self.name}: no task landed in split {self.split!r} after {MAX_REDRAWS} draws"
        )

    def __len__(self) -> int:
        raise TypeError(f"generator {self.name!r} is infinite; it has no len()")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(difficulty={self.difficulty}, seed={self.seed}, "
            f"split={self.split!r})"
        )


class ArithmeticGenerator(Generator):
    """One binary operation. Difficulty 1: ``What is 7 + 5?`` (single digits, + or -,
    never negative); 2: two-digit +/-; 3: adds x; 4: three-digit, negatives;
    5: adds exact division."""

    name = "arithmetic"
    description = "a single +, -, x or / on integers"

    def draw(self, rng: random.Random) -> tuple[str, int, str]:
        d = self.difficulty
        ops = {1: "+-", 2: "+-", 3: "+-*", 4: "+-*", 5: "+-*/"}[d]
        hi = {1: 9, 2: 99, 3: 99, 4: 999, 5: 999}[d]
        op = rng.choice(ops)
        a, b = rng.randint(0, hi), rng.randint(0, hi)
        if op == "-" and d <= 3 and a < b:
            a, b = b, a  # no negative results below difficulty 4
        if op == "*":
            b = rng.randint(0, 9 if d == 3 else 99)
            value = a * b
        elif op == "/":
            b = rng.randint(1, 99)
            value = rng.randint(0, 99)
            a = value * b
        else:
            value = a + b if op == "+" else a - b
        if d >= 4 and rng.random() < 0.3:
            a = -a
            value = -value if op in "*/" else a + b if op == "+" else a - b
        symbol = {"+": "+", "-": "-", "*": "*", "/": "/"}[op]
        shown = f"({a})" if a < 0 else str(a)
        return f"What is {shown} {symbol} {b}?", value, f"{shown} {symbol} {b} = {value}"


class ChainGenerator(Generator):
    """A chain of operations with precedence and parentheses, e.g. ``3 + 4 * (5 - 2)``.
    Terms: 3 (difficulty 1) to 7 (difficulty 5); parentheses from difficulty 3."""

    name = "chain"
    description = "arithmetic chains with precedence and parentheses"

    def _expr(self, rng: random.Random, terms: int, hi: int, ops: str, parens: bool) -> str:
        if terms == 1:
            return str(rng.randint(1 if "*" in ops else 0, hi))
        left_terms = rng.randint(1, terms - 1)
        op = rng.choice(ops)
        left = self._expr(rng, left_terms, hi, ops, parens)
        right = self._expr(rng, terms - left_terms, hi, ops, parens)
        text = f"{left} {op} {right}"
        if parens and terms < 4 and rng.random() < 0.5:
            text = f"({text})"
        return text

    def draw(self, rng: random.Random) -> tuple[str, int, str]:
        d = self.difficulty
        terms = {1: 3, 2: 4, 3: 4, 4: 5, 5: 7}[d]
        hi = {1: 9, 2: 20, 3: 12, 4: 20, 5: 50}[d]
        ops = "+-" if d <= 2 else "+-*"
        for _ in range(100):
            expr = self._expr(rng, terms, hi, ops, parens=d >= 3)
            if expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
                expr = expr[1:-1]
            value = _evaluate(expr)
            if d <= 2 and value < 0:
                continue  # easy levels stay non-negative
            if abs(value) <= 10 ** (d + 2):
                return f"What is {expr}?", value, f"{expr} = {value}"
        return f"What is {expr}?", value, f"{expr} = {value}"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _evaluate(expr: str) -> int:
    """Exact value of an expression made only of ints, + - * and parentheses."""
    tokens = expr.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def atom() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = total()
            pos += 1  # ")"
            return value
        return int(tok)

    def product() -> int:
        nonlocal pos
        value = atom()
        while pos < len(tokens) and tokens[pos] == "*":
            pos += 1
            value *= atom()
        return value

    def total() -> int:
        nonlocal pos
        value = product()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            value = value + product() if op == "+" else value - product()
        return value

    return total()


class FractionsGenerator(Generator):
    """Fraction arithmetic; the answer is a reduced fraction (``\\frac{p}{q}``) or an
    integer. Difficulty 1: same denominator; 2: different; 3: x and /; 4: three
    fractions; 5: larger denominators and negatives."""

    name = "fractions"
    description = "fraction arithmetic with reduced-fraction answers"

    def _fraction(self, rng: random.Random, max_den: int, negative: bool = False) -> Fraction:
        den = rng.randint(2, max_den)
        num = rng.randint(1, den * 2 - 1)
        value = Fraction(num, den)
        return -value if negative and rng.random() < 0.3 else value

    def draw(self, rng: random.Random) -> tuple[str, Fraction, str]:
        d = self.difficulty
        if d == 1:
            den = rng.randint(2, 9)
            nums = sorted((rng.randint(1, den - 1), rng.randint(1, den - 1)), reverse=True)
            op = rng.choice("+-")
            value = Fraction(nums[0], den) + (1 if op == "+" else -1) * Fraction(nums[1], den)
            text = f"{nums[0]}/{den} {op} {nums[1]}/{den}"
            return (
                f"What is {text}? Give a reduced fraction.",
                value,
                f"{text} = {plain_fraction(value)}",
            )
        count = 3 if d >= 4 else 2
        max_den = {2: 9, 3: 9, 4: 12, 5: 20}[d]
        parts = [self._fraction(rng, max_den, negative=d == 5) for _ in range(count)]
        ops = [rng.choice("+-" if d == 2 else "+-*/") for _ in range(count - 1)]
        wrap = any(op in "*/" for op in ops) or d == 5
        shown = [f"({plain_fraction(p)})" if wrap else plain_fraction(p) for p in parts]
        value, text = parts[0], shown[0]
        for i, (op, part) in enumerate(zip(ops, parts[1:], strict=True)):
            value = {"+": value + part, "-": value - part, "*": value * part, "/": value / part}[op]
            if i > 0:
                text = f"({text})"  # evaluate left to right, explicitly
            text += f" {op} {shown[i + 1]}"
        return (
            f"What is {text}? Give a reduced fraction.",
            value,
            f"{text} = {plain_fraction(value)}",
        )


class LinearGenerator(Generator):
    """Solve a linear equation for x. Difficulty 1: ``x + 3 = 7``; 2: ``4x = 12``;
    3: ``3x + 4 = 19``; 4: x on both sides; 5: fractional solutions."""

    name = "linear"
    description = "solve a linear equation ax + b = c for x"

    def draw(self, rng: random.Random) -> tuple[str, Fraction, str]:
        d = self.difficulty
        if d == 1:
            x, b = rng.randint(0, 9), rng.randint(1, 9)
            return f"Solve x + {b} = {x + b}.", Fraction(x), f"x = {x + b} - {b} = {x}"
        if d == 2:
            x, a = rng.randint(0, 12), rng.randint(2, 9)
            return f"Solve {a}x = {a * x}.", Fraction(x), f"x = {a * x} / {a} = {x}"
        if d == 3:
            x, a, b = (
                rng.randint(-10, 10),
                rng.randint(2, 9),
                rng.choice([-1, 1]) * rng.randint(1, 20),
            )
            lhs = f"{a}x {_signed(b)}"
            return (
                f"Solve {lhs} = {a * x + b}.",
                Fraction(x),
                f"x = ({a * x + b} - {b}) / {a} = {x}",
            )
        # d >= 4: a x + b = c x + e, a != c
        a = rng.randint(2, 12)
        c = rng.choice([k for k in range(-9, 10) if k not in (0, a)])
        b = rng.choice([-1, 1]) * rng.randint(1, 30 if d == 4 else 50)
        if d == 4:
            x = Fraction(rng.randint(-12, 12))
        else:
            x = Fraction(rng.randint(-30, 30), rng.randint(2, 9))
        e = (a - c) * x + b
        if e.denominator != 1:  # keep coefficients integral: scale the equation
            scale = e.denominator
            a, b, c, e = a * scale, b * scale, c * scale, e * scale
        e_int = int(e)
        c_text = "x" if c == 1 else "-x" if c == -1 else f"{c}x"
        rhs = f"{c_text} {_signed(e_int)}" if e_int else c_text
        prompt = f"Solve for x: {a}x {_signed(b)} = {rhs}."
        return prompt, x, f"({a} - {c})x = {e_int} - {b}, so x = {plain_fraction(x)}"


def _signed(value: int) -> str:
    return f"+ {value}" if value >= 0 else f"- {-value}"


# Imported last: word problems build on the base class above.
from .word import WordGenerator  # noqa: E402

GENERATORS: dict[str, type[Generator]] = {
    cls.name: cls
    for cls in (
        ArithmeticGenerator,
        ChainGenerator,
        FractionsGenerator,
        LinearGenerator,
        WordGenerator,
    )
}
