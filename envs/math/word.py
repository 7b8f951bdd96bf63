"""Templated word problems with exact integer answers.

Difficulty 1-2 use one-step templates with small numbers; 3 adds two-step
templates; 4-5 use only multi-step templates with larger numbers.

Example:
    >>> from flexmg.envs.math.word import WordGenerator
    >>> task = WordGenerator(difficulty=1).get(3)
    >>> int(task.answer) >= 0
    True
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .generators import Generator

_NAMES = ("Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin", "Kai", "Lia")
_ITEMS = ("apples", "pens", "books", "cards", "eggs", "shells", "stamps", "marbles")

Problem = tuple[str, int, str]


def _scale(d: int) -> int:
    return {1: 9, 2: 20, 3: 50, 4: 100, 5: 500}[d]


def _gives_away(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    total = rng.randint(2, _scale(d))
    given = rng.randint(1, total)
    left = total - given
    return (
        f"{name} has {total} {item} and gives away {given}. How many are left?",
        left,
        f"{total} - {given} = {left}",
    )


def _gets_more(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a, b = rng.randint(1, _scale(d)), rng.randint(1, _scale(d))
    return (
        f"{name} has {a} {item} and finds {b} more. How many now?",
        a + b,
        f"{a} + {b} = {a + b}",
    )


def _buys(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    count, price = rng.randint(2, min(_scale(d), 12)), rng.randint(1, _scale(d))
    return (
        f"{item.capitalize()} cost ${price} each. {name} buys {count}. How many dollars is that?",
        count * price,
        f"{count} * {price} = {count * price}",
    )


def _shares(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    people, each = rng.randint(2, min(_scale(d), 12)), rng.randint(1, _scale(d))
    total = people * each
    return (
        f"{name} shares {total} {item} equally among {people} friends. How many does each get?",
        each,
        f"{total} / {people} = {each}",
    )


def _shop_change(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    count, price = rng.randint(2, 12), rng.randint(1, _scale(d))
    cost = count * price
    paid = cost + rng.randint(0, _scale(d))
    paid = ((paid + 9) // 10) * 10  # pays with a round amount
    change = paid - cost
    return (
        f"{name} buys {count} {item} at ${price} each and pays with ${paid}. "
        f"How much change, in dollars, does {name} get?",
        change,
        f"{count} * {price} = {cost}; {paid} - {cost} = {change}",
    )


def _speed(rng: random.Random, d: int) -> Problem:
    name = rng.choice(_NAMES)
    speed, hours = rng.randint(2, _scale(d)), rng.randint(2, 9)
    extra = rng.randint(1, _scale(d))
    distance = speed * hours + extra
    return (
        f"{name} drives {hours} hours at {speed} km per hour, then {extra} km more. "
        "How many km in total?",
        distance,
        f"{speed} * {hours} + {extra} = {distance}",
    )


def _ages(rng: random.Random, d: int) -> Problem:
    a, b = rng.sample(_NAMES, 2)
    age = rng.randint(2, min(_scale(d), 60))
    gap = rng.randint(1, 30)
    years = rng.randint(2, 20)
    total = age + (age + gap) + 2 * years
    return (
        f"{a} is {age} years old and {b} is {gap} years older. "
        f"In {years} years, what will their ages add up to?",
        total,
        f"{age} + {years} + {age + gap} + {years} = {total}",
    )


def _boxes(rng: random.Random, d: int) -> Problem:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    boxes, per_box = rng.randint(2, 12), rng.randint(2, _scale(d))
    broken = rng.randint(0, boxes * per_box)
    packs = rng.randint(2, 6)
    left = boxes * per_box - broken
    left -= left % packs
    broken = boxes * per_box - left
    return (
        f"{name} has {boxes} boxes of {per_box} {item}. {broken} are lost, and the rest "
        f"are packed into {packs} equal bags. How many {item} per bag?",
        left // packs,
        f"{boxes} * {per_box} - {broken} = {left}; {left} / {packs} = {left // packs}",
    )


_ONE_STEP: tuple[Callable[[random.Random, int], Problem], ...] = (
    _gives_away,
    _gets_more,
    _buys,
    _shares,
)
_MULTI_STEP: tuple[Callable[[random.Random, int], Problem], ...] = (
    _shop_change,
    _speed,
    _ages,
    _boxes,
)


class WordGenerator(Generator):
    """Short word problems from templates (names, items, prices, speeds, ages)."""

    name = "word"
    description = "templated word problems with integer answers"

    def draw(self, rng: random.Random) -> Problem:
        d = self.difficulty
        pool = _ONE_STEP if d <= 2 else _ONE_STEP + _MULTI_STEP if d == 3 else _MULTI_STEP
        return rng.choice(pool)(rng, d)
