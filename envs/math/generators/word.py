"""``word``: templated word problems with exact integer answers.

Difficulty 1-2 use one-step templates with small numbers; 3 adds two-step
templates; 4-5 use only multi-step templates with larger numbers. Names and
items are surface: the canonical form is the template and its numbers (sorted
where the arithmetic commutes), so a problem retold with other names or with
its factors swapped stays in the same split.

Example:
    >>> task = WordGenerator(difficulty=1).get(3)
    >>> int(task.answer) >= 0
    True
    >>> WordGenerator(templates=("gets_more",)).get(0).meta["canonical"].startswith("word:gets_more:")
    True
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .base import Generator, GeneratorConfig, Problem, check_int, register_generator

_NAMES = ("Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin", "Kai", "Lia")
_ITEMS = ("apples", "pens", "books", "cards", "eggs", "shells", "stamps", "marbles")

Template = Callable[[random.Random, int], Problem]


def _canonical(template: str, *numbers: int) -> str:
    return f"word:{template}:{','.join(map(str, numbers))}"


def _gives_away(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    total = rng.randint(2, scale)
    given = rng.randint(1, total)
    left = total - given
    return Problem(
        f"{name} has {total} {item} and gives away {given}. How many are left?",
        left,
        f"{total} - {given} = {left}",
        _canonical("gives_away", total, given),
    )


def _gets_more(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b = rng.randint(1, scale), rng.randint(1, scale)
    return Problem(
        f"{name} has {a} {item} and finds {b} more. How many now?",
        a + b,
        f"{a} + {b} = {a + b}",
        _canonical("gets_more", *sorted((a, b))),
    )


def _buys(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    count, price = rng.randint(2, min(scale, 12)), rng.randint(1, scale)
    return Problem(
        f"{item.capitalize()} cost ${price} each. {name} buys {count}. How many dollars is that?",
        count * price,
        f"{count} * {price} = {count * price}",
        _canonical("buys", *sorted((count, price))),
    )


def _shares(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    people, each = rng.randint(2, min(scale, 12)), rng.randint(1, scale)
    total = people * each
    return Problem(
        f"{name} shares {total} {item} equally among {people} friends. How many does each get?",
        each,
        f"{total} / {people} = {each}",
        _canonical("shares", total, people),
    )


def _shop_change(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    count, price = rng.randint(2, 12), rng.randint(1, scale)
    cost = count * price
    paid = cost + rng.randint(0, scale)
    paid = ((paid + 9) // 10) * 10  # pays with a round amount
    change = paid - cost
    return Problem(
        f"{name} buys {count} {item} at ${price} each and pays with ${paid}. "
        f"How much change, in dollars, does {name} get?",
        change,
        f"{count} * {price} = {cost}; {paid} - {cost} = {change}",
        _canonical("shop_change", *sorted((count, price)), paid),
    )


def _speed(rng: random.Random, scale: int) -> Problem:
    name = rng.choice(_NAMES)
    speed, hours = rng.randint(2, scale), rng.randint(2, 9)
    extra = rng.randint(1, scale)
    distance = speed * hours + extra
    return Problem(
        f"{name} drives {hours} hours at {speed} km per hour, then {extra} km more. "
        "How many km in total?",
        distance,
        f"{speed} * {hours} + {extra} = {distance}",
        _canonical("speed", *sorted((speed, hours)), extra),
    )


def _ages(rng: random.Random, scale: int) -> Problem:
    a, b = rng.sample(_NAMES, 2)
    age = rng.randint(2, min(scale, 60))
    gap = rng.randint(1, 30)
    years = rng.randint(2, 20)
    total = age + (age + gap) + 2 * years
    return Problem(
        f"{a} is {age} years old and {b} is {gap} years older. "
        f"In {years} years, what will their ages add up to?",
        total,
        f"{age} + {years} + {age + gap} + {years} = {total}",
        _canonical("ages", age, gap, years),
    )


def _boxes(rng: random.Random, scale: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    boxes, per_box = rng.randint(2, 12), rng.randint(2, scale)
    broken = rng.randint(0, boxes * per_box)
    packs = rng.randint(2, 6)
    left = boxes * per_box - broken
    left -= left % packs
    broken = boxes * per_box - left
    return Problem(
        f"{name} has {boxes} boxes of {per_box} {item}. {broken} are lost, and the rest "
        f"are packed into {packs} equal bags. How many {item} per bag?",
        left // packs,
        f"{boxes} * {per_box} - {broken} = {left}; {left} / {packs} = {left // packs}",
        _canonical("boxes", *sorted((boxes, per_box)), broken, packs),
    )


TEMPLATES: dict[str, Template] = {
    "gives_away": _gives_away,
    "gets_more": _gets_more,
    "buys": _buys,
    "shares": _shares,
    "shop_change": _shop_change,
    "speed": _speed,
    "ages": _ages,
    "boxes": _boxes,
}
ONE_STEP = ("gives_away", "gets_more", "buys", "shares")
MULTI_STEP = ("shop_change", "speed", "ages", "boxes")


@dataclass(frozen=True)
class WordConfig(GeneratorConfig):
    """Settings of :class:`WordGenerator`."""

    templates: tuple[str, ...] = ONE_STEP
    """The templates drawn from (names from ``TEMPLATES``)."""
    max_number: int = 9
    """Scale of the numbers in the story."""

    def __post_init__(self) -> None:
        if isinstance(self.templates, list):  # from JSON / a tasks= dict
            object.__setattr__(self, "templates", tuple(self.templates))

    def validate(self) -> None:
        """Raise ``ValueError`` on an unknown template or an out-of-range number."""
        if (
            not isinstance(self.templates, tuple)
            or not self.templates
            or any(t not in TEMPLATES for t in self.templates)
        ):
            raise ValueError(
                f"WordConfig.templates must be a non-empty list of {sorted(TEMPLATES)}, "
                f"got {self.templates!r}"
            )
        check_int(self, "max_number", 2, 10**6)


DIFFICULTY: dict[int, WordConfig] = {
    1: WordConfig(templates=ONE_STEP, max_number=9),
    2: WordConfig(templates=ONE_STEP, max_number=20),
    3: WordConfig(templates=ONE_STEP + MULTI_STEP, max_number=50),
    4: WordConfig(templates=MULTI_STEP, max_number=100),
    5: WordConfig(templates=MULTI_STEP, max_number=500),
}


class WordGenerator(Generator):
    """Short word problems from templates (see the module docstring)."""

    name = "word"
    description = "templated word problems with integer answers"
    config_class = WordConfig
    difficulties = DIFFICULTY
    config: WordConfig

    def draw(self, rng: random.Random) -> Problem:
        """One random problem of the config."""
        template = rng.choice(tuple(self.config.templates))
        return TEMPLATES[template](rng, self.config.max_number)


register_generator(WordGenerator)
