"""Hold an answer's reading against the gold's: does it commit to what the gold states?

:func:`flexmg.envs.math.reading.read` refuses what no answer may contain; this
module refuses what does not fit *this* gold: a list or set braces for a
single value, one value for a list, a list without the gold's ellipsis, a
relation or another name where the gold wants a value, marks (primes,
subscripts, accents) that differ, variables the gold does not have.

Example:
    >>> from flexmg.envs.math.reading import read
    >>> from flexmg.envs.math.settings import GradingSettings
    >>> s = GradingSettings()
    >>> gold = read("7000", s)
    >>> check(read("x + 1 = 7000", s, gold), gold, s).reason
    'relation'
    >>> check(read(r"\\{7000\\}", s, gold), gold, s).reason
    'shape'
"""

from __future__ import annotations

import re

from .reading import Item, Reading, Refusal
from .scan import is_wrapped, split_top
from .settings import GradingSettings
from .symbols import variables


def check(answer: Reading, gold: Reading, settings: GradingSettings) -> Refusal | None:
    """Hold an answer's reading against the gold's: a refusal, or None when it commits."""
    if gold.text is not None or answer.text is not None:
        return None  # text is compared as text
    if gold.raw is not None:
        return None  # a gold kept as written: math-verify compares
    if gold.count <= 1 and not gold.has_ellipsis:
        refusal = _check_single(answer, gold)
    else:
        refusal = _check_list(answer, gold)
    if refusal is not None:
        return refusal
    if answer.marks != gold.marks:
        extra = sorted(answer.marks - gold.marks)
        missing = sorted(gold.marks - answer.marks)
        return Refusal(
            "marks",
            f"primes, subscripts and accents differ from the gold's (answer adds {extra}, "
            f"lacks {missing})",
        )
    free = answer_variables(answer) - gold.variables
    if settings.strict_variables and free:
        return Refusal(
            "free_variable", f"the gold has no {sorted(free)}: the answer is not a value"
        )
    if not settings.strict_variables and len(answer_variables(answer)) > len(gold.variables):
        return Refusal("free_variable", "the answer has more variables than the gold")
    return None


def answer_variables(reading: Reading) -> frozenset[str]:
    """Variables of the values (relations and names excluded: they name, not state)."""
    return frozenset().union(*(variables(v) for i in reading.items for v in i.values))


def _gold_is_set_like(gold: Reading) -> bool:
    item = gold.items[0] if gold.items else Item()
    value = item.relation or (item.values[-1] if item.values else "")
    return bool(item.relation) or bool(
        re.search(r"\\cup|\\cap|\\mathbb|\\emptyset|\\varnothing|\\infty", value)
        or re.fullmatch(r"\s*[(\[].*,.*[)\]]\s*", value)
    )


def _check_single(answer: Reading, gold: Reading) -> Refusal | None:
    if any(item.plus_minus for item in answer.items) and answer.count == 2:
        return Refusal("hedged", "\\pm states two values for a single-valued gold")
    gold_value = gold.items[0].values[-1] if gold.items and gold.items[0].values else ""
    if answer.count > 1 or answer.has_ellipsis:
        if answer.count != _tuple_length(gold_value) or answer.has_ellipsis:
            return Refusal("shape", f"{answer.count} values for a single-valued gold")
    if gold_value and not _gold_is_set_like(gold) and "," not in gold_value:
        for item in answer.items:
            if any(_tuple_length(v) > 1 for v in item.values):
                return Refusal("shape", "a tuple, interval or list for a single value")
            if any(_SET_LIKE.search(v) or _ONE_IN_BRACKETS.fullmatch(v) for v in item.values):
                return Refusal("shape", "a set, a union or a bracketed list for a single value")
    if answer.set_braces and not gold.set_braces:
        return Refusal("shape", "set braces around a single value")
    if not answer.items or not gold.items:
        return None
    mine, theirs = answer.items[0], gold.items[0]
    if mine.relation is not None and not _gold_is_set_like(gold):
        return Refusal(
            "relation",
            f"{mine.relation!r} is a relation without a name on its left, or an inequality: "
            "it does not state the value",
        )
    if mine.label and theirs.label and _label_key(mine.label) != _label_key(theirs.label):
        return Refusal("relation", f"the answer names {mine.label!r}, the gold {theirs.label!r}")
    return None


_SET_LIKE = re.compile(r"\\\{|\\(?:cup|cap|setminus|mathbb|emptyset|varnothing)(?![a-zA-Z])")
_ONE_IN_BRACKETS = re.compile(r"\s*\[[^,\[\]]*\]\s*")


def _tuple_length(value: str) -> int:
    """The number of elements of a bracketed tuple or interval ``(a, b)``, else 0."""
    stripped = value.strip()
    if len(stripped) < 2 or stripped[0] not in "([" or stripped[-1] not in ")]":
        return 0
    if not (is_wrapped(stripped, stripped[0], stripped[-1])):
        return 0
    return len(split_top(stripped[1:-1], ","))


def _check_list(answer: Reading, gold: Reading) -> Refusal | None:
    if gold.has_ellipsis or answer.has_ellipsis:
        mine = [i.ellipsis for i in answer.items]
        theirs = [i.ellipsis for i in gold.items]
        if mine != theirs:
            return Refusal(
                "shape", "the list does not have the gold's items and ellipsis in the gold's places"
            )
        return None
    if answer.count == 1 and len(answer.items) == 1:
        item = answer.items[0]
        value = item.relation or (item.values[-1] if item.values else "")
        if not re.search(r"[(\[]|\\begin|\\\{|\\cup", value):
            return Refusal("shape", f"one value for a gold of {gold.count} values")
    return None


def _label_key(label: str) -> str:
    return re.sub(r"[\s{}]", "", label)
