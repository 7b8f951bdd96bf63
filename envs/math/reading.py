"""Read what a boxed answer commits to, and refuse an answer that does not commit.

The grader is the reward of every math env, so an answer earns credit only if
it states one value (or the gold's list of values) plainly. :func:`read`
turns a normalised box into a :class:`Reading`, or a :class:`Refusal` naming
the rule it breaks; :func:`flexmg.envs.math.commitment.check` then holds the reading
against the gold's.

What a box may hold, besides the value:

* a **name** on the left of ``=`` (``x = 7``, ``f(x) = x^2``, ``a_n = 2^n``) or
  ``\\in`` (``x \\in [2, 5]``); a chain ``x = 3 + 4 = 7`` only if every side
  equals the gold. A false or unnamed equation (``8 = 7``, ``x + 1 = 7``) and
  an inequality for a single-valued gold are refused (``relation``);
* a **unit** after the value, with the ``units="strip"`` setting (``18 dollars``,
  ``5\\text{ cm}^2``, ``90^\\circ``, a ``\\$`` before it); with ``"keep"`` none
  (``extra_text``);
* a **scale word**, which scales the value: ``7 thousand`` is 7000 and never 7;
  ``1.5 million``, ``7k``; a **percent** sign, read by the ``percent`` setting.

What is refused, whatever the parser would make of it: hedging words and
commands (``maybe``, ``or``, ``not``, ``approximately``, ``\\approx``, ``\\sim``:
``hedged``), struck-out, hidden, recoloured or stacked values (``\\cancel``,
``\\phantom``, ``\\color``, ``\\underset``: ``obscured``), macros and unknown
commands (``unknown_command``), set braces or a list for a single-valued gold
and a single value for a list gold (``shape``), marks that differ from the
gold's (``marks``: ``E'`` for ``E``, ``4343_7`` for ``4343_6``), variables the
gold does not have (``free_variable``: ``7x/x``, ``x - x``) and undefined forms
(``indeterminate``: ``0^0``).

Example:
    >>> from flexmg.envs.math.settings import GradingSettings
    >>> s = GradingSettings()
    >>> gold = read("7000", s)
    >>> read(r"7 \\text{ thousand}", s, gold).items[0].values
    ('7000',)
    >>> read(r"7 \\text{ (or maybe 8)}", s, gold).reason
    'hedged'

What fits only a given gold (a list for a list, the gold's marks and
variables) is checked by :func:`flexmg.envs.math.commitment.check`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from .scan import balanced, depths, is_wrapped, split_top, top_level_matches
from .settings import GradingSettings
from .symbols import is_name, marks, normalize_primes, undefined_form, variables
from .vocabulary import (
    CURRENCY_PREFIXES,
    MATRIX_ENVIRONMENTS,
    OPERATOR_NAMES,
    SHORT_UNITS,
    command_kind,
    scale_of,
    word_kind,
)

MAX_GOLD_WORDS = 8  # a gold with more words than this is prose (a whole solution)
_RAW_GOLD = re.compile(r"(?<!\\)\$|\\\[|\\\(|\n")
_AMBIGUOUS_COMMA = re.compile(r"^\s*-?(?:0,\d+|\d+,(?!\d{3}\s*$)\d+)\s*$|;.*,|,.*;")
ELLIPSIS_WRITINGS = frozenset({"\\ldots", "\\dots", "\\cdots", "...", "\\dotsc", "\\dotsb", "…"})
MAX_UNIT_WORDS = 4
MAX_NESTING = 24  # brackets deeper than this are not an answer (and slow every parser)
_SIGN_RUN = re.compile(r"[-+]\s*[-+]\s*[-+]\s*[-+]")
_BINARY = r"[*/:&|<>,;]|\\(?:times|cdot|div|in|le|leq|ge|geq|ne|neq|cup|cap|mid|to)(?![a-zA-Z])"
_DANGLING = re.compile(
    rf"^\s*(?:{_BINARY}|[!'])|(?:{_BINARY}|[-+=^_]|\\pm|\\mp)\s*$"
    r"|\\(?:ldots|dots|cdots)\s*\d|\d\s*\\(?:ldots|dots|cdots)"
)


@dataclass(frozen=True)
class Refusal:
    """Why an answer is not credited, whatever its value (a reason of :data:`REFUSALS`)."""

    reason: str
    detail: str


REFUSALS = (
    "hedged",
    "obscured",
    "unknown_command",
    "extra_text",
    "relation",
    "shape",
    "marks",
    "free_variable",
    "indeterminate",
)


@dataclass(frozen=True)
class Item:
    """One listed value.

    ``values`` are what it states (a chain ``x = 3 + 4 = 7`` states two),
    ``label`` the name on the left of ``=``/``\\in``; a ``relation`` is kept whole.
    """

    values: tuple[str, ...] = ()
    label: str | None = None
    relation: str | None = None
    ellipsis: bool = False
    plus_minus: bool = False

    def render(self, labels: bool = True) -> str:
        """The item as one LaTeX string (a chain by its last value; ``labels=False``: no name)."""
        if self.ellipsis:
            return "\\ldots"
        if self.relation is not None:
            return self.relation
        value = self.values[-1] if self.values else ""
        return f"{self.label} = {value}" if self.label and labels else value


@dataclass(frozen=True)
class Reading:
    """What an answer (or a gold) states. ``text`` is set for a text answer."""

    items: tuple[Item, ...] = ()
    set_braces: bool = False
    text: str | None = None
    marks: frozenset[str] = frozenset()
    variables: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()
    notes: tuple[str, ...] = field(default=(), compare=False)
    raw: str | None = None  # a gold the reader cannot place, kept as written

    @property
    def count(self) -> int:
        """How many values are stated (a ``\\pm`` states two; an ellipsis none)."""
        return sum(0 if i.ellipsis else (2 if i.plus_minus else 1) for i in self.items)

    @property
    def has_ellipsis(self) -> bool:
        """True when one of the items is ``\\ldots``."""
        return any(i.ellipsis for i in self.items)

    def render(self, labels: bool = True) -> str:
        """All items as one comma-separated LaTeX string."""
        return ", ".join(item.render(labels) for item in self.items)

    @property
    def labelled(self) -> bool:
        """True when an item names what it states (``x = 5``)."""
        return any(item.label for item in self.items)


# ------------------------------------------------------------------ cleaning up
_COSMETIC = re.compile(
    r"\\(?:left|right)\s*\.|\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|Biggl|Biggr|big|Big"
    r"|bigg|Bigg|middle)(?![a-zA-Z])|\\(?:displaystyle|textstyle|scriptstyle|limits|nolimits"
    r"|mathstrut|strut)(?![a-zA-Z])|\\(?:h|v)space\*?\s*\{[^{}]*\}|(?<!\\)\$|(?:\\\\\s*)+$"
)
_SPACING = re.compile(
    r"(\\\\)|\\(?:quad|qquad|enspace|thinspace|negthinspace|medspace|thickspace)(?![a-zA-Z])"
    r"|\\[,;:! ]|~"
)
_COMMAND = re.compile(r"\\([a-zA-Z]+)")
_INNER_ELLIPSIS = re.compile(r"\\(?:ldots|dots|cdots|dotsc|dotsb|dotsm)(?![a-zA-Z])|\.\.\.")
_OPERATOR_NAME = re.compile(r"\\operatorname\s*\{([^{}]*)\}")
_NON_ASCII = re.compile("[^\\x00-\\x7f€£¥]")
# Numbers glued in ways parsers read differently: {7}{8}, 7{8}, 7'8, 7% 8.
_GLUED = re.compile(
    r"\{\s*[-+]?[\d.]+\s*\}\s*\{\s*[-+]?[\d.]|(?<![\\\w])\d+\s*\{\s*[-+]?\d|\d\s*['\"]|\\?%\s*\S"
)
_COMMAND_GROUPS = re.compile(r"\\[a-zA-Z]+\s*(?:\[[^\[\]]*\]\s*)?(?:\{[^{}]*\}\s*)+")
_BEGIN = re.compile(r"\\begin\s*\{\s*([a-zA-Z*]+)\s*\}")
_TEXT_OPEN = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|textsf|texttt|textup|textmd|mbox|hbox|mathrm|emph)"
    r"\s*\{"
)
_WORD = re.compile(r"[A-Za-z]+")
_BARE_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}(?![A-Za-z])")
_MASKED_GROUP = re.compile(
    r"[_^]\s*\{(?:[^{}]|\{[^{}]*\})*\}|[_^]\s*\\?[A-Za-z0-9]"
    r"|\\(?:operatorname|mathbb|mathcal|mathscr|mathfrak|mathbf|boldsymbol|begin|end)\s*\{[^{}]*\}"
    r"|\\[a-zA-Z]+"
)
_PLACEHOLDER = re.compile("\x01(\\d+)\x02")
_PLACEHOLDER_AND_POWER = re.compile("\x01\\d+\x02(?:\\s*\\^\\s*\\{?\\s*[23]\\s*\\}?)?")
_THOUSANDS = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d,])")
_LIST_SEPARATOR = re.compile(r",|;|\\\\")
_RELATION = re.compile(
    r":=|=|<|>|\\(?:in|notin|le|leq|leqslant|ge|geq|geqslant|ne|neq|lt|gt|equiv|subset|subseteq"
    r"|supset|supseteq)(?![a-zA-Z])"
)
_INEQUALITY = re.compile(r"[<>]|\\(?:notin|le|leq|leqslant|ge|geq|geqslant|ne|neq|lt|gt|subset)")
_PLUS_MINUS = re.compile(r"\\(?:pm|mp)(?![a-zA-Z])")
_DEGREES = re.compile(
    r"\^\s*\{?\s*\\circ\s*\}?\s*[CF]?(?![A-Za-z])|\\circ\s*$|\\degree(?![a-zA-Z])"
)
_CURRENCY = re.compile(r"\\\$|[€£¥]")
_PERCENT_SIGN = re.compile(r"\\?%\s*$")
# One token of a unit tail: a run of words, a one- or two-letter unit, a power, a slash.
_TAIL_TOKEN = re.compile(
    "\\s+|\x01\\d+\x02|[A-Za-z]{1,2}(?![A-Za-z])|\\^\\s*\\{?\\s*[23]\\s*\\}?|/"
)
_UNIT_TOKEN = re.compile("\x01(\\d+)\x02|([A-Za-z]{1,2})")
_POWER_TAIL = re.compile(r"\s*\^\s*\{?\s*[23]\s*\}?")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")
_K_SUFFIX = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*([kK])")
_SIDE_BY_SIDE = re.compile(r"(?<![\d._^{])\d+(?:\.\d+)?\s+\d")


def _text_groups(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of each ``\\text{...}``-like group, braces matched."""
    groups: list[tuple[int, int, str]] = []
    position = 0
    while True:
        match = _TEXT_OPEN.search(text, position)
        if match is None:
            return groups
        depth, index = 1, match.end()
        while index < len(text) and depth:
            if text[index] == "\\" and index + 1 < len(text):
                index += 2
                continue
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        if depth:
            return groups  # unclosed: left to the parser (it fails)
        groups.append((match.start(), index, text[match.end() : index - 1]))
        position = index


