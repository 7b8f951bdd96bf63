"""Rewrite a boxed answer into the form math-verify parses as the writer meant.

Applied in-process to both the answer and the gold, before any comparison.
Each rule fixes a misreading seen in public grader suites:

* thousands separators written as a space, a thin space (``\\,``, ``\\ ``,
  ``~``) or ``{,}`` are removed (``1\\,000`` was read as ``1 * 000 = 0``);
* one trailing period is dropped (``\\boxed{42.}`` was unparseable);
* ``\\mathrm{e}`` and ``\\mathrm{i}`` are the constants ``e`` and ``i``;
* a plain-text mixed number ``4 4/9`` is ``\\frac{40}{9}``;
* with the ``"strip"`` units policy, units after a number are dropped
  (``18 dollars``, ``5\\text{ cm}``) and ``28 percent`` is ``28\\%``.

Every rule is a bounded regular expression: linear in the answer's length.

Example:
    >>> normalize_answer(r"1\\,000.")
    '1000'
    >>> normalize_answer("4 4/9"), normalize_answer("18 dollars")
    ('\\\\frac{40}{9}', '18')
    >>> normalize_answer("18 dollars", units="keep")
    '18 dollars'
"""

from __future__ import annotations

import re

# A separator between digit groups: spaces (NFKC turns thin and no-break
# spaces into plain ones), LaTeX spacing commands, or a braced comma.
_SEPARATOR = r"(?:\\[,; ]|~|\{,\}| )"
_THOUSANDS = re.compile(
    rf"(?<![\d.,])(\d{{1,3}})((?:{_SEPARATOR}\d{{3}})+)(?![\d/])(?!\.\d*\s*/)(?!\s*\\frac)"
)
_SEPARATOR_RE = re.compile(_SEPARATOR)
_TRAILING_PERIOD = re.compile(r"(?<![.\\])\.\s*$")
_UPRIGHT_CONSTANT = re.compile(r"\\(?:mathrm|operatorname|rm)\s*\{\s*([ei])\s*\}")
_MIXED_NUMBER = re.compile(r"([+-]?)\s*(\d{1,12})\s+([1-9]\d{0,11})\s*/\s*([1-9]\d{0,11})")

# Units: a numeric head (no letters outside LaTeX commands), then words.
_TEXT_WRAPPER = re.compile(r"\\(?:text|textrm|textnormal|mbox|mathrm)\s*\{([^{}]*)\}")
# The first letter that starts a plain word (not part of a ``\\command``).
_FIRST_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]")
_UNIT_TAIL = re.compile(r"[a-zA-Z .²³/]*(?:\^\{?[23]\}?)?")
_WORD = re.compile(r"[a-zA-Z]+")
_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]+")
_PERCENT_WORDS = {"percent", "pct", "per cent", "percentage"}
# Words that are mathematics, not units: never stripped.
_MATH_WORDS = frozenset(
    "pi e i inf infty infinity sqrt sin cos tan cot sec csc arcsin arccos arctan sinh cosh "
    "tanh log ln lg exp mod and or not deg dx dy dt".split()
)
# Units shorter than three letters (longer words count when not mathematics).
_SHORT_UNITS = frozenset(
    "cm mm km m2 kg mg ml ft in yd mi hr hrs h s sq lb oz am pm mph kph m g l".split()
)


def strip_thousands_separators(text: str) -> str:
    """``1\\,000\\,000`` / ``1 000`` / ``1{,}000`` -> ``1000000`` / ``1000`` / ``1000``.

    Only groups of exactly three digits after a group of one to three are
    joined; ``4 4/9`` and ``2\\,3`` are left alone.

    >>> strip_thousands_separators(r"x = 12{,}345 and 1\\,000\\,000")
    'x = 12345 and 1000000'
    """
    return _THOUSANDS.sub(lambda m: m.group(1) + _SEPARATOR_RE.sub("", m.group(2)), text)


def _mixed_number(text: str) -> str:
    match = _MIXED_NUMBER.fullmatch(text)
    if match is None:
        return text
    sign, whole, numerator, denominator = match.groups()
    num, den = int(numerator), int(denominator)
    if den == 0 or num >= den:
        return text  # ``2 3/2`` is not a mixed number
    total = int(whole) * den + num
    return f"{'-' if sign == '-' else ''}\\frac{{{total}}}{{{den}}}"


def _is_unit_word(word: str) -> bool:
    lower = word.lower()
    if lower in _MATH_WORDS:
        return False
    return len(word) >= 3 or lower in _SHORT_UNITS


def _strip_units(text: str) -> str:
    """Drop a tail of unit words after a numeric head; ``percent`` becomes ``\\%``."""
    plain = _TEXT_WRAPPER.sub(lambda m: " " + m.group(1) + " ", text).strip()
    word = _FIRST_WORD.search(plain)
    if word is None:
        return text
    head, tail = plain[: word.start()].strip(), plain[word.start() :].strip()
    if not re.search(r"\d", head) or head.endswith("\\") or not _UNIT_TAIL.fullmatch(tail):
        return text
    words = _WORD.findall(tail)
    if not all(_is_unit_word(w) for w in words):
        return text
    if " ".join(w.lower() for w in words) in _PERCENT_WORDS:
        return head.removesuffix("\\%") + "\\%"
    return head


def normalize_answer(text: str, units: str = "strip") -> str:
    """Normalise one (already sanitised) answer; see the module docstring.

    >>> normalize_answer(r"1-\\frac{1}{\\mathrm{e}}")
    '1-\\\\frac{1}{e}'
    """
    out = _TRAILING_PERIOD.sub("", text).strip() or text.strip()
    out = _UPRIGHT_CONSTANT.sub(r"\1", out)
    out = strip_thousands_separators(out)
    out = _mixed_number(out)
    if units == "strip":
        out = _strip_units(out)
    return out
