"""What every math task generator shares: problems, configs, the split, the registry.

A generator module (Reasoning Gym style) holds a config dataclass whose
``validate()`` raises ``ValueError``, a ``DIFFICULTY`` table (1-5 -> config),
a :class:`Generator` subclass whose ``draw`` makes one :class:`Problem`, and
``register_generator`` at the bottom.

Every generator is a task source (``name``, ``get(index)``): the task at
``index`` depends only on ``(generator, config, seed, split, index)``. A
problem's split is decided by a stable hash of its *canonical form*, so
commuted or reordered twins (``3 + 4``, ``4 + 3``) always land in the same
split whatever config drew them, and ``get`` redraws deterministically until
the problem lands in the requested one.

Example:
    >>> from flexmg.envs.math.generators import ArithmeticGenerator
    >>> src = ArithmeticGenerator(max_operand=50, ops="+-")
    >>> src.config.max_operand, src.get(0) == src.get(0)
    (50, True)
"""

from __future__ import annotations

import dataclasses
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from flexmg.tasks import (
    EVAL_FRACTION,
    TEST_FRACTION,
    Split,
    Task,
    check_split,
    in_split,
    register_task_source,
    stable_hash,
)

MAX_REDRAWS = 10_000
DIFFICULTIES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Problem:
    """One drawn problem.

    Attributes:
        prompt: the question shown to the agents.
        answer: the exact answer (an int, a Fraction, or LaTeX text).
        solution: a short worked solution (kept in ``task.meta``, never shown).
        canonical: the same string for every equivalent problem; decides the split.
        phrasing: the wording of the prompt (``task.meta["phrasing"]``), see
            :mod:`flexmg.envs.math.generators.phrasings`.
    """

    prompt: str
    answer: Fraction | int | str
    solution: str
    canonical: str
    phrasing: str = "what_is"


@dataclass(frozen=True)
class GeneratorConfig:
    """Base of the generator configs: frozen dataclasses checked by ``validate()``."""

    def validate(self) -> None:
        """Raise ``ValueError`` naming the field when a value is out of range."""


def check_int(config: object, field: str, low: int, high: int | None = None) -> None:
    """Raise ``ValueError`` unless ``config.field`` is an int in ``[low, high]``.

    >>> check_int(Fraction(1), "numerator", 0, 5)
    >>> check_int(Fraction(9), "numerator", 0, 5)
    Traceback (most recent call last):
    ...
    ValueError: Fraction.numerator must be an int from 0 to 5, got 9
    """
    value = getattr(config, field)
    ok = isinstance(value, int) and not isinstance(value, bool)
    if ok and value >= low and (high is None or value <= high):
        return
    span = f"from {low} to {high}" if high is not None else f">= {low}"
    raise ValueError(f"{type(config).__name__}.{field} must be an int {span}, got {value!r}")


def check_ops(config: object, field: str, allowed: str) -> None:
    """Raise ``ValueError`` unless ``config.field`` is a non-empty string of ``allowed`` ops."""
    value = getattr(config, field)
    if not isinstance(value, str) or not value or set(value) - set(allowed):
        raise ValueError(
            f"{type(config).__name__}.{field} must be a non-empty string of operators "
            f"from {allowed!r} (e.g. {allowed[:2]!r}), got {value!r}"
        )


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
    """How a fraction is written in a prompt: ``3/4``, ``-1/2``, ``5``.

    >>> plain_fraction(Fraction(-2, 4))
    '-1/2'
    """
    return (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )


class Generator(ABC):
    """Base class: subclasses set the class attributes and implement :meth:`draw`.

    Args:
        difficulty: 1 (easiest) to 5; picks the base config from ``DIFFICULTY``.
        seed: selects an independent stream of tasks.
        split: ``"train"``, ``"eval"``, ``"test"`` or ``"all"``.
        eval_fraction: share of canonical forms reserved for evaluation.
        test_fraction: share of canonical forms reserved for final reports.
        config: a full config instead of the difficulty's.
        **fields: config fields that override the base config
            (``max_operand=50, ops="+-"``).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    config_class: ClassVar[type[GeneratorConfig]] = GeneratorConfig
    difficulties: ClassVar[Mapping[int, GeneratorConfig]] = {}

    def __init__(
        self,
        difficulty: int = 1,
        seed: int = 0,
        split: Split = "train",
        eval_fraction: float = EVAL_FRACTION,
        config: GeneratorConfig | None = None,
        test_fraction: float = TEST_FRACTION,
        **fields: Any,
    ) -> None:
        if isinstance(difficulty, bool) or difficulty not in DIFFICULTIES:
            raise ValueError(
                f"{self.name}: difficulty must be an int from 1 to 5, got {difficulty!r}"
            )
        check_split(split, (eval_fraction, test_fraction))
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        base = self.difficulties[difficulty] if config is None else config
        if not isinstance(base, self.config_class):
            raise TypeError(
                f"{self.name}: config must be a {self.config_class.__name__}, "
                f"got {type(base).__name__}"
            )
        known = [f.name for f in dataclasses.fields(self.config_class)]
        unknown = sorted(set(fields) - set(known))
        if unknown:
            raise ValueError(
                f"{self.name}: unknown option(s) {unknown}; the generator's options are "
                f"difficulty, seed, eval_fraction, test_fraction and the config fields {known}"
            )
        self.config = dataclasses.replace(base, **fields)
        self.config.validate()
        self.difficulty = difficulty
        self.seed = seed
        self.split = split
        self.eval_fraction = float(eval_fraction)
        self.test_fraction = float(test_fraction)
        custom = self.config != self.difficulties[difficulty]
        self._tag = f"d{difficulty}" + (
            f"-c{stable_hash(self.config) % 16**8:08x}" if custom else ""
        )

    @abstractmethod
    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""

    def problems(self) -> Iterator[Problem]:
        """Every problem the config can draw (only generators with a small, finite space).

        Raises:
            TypeError: the generator's space is not enumerable.
        """
        raise TypeError(
            f"generator {self.name!r} cannot enumerate its problems; sample them with get(i)"
        )

    def in_split(self, problem: Problem) -> bool:
        """Whether ``problem`` belongs to this source's split."""
        return in_split(problem.canonical, self.split, self.eval_fraction, self.test_fraction)

    def distinct_prompts(self) -> list[str]:
        """The sorted distinct prompts of this split (generators with :meth:`problems`).

        >>> from flexmg.envs.math.generators import ArithmeticGenerator
        >>> len(ArithmeticGenerator(max_operand=3, split="all").distinct_prompts())
        26
        """
        return sorted({p.prompt for p in self.problems() if self.in_split(p)})

    def get(self, index: int) -> Task:
        """The task at ``index`` (any int; the same on every call and machine)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"task index must be an int, got {index!r}")
        for attempt in range(MAX_REDRAWS):
            rng = random.Random(
                stable_hash(self.name, self._tag, self.seed, self.split, index, attempt)
            )
            problem = self.draw(rng)
            if self.in_split(problem):
                return self._task(problem, index)
        raise RuntimeError(
            f"{self.name}: no task landed in split {self.split!r} after {MAX_REDRAWS} draws; "
            "the config's problem space is too small for this split"
        )

    def _task(self, problem: Problem, index: int) -> Task:
        answer = problem.answer
        meta: dict[str, Any] = {
            "source": f"generator:{self.name}",
            "generator": self.name,
            "difficulty": self.difficulty,
            "config": dataclasses.asdict(self.config),
            "seed": self.seed,
            "index": index,
            "split": self.split,
            "solution": problem.solution,
            "canonical": problem.canonical,
            "phrasing": problem.phrasing,
        }
        return Task(
            id=f"{self.name}/{self._tag}/s{self.seed}/{self.split}/{index}",
            prompt=problem.prompt,
            answer=answer if isinstance(answer, str) else format_number(answer),
            meta=meta,
        )

    def __len__(self) -> int:
        raise TypeError(f"generator {self.name!r} is infinite; it has no len()")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r}, seed={self.seed}, split={self.split!r})"


def register_generator(cls: type[Generator]) -> type[Generator]:
    """Register a generator class as a math task source (checks its table first).

    It joins the one task-source registry (:func:`flexmg.tasks.register_task_source`,
    kind ``"math"``) under its ``name``.

    Raises:
        ValueError: no name, a difficulty table that misses a level, or a name taken.
    """
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a class attribute name")
    missing = [d for d in DIFFICULTIES if d not in cls.difficulties]
    if missing:
        raise ValueError(f"{cls.__name__}.difficulties misses levels {missing}")
    for config in cls.difficulties.values():
        config.validate()
    register_task_source(cls.name, cls, kind="math")
    return cls