class _UnplacedGold(Exception):
    """A gold the reader cannot place: it is kept as written (math-verify reads it)."""


class _Words:
    """The words of an answer, taken out of the LaTeX and kept by index."""

    def __init__(self) -> None:
        self.runs: list[list[str]] = []

    def add(self, words: list[str]) -> str:
        self.runs.append(words)
        return f"\x01{len(self.runs) - 1}\x02"

    def of(self, text: str) -> list[list[str]]:
        return [self.runs[int(i)] for i in _PLACEHOLDER.findall(text)]


def _mask_words(text: str, words: _Words, trusted: bool) -> str | Refusal:
    """Replace ``\\text{}`` groups and bare words by placeholders; ``and``/``or`` by commas."""
    out: list[str] = []
    position = 0
    for start, end, content in _text_groups(text):
        out.append(text[position:start])
        position = end
        stripped = content.strip().strip(".")
        letters = _WORD.findall(stripped)
        if not letters or re.fullmatch(r"\(?\s*[A-Za-z]\s*\)?", stripped):
            out.append(" " + stripped + " ")  # \text{7}, \text{(C)}: mathematics
            continue
        if not trusted and re.search(r"[^A-Za-z\s.\-/'^{}²³]", stripped):
            return Refusal("hedged", f"text with numbers or punctuation in the box: {content!r}")
        out.append(_join_runs(letters, words))
    out.append(text[position:])
    masked = "".join(out)
    # Bare words: runs of letters outside commands, sub/superscripts and name arguments.
    protected = [False] * len(masked)
    for match in _MASKED_GROUP.finditer(masked):
        for i in range(match.start(), match.end()):
            protected[i] = True
    pieces: list[str] = []
    position = 0
    for match in _BARE_WORD.finditer(masked):
        word = match.group()
        if protected[match.start()] or not _is_bare_word(word):
            continue
        pieces.append(masked[position : match.start()])
        pieces.append(_join_runs([word], words))
        position = match.end()
    pieces.append(masked[position:])
    return "".join(pieces)


