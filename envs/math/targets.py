"""What must equal what: the comparisons that decide an answer once it is read.

After :func:`flexmg.envs.math.reading.check` has found that an answer commits,
:func:`targets` lists the (answer, gold) LaTeX pairs that must *all* be equal
for it to be correct:

* one value against the gold's value (the gold's name and unit taken off);
* every side of a chain: ``x = 3 + 4 = 7`` is right for 7, ``x = 8 = 7`` is not;
* a relation against the gold as written (``5 \\ge x`` for ``x \\le 5``, or an
  inequality for an interval gold);
* a gold the reader could not place (prose, a decimal comma) as written;
* a list against the gold's list, as one comparison (math-verify and the
  in-process evaluator compare lists as sets); lists with an ellipsis as
  tuples of their other items, in order.

Example:
    >>> from flexmg.envs.math.reading import read
    >>> from flexmg.envs.math.settings import GradingSettings
    >>> s = GradingSettings()
    >>> gold = read("x = 7", s)
    >>> [t.answer for t in targets(read("x = 3 + 4 = 7", s, gold), gold)]
    ['3 + 4', '7']
"""

from __future__ import annotations

from typing import NamedTuple

from .reading import Reading


class Target(NamedTuple):
    """One comparison: the answer's LaTeX, the gold's, and whether it is a side of a chain."""

    answer: str
    gold: str
    chain: bool = False


def targets(answer: Reading, gold: Reading) -> list[Target]:
    """The comparisons that must all hold (see the module docstring)."""
    if gold.raw is not None:
        return [Target(answer.render(), gold.raw)]
    if gold.has_ellipsis:
        return [Target(_tuple_without_ellipsis(answer), _tuple_without_ellipsis(gold))]
    if len(gold.items) == 1 and len(answer.items) == 1:
        mine, theirs = answer.items[0], gold.items[0]
        if theirs.relation is not None:
            return [Target(mine.render(), theirs.relation)]
        gold_value = theirs.values[-1] if theirs.values else ""
        if mine.relation is not None:
            return [Target(mine.relation, gold_value)]
        chain = len(mine.values) > 1
        return [Target(value, gold_value, chain) for value in mine.values]
    labels = gold.labelled and answer.labelled
    return [Target(answer.render(labels), gold.render(labels))]


def _tuple_without_ellipsis(reading: Reading) -> str:
    items = [item.render(labels=False) for item in reading.items if not item.ellipsis]
    return "(" + ", ".join(items) + ")"
