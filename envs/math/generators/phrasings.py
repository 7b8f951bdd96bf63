"""Other wordings of one arithmetic operation: ``Add 3 and 4.``, word problems, ``3 + 4 = ?``.

A model trained on ``What is 3 + 4?`` may learn the wording rather than the
sum. :data:`UNSEEN` holds twelve other wordings of ``+`` and of ``-`` (four of
``*`` and of ``/``), word problems among them; the arithmetic generator draws
them with ``phrasing="unseen"`` (or one by name) so that an evaluation can ask
the same problems in words no training run used. A wording never changes a
problem's answer or its canonical form, so a problem stays in its split
whatever it is called. Names and items of word problems are fixed by the
problem and the wording (not drawn), so each wording of a problem is one prompt.

Example:
    >>> phrase(3, "+", 4, "add")
    'Add 3 and 4.'
    >>> phrase(9, "-", 4, "word_gives")
    'Eli has 9 stamps and gives away 4. How many stamps does Eli have left?'
    >>> len(UNSEEN["+"]), len(UNSEEN["-"])
    (12, 12)
"""

from __future__ import annotations

from flexmg.tasks import stable_hash

DEFAULT_PHRASING = "what_is"
"""``What is 3 + 4?``: the wording of the generators' own prompts (and of training)."""
ANY_UNSEEN = "unseen"
"""A ``phrasing`` value: one of :data:`UNSEEN` per problem, drawn with the problem."""

_NAMES = ("Ana", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin", "Kai", "Lia")
_ITEMS = ("apples", "pens", "books", "cards", "eggs", "shells", "stamps", "marbles")

TEMPLATES: dict[str, dict[str, str]] = {
    "+": {
        "add": "Add {a} and {b}.",
        "plus": "What is {a} plus {b}?",
        "sum_of": "Find the sum of {a} and {b}.",
        "compute": "Compute {a} + {b}.",
        "equals": "{a} + {b} = ?",
        "calculate": "Calculate {a}+{b}.",
        "add_to": "What do you get if you add {b} to {a}?",
        "total": "What is the total of {a} and {b}?",
        "word_more": "{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?",
        "word_box": "A box holds {a} {item}. Someone puts in {b} more. How many {item} are in the box now?",
        "word_table": "There are {a} {item} on a table and {b} on a shelf. How many {item} are there in all?",
        "increase": "Increase {a} by {b}. What number do you get?",
    },
    "-": {
        "subtract": "Subtract {b} from {a}.",
        "minus": "What is {a} minus {b}?",
        "difference": "Find {a} minus {b}.",
        "compute": "Compute {a} - {b}.",
        "equals": "{a} - {b} = ?",
        "calculate": "Calculate {a}-{b}.",
        "take_away": "What do you get if you take {b} away from {a}?",
        "less": "What number is {b} less than {a}?",
        "word_gives": "{name} has {a} {item} and gives away {b}. How many {item} does {name} have left?",
        "word_box": "A box holds {a} {item}. Someone takes out {b}. How many {item} are in the box now?",
        "word_table": "There were {a} {item} on a table. {b} were taken away. How many {item} are still on the table?",
        "decrease": "Decrease {a} by {b}. What number do you get?",
    },
    "*": {
        "times": "What is {a} times {b}?",
        "multiply": "Multiply {a} by {b}.",
        "product": "Find the product of {a} and {b}.",
        "equals": "{a} * {b} = ?",
    },
    "/": {
        "divided": "What is {a} divided by {b}?",
        "divide": "Divide {a} by {b}.",
        "quotient": "Find the quotient of {a} and {b}.",
        "equals": "{a} / {b} = ?",
    },
}  # fmt: skip
"""Operation -> wording name -> template (``{a}``, ``{b}``, and ``{name}``/``{item}`` in words)."""

UNSEEN: dict[str, tuple[str, ...]] = {op: tuple(forms) for op, forms in TEMPLATES.items()}
"""Operation -> the names of its wordings other than :data:`DEFAULT_PHRASING`."""


def is_word_problem(template: str, op: str) -> bool:
    """Whether a wording tells a story with a person and items (needs non-negative numbers).

    >>> is_word_problem("word_box", "+"), is_word_problem("add", "+")
    (True, False)
    """
    return "{item}" in TEMPLATES[op][template]


def phrasings(op: str, negatives: bool) -> tuple[str, ...]:
    """The wordings of :data:`UNSEEN` that fit ``op`` (no stories when numbers can be negative).

    >>> len(phrasings("+", negatives=True))
    9
    """
    return tuple(t for t in UNSEEN[op] if not (negatives and is_word_problem(t, op)))


def phrase(a: int, op: str, b: int, template: str) -> str:
    """The problem ``a op b`` in the wording named ``template`` (``ValueError`` if unknown).

    >>> phrase(-3, "*", 4, "times")
    'What is (-3) times 4?'
    """
    forms = TEMPLATES.get(op, {})
    if template not in forms:
        known = ", ".join(sorted(forms)) or "none"
        raise ValueError(f"no wording {template!r} for {op!r}; known: {known}")
    pick = stable_hash("phrasing", a, op, b, template)
    return forms[template].format(
        a=f"({a})" if a < 0 else a,
        b=b,
        name=_NAMES[pick % len(_NAMES)],
        item=_ITEMS[(pick // len(_NAMES)) % len(_ITEMS)],
    )


def known_phrasings() -> tuple[str, ...]:
    """Every value the arithmetic generator's ``phrasing`` accepts.

    >>> known_phrasings()[:2]
    ('what_is', 'unseen')
    """
    names = {t for forms in TEMPLATES.values() for t in forms}
    return (DEFAULT_PHRASING, ANY_UNSEEN, *sorted(names))