def _is_bare_word(word: str) -> bool:
    kind = word_kind(word)
    if kind == "math":
        return False
    return len(word) >= 3 or word.lower() in SHORT_UNITS or kind in ("join", "scale")


def _join_runs(letters: list[str], words: _Words) -> str:
    """Placeholders for runs of words, with ``and``/``or`` turned into list commas."""
    parts: list[str] = []
    run: list[str] = []
    for word in letters:
        if word_kind(word) == "join":
            if run:
                parts.append(words.add(run))
                run = []
            parts.append(",")
        else:
            run.append(word)
    if run:
        parts.append(words.add(run))
    return " " + " ".join(parts) + " "


# ------------------------------------------------------------------- reading
def read(text: str, settings: GradingSettings, gold: Reading | None = None) -> Reading | Refusal:
    """Read an answer against the gold's reading, or the gold itself (``gold=None``).

    A gold is trusted: it is never refused, and what the reader cannot place
    is kept as written.
    """
    if gold is None:
        return _read_gold(text, settings)
    return _read(text, settings, gold)


@lru_cache(maxsize=8192)
def _read_gold(text: str, settings: GradingSettings) -> Reading:
    if _RAW_GOLD.search(text) or len(_WORD.findall(text)) > MAX_GOLD_WORDS:
        return _raw(text)  # prose or several delimited expressions: math-verify extracts
    if any(
        command_kind(m.group(1)) not in ("math", "spacing", "text") for m in _COMMAND.finditer(text)
    ):
        return _raw(text)  # a command the reader does not know (a typo such as \quadx)
    if _AMBIGUOUS_COMMA.search(text):
        return _raw(text)  # 0,111 or p=5,q=2;p=7,q=2: a decimal comma or grouped lists
    try:
        reading = _read(text, settings, None)
    except _UnplacedGold:
        return _raw(text)
    assert isinstance(reading, Reading)  # a gold is never refused
    return reading


def _raw(text: str) -> Reading:
    return Reading(
        raw=text, marks=marks(text), variables=variables(text), notes=("gold kept as written",)
    )


def _read(text: str, settings: GradingSettings, gold: Reading | None) -> Reading | Refusal:
    trusted = gold is None
    spaced = _SPACING.sub(lambda m: m.group(1) or " ", _COSMETIC.sub("", text))
    source = normalize_primes(spaced).strip()
    if not trusted:
        refusal = _refused_command(source) or _refused_nesting(source)
        if refusal is not None:
            return refusal
    if trusted or gold is None or gold.text is None:
        text_answer = plain_text(source) if trusted else None
    else:
        text_answer = plain_text(source, require_wrapper=False)
    if text_answer is not None:
        return Reading(text=text_answer, notes=("read as a text answer",))
    words = _Words()
    masked = _mask_words(source, words, trusted)
    if isinstance(masked, Refusal):
        return masked
    masked = _join_thousands(re.sub(r",(\s*,)+", ",", masked).strip())
    set_braces = False
    if is_wrapped(masked, "\\{", "\\}"):
        set_braces, masked = True, masked.strip()[2:-2]
    elif is_wrapped(masked, "{", "}"):
        masked = masked.strip()[1:-1]  # a TeX group, not a set: {1,3}
    notes: list[str] = []
    items: list[Item] = []
    for part in split_top(masked, _LIST_SEPARATOR):
        if not part.strip():
            if trusted:
                continue
            return Refusal("shape", "an empty item in a list")
        item = _read_item(part.strip(), words, settings, gold, notes)
        if isinstance(item, Refusal):
            return item
        items.append(item)
    if not items:
        return Refusal("shape", "nothing but text in the box") if not trusted else Reading()
    values = [v for i in items for v in (i.values or (i.relation or "",))]
    found_words = frozenset(w.lower() for run in words.runs for w in run)
    reading = Reading(
        items=tuple(items),
        set_braces=set_braces,
        marks=frozenset().union(*(marks(v) for v in values)),
        variables=frozenset().union(*(variables(v) for v in values)),
        words=found_words,
        notes=tuple(notes),
    )
    if gold is not None:  # an answer
        for value in values:
            bad = undefined_form(value)
            if bad is not None:
                return Refusal("indeterminate", f"{bad} has no value")
            if _SIDE_BY_SIDE.search(value) or _GLUED.search(_COMMAND_GROUPS.sub(" X ", value)):
                return Refusal("shape", f"two numbers side by side are not one value: {value!r}")
            gold_text = " ".join(v for i in gold.items for v in (i.values or (i.relation or "",)))
            gold_text += gold.raw or ""
            if _INNER_ELLIPSIS.search(value) and not _INNER_ELLIPSIS.search(gold_text):
                return Refusal(
                    "shape", f"an ellipsis inside a value the gold writes out: {value!r}"
                )
            if "\\circ" in value and "\\circ" not in gold_text:
                return Refusal("unparseable", "\\circ that is not a degree sign")
    return reading


def _refused_nesting(text: str) -> Refusal | None:
    """Refuse what no well-formed answer has.

    Unbalanced or too deep brackets, a dangling operator, ``&`` outside a matrix,
    an odd number of ``|``, a run of signs.

    math-verify reads a part of such a box and drops the rest, so a value padded
    with junk (``8\\frac{7}{1}\\times``, ``\\frac{7}{1}\\}``) would be graded by the part.
    """
    level = depths(text)
    if level and max(level) > MAX_NESTING:
        return Refusal("unparseable", f"brackets nested over {MAX_NESTING} deep")
    if _SIGN_RUN.search(text):
        return Refusal("unparseable", "a run of four or more signs")
    if not balanced(text):
        return Refusal("unparseable", "unbalanced brackets")
    if _DANGLING.search(text):
        return Refusal("unparseable", "an operator with nothing on one side")
    if "&" in text and "\\begin" not in text:
        return Refusal("unparseable", "& outside a matrix")
    if text.count("|") % 2 or text.count("%") > 1:
        return Refusal("unparseable", "an odd number of | or several % signs")
    return None


def _refused_command(text: str) -> Refusal | None:
    for match in _COMMAND.finditer(text):
        name = match.group(1)
        kind = command_kind(name)
        if kind == "hedge":
            return Refusal("hedged", f"\\{name} does not commit to one value")
        if kind == "hidden":
            return Refusal("obscured", f"\\{name} strikes out, hides or stacks part of the answer")
        if kind in ("macro", "unknown"):
            return Refusal("unknown_command", f"\\{name} is not a command an answer needs")
    for match in _OPERATOR_NAME.finditer(text):
        if match.group(1).strip().lower() not in OPERATOR_NAMES:
            return Refusal(
                "unknown_command", f"\\operatorname{{{match.group(1)}}} is not a known function"
            )
    stray = _NON_ASCII.search(text)
    if stray is not None:
        return Refusal("unparseable", f"the character {stray.group()!r} is not part of an answer")
    for match in _BEGIN.finditer(text):
        if match.group(1).rstrip("*") not in MATRIX_ENVIRONMENTS:
            return Refusal(
                "unknown_command", f"the {match.group(1)} environment is not a value (a matrix is)"
            )
    return None


def _join_thousands(text: str) -> str:
    """``1,000`` at top level is a number (every top-level comma a thousands comma)."""
    commas = top_level_matches(text, ",")
    if not commas:
        return text
    spans = [m.span() for m in _THOUSANDS.finditer(text)]
    if all(any(a < c.start() < b for a, b in spans) for c in commas):
        return _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
    return text


def _read_item(
    text: str, words: _Words, settings: GradingSettings, gold: Reading | None, notes: list[str]
) -> Item | Refusal:
    trusted = gold is None
    if text in ELLIPSIS_WRITINGS:
        return Item(ellipsis=True)
    plus_minus = bool(_PLUS_MINUS.search(text))
    relations = top_level_matches(text, _RELATION)
    if not relations:
        value = _read_value(text, words, settings, gold, notes)
        if isinstance(value, Refusal):
            return value
        return Item(values=(value,), plus_minus=plus_minus)
    ops = {m.group() for m in relations}
    parts = split_top(text, _RELATION)
    first = parts[0].strip()
    named = (ops <= {"=", ":="} or (ops == {"\\in"} and len(parts) == 2)) and (
        not first or is_name(_PLACEHOLDER.sub("a", first))
    )
    if named and trusted and re.search(r"[+\-]", re.sub(r"_\s*\{[^{}]*\}", "", first)):
        named = False  # a gold's x + y = 1 is a relation to compare, not a name
    if not named or any(not p.strip() for p in parts[1:]):
        return Item(relation=_PLACEHOLDER.sub("", text).strip(), plus_minus=plus_minus)
    if not trusted:
        for run in words.of(first):
            if any(word_kind(w) == "hedge" for w in run):
                return Refusal("hedged", f"hedging words in the name: {' '.join(run)!r}")
    values = []
    for part in parts[1:]:
        value = _read_value(part.strip(), words, settings, gold, notes)
        if isinstance(value, Refusal):
            return value
        values.append(value)
    label = _PLACEHOLDER.sub(lambda m: "".join(words.runs[int(m.group(1))]), first) or None
    return Item(values=tuple(values), label=label, plus_minus=plus_minus)


def _read_value(
    text: str, words: _Words, settings: GradingSettings, gold: Reading | None, notes: list[str]
) -> str | Refusal:
    """The value of one item: units, currency and degree signs off; scale and percent applied."""
    trusted = gold is None
    text = _CURRENCY.sub(" ", text)
    text = _DEGREES.sub(" ", text).strip()
    percent = False
    if _PERCENT_SIGN.search(text):
        percent, text = True, _PERCENT_SIGN.sub("", text).strip()
    text = _gather_unit_tail(text, words, gold)
    scale = Fraction(1)
    runs = [(m, words.runs[int(m.group(1))]) for m in _PLACEHOLDER.finditer(text)]
    for match, run in runs:
        head = text[: match.start()].strip()
        tail = _PLACEHOLDER.sub("", text[match.end() :]).strip()
        kinds = [word_kind(w) for w in run]
        if not trusted and "hedge" in kinds:
            return Refusal("hedged", f"{' '.join(run)!r} hedges or qualifies the value")
        for word, kind in zip(run, kinds, strict=True):
            if kind == "scale":
                if head == "" or (not trusted and tail and not _POWER_TAIL.fullmatch(tail)):
                    return Refusal("hedged", f"the scale word {word!r} does not follow the value")
                scale *= scale_of(word)
                notes.append(f"{word!r} scales the value by {scale_of(word)}")
            elif kind == "percent":
                percent = True
            elif not trusted:
                refusal = _unit_refusal(word, head, tail, settings, gold)
                if refusal is not None:
                    return refusal
                notes.append(f"unit {word!r} dropped")
            elif not head and word.lower() not in CURRENCY_PREFIXES:
                raise _UnplacedGold(f"the word {word!r} before the gold's value")
        if not trusted and len(run) > MAX_UNIT_WORDS:
            return Refusal("extra_text", f"{' '.join(run)!r} is more than a unit")
    text = _PLACEHOLDER_AND_POWER.sub(" ", text).strip()
    if not trusted and re.match(r"(?:\{\s*\})?\s*[\^_]", text):
        return Refusal("obscured", f"a lone superscript or subscript is not a value: {text!r}")
    suffix = None if trusted else _K_SUFFIX.fullmatch(text)
    if suffix and gold is not None and suffix.group(2) not in gold.variables:
        text, scale = suffix.group(1), scale * 1000
        notes.append("'k' scales the value by 1000")
    if not text:
        if trusted:
            return ""
        return Refusal("extra_text", "no value in the box, only words")
    if percent:
        if settings.percent == "fraction":
            scale /= 100
            notes.append("x% read as x/100 (percent='fraction')")
        else:
            notes.append("the % sign read as a unit (percent='sign')")
    return _scaled(text, scale)


def _gather_unit_tail(text: str, words: _Words, gold: Reading | None) -> str:
    """Gather a unit tail after a number (``18 km/h``, ``18 m^2``) into one run of words.

    A letter the gold uses as a variable stays a variable.
    """
    start = _tail_start(text)
    if start is None or start == 0 or not re.search(r"\d\s*$", text[:start]):
        return text
    tail = text[start:]
    gathered: list[str] = []
    for token in _UNIT_TOKEN.finditer(tail):
        if token.group(1) is not None:
            gathered += words.runs[int(token.group(1))]
            continue
        letters = token.group(2)
        if letters.lower() not in SHORT_UNITS or (gold is not None and letters in gold.variables):
            return text
        if gold is None and not text[:start].endswith(" ") and len(letters) == 1:
            return text  # a gold's 5m may be 5 times m
        gathered.append(letters)
    if not gathered or all(_PLACEHOLDER.fullmatch(t.group()) for t in _UNIT_TOKEN.finditer(tail)):
        return text
    return text[:start] + " " + words.add(gathered)


def _tail_start(text: str) -> int | None:
    """Where the longest run of unit-tail tokens reaching the end of ``text`` starts (linear)."""
    start, position = 0, 0
    while position < len(text):
        token = _TAIL_TOKEN.match(text, position)
        if token is None:
            position += 1
            start = position
        else:
            position = token.end()
    if start >= len(text):
        return None
    while start < len(text) and text[start].isspace():
        start += 1
    return start if start < len(text) else None


def _unit_refusal(
    word: str, head: str, tail: str, settings: GradingSettings, gold: Reading | None
) -> Refusal | None:
    if gold is not None and word.lower() in gold.words:
        return None  # the gold names this unit itself
    if not head:
        if word.lower() in CURRENCY_PREFIXES:
            return None
        return Refusal("extra_text", f"the word {word!r} stands before the value")
    if tail and not _POWER_TAIL.fullmatch(tail):
        return Refusal("extra_text", f"the word {word!r} stands inside the value")
    if settings.units == "keep":
        return Refusal("extra_text", f"units are not expected here (units='keep'): {word!r}")
    return None


def _scaled(text: str, scale: Fraction) -> str:
    """``text`` times ``scale``: exactly for a plain number (``2.5`` x 10^6 -> ``2500000``)."""
    if scale == 1:
        return text
    if _PLAIN_NUMBER.fullmatch(text):
        value = Decimal(text) * scale.numerator / scale.denominator
        out = format(value, "f")
        return out.rstrip("0").rstrip(".") if "." in out else out
    if scale.denominator == 1:
        return f"\\left({text}\\right) \\cdot {scale.numerator}"
    return (
        f"\\frac{{{text}}}{{{scale.denominator}}}"
        if scale.numerator == 1
        else (f"\\left({text}\\right) \\cdot \\frac{{{scale.numerator}}}{{{scale.denominator}}}")
    )


# ------------------------------------------------------------------ text answers
_TEXT_WRAPPER = re.compile(_TEXT_OPEN.pattern + r"([^{}]*)\}")
_PLAIN_TEXT = re.compile(r"[A-Za-z]+(?:[\s'][A-Za-z]+|-[A-Za-z]+)*")


def plain_text(text: str, require_wrapper: bool = True) -> str | None:
    """A text answer in plain form (``\\text{(C)}`` -> ``C``, ``\\text{Even}`` -> ``even``).

    None when ``text`` is not text: it has digits or mathematics, or it is a
    short run of letters without a ``\\text`` wrapper (``x``, ``ab``: variables).
    Case is kept for one letter (``C``), ignored for a word.

    >>> plain_text("\\\\text{(C)}"), plain_text("\\\\textbf{Even.}"), plain_text("2x")
    ('C', 'even', None)
    """
    wrapped = bool(_TEXT_WRAPPER.search(text))
    inner = _TEXT_WRAPPER.sub(lambda m: " " + m.group(1) + " ", text)
    inner = re.sub(r"[(){}\s.:]+", " ", inner).strip()
    if not _PLAIN_TEXT.fullmatch(inner):
        return None
    squeezed = re.sub(r"\s+", " ", inner)
    letters = re.sub(r"[^A-Za-z]", "", squeezed)
    if not wrapped and require_wrapper and (len(letters) < 3 or "\\" in text):
        return None
    return letters if len(letters) == 1 else squeezed.lower()
