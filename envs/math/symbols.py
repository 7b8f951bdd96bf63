"""What the symbols of an answer are: marks, free variables, names, undefined forms.

* **Marks** are part of a symbol: primes (``E'``, ``f''(x)``), subscripts
  (``x_1``, ``a_{n+1}``, the base of ``4343_6``) and accents (``\\hat{x}``,
  ``\\overline{AB}``). Two answers with different marks are different answers,
  whatever a parser that drops them says. Subscripts of operators
  (``\\log_2``, ``\\sum_{k=1}``) are bounds, not marks; ``\\overline`` after a
  digit is a repeating decimal, not an accent.
* **Variables** are the letters (and Greek letters) an answer is written in;
  ``e`` is Euler's number and ``\\pi`` a constant.
* A **name** is what may stand on the left of ``=`` in an answer: letters,
  subscripts, primes, accents, function calls (``f(2)``), ratios and tuples of
  names (``(x, y)``, ``A:B``), with no number outside a subscript or an
  argument list: ``x``, ``a_{10}``, ``f'(x)`` and ``|AB|`` are names; ``x + 1``,
  ``2x`` and ``8`` are not.
* **Undefined forms**: ``0^0``, ``\\frac{0}{0}``, ``\\infty - \\infty`` and division
  by zero have no value.

Example:
    >>> sorted(marks("f'(x) + 4343_{6} + \\\\hat{y} + \\\\log_2 8"))
    ['4343_6', "f'", 'hat{y}']
    >>> sorted(variables("2x^2 + \\\\theta y_1 - e")), is_name("a_{10}"), is_name("x + 1")
    (['theta', 'x', 'y'], True, False)
    >>> undefined_form("7 + 0^0")
    '0^0'
"""

from __future__ import annotations

import re

from .vocabulary import OPERATOR_NAMES

_PRIME_COMMAND = re.compile(r"\^\s*\{\s*((?:\\prime\s*)+)\}|\^\s*\\prime|\\prime")
_PRIME = re.compile(r"([A-Za-z]|\\[a-zA-Z]+|[)}])(\s*'+)")
# Operators whose subscripts are bounds or bases of a computation.
_OPERATORS = frozenset(
    "log lg ln sum prod int iint iiint oint lim limsup liminf min max sup inf bigcup bigcap "
    "bigoplus coprod operatorname mathop arg argmin argmax".split()
)
_SUBSCRIPT = re.compile(
    r"(\d+|[A-Za-z]|\\[a-zA-Z]+|[)}])\s*_\s*(\{(?:[^{}]|\{[^{}]*\})*\}|\\[a-zA-Z]+|[A-Za-z0-9])"
)
_ACCENT = re.compile(
    r"(?<![\d.])\\(hat|widehat|bar|overline|vec|overrightarrow|overleftarrow|tilde|widetilde|"
    r"dot|ddot|check|breve|acute|grave|mathring|underline)(?![a-zA-Z])\s*(\{[^{}]*\}|[A-Za-z])"
)
_SPACE_AND_BRACES = re.compile(r"[\s{}]")
_COMMAND = re.compile(r"\\([a-zA-Z]+)")
_GROUP_ARGUMENT = re.compile(r"\\(?:text\w*|mbox|mathrm|begin|end)\s*\{[^{}]*\}")
# \mathbb{R}, \mathcal{x}, \operatorname{x}: the argument is one symbol's name.
_NAMED_SYMBOL = re.compile(r"\\(mathbb|mathcal|mathscr|mathfrak|operatorname)\s*\{([^{}]*)\}")
_SUB_OR_SUPER_GROUP = re.compile(r"_\s*(?:\{(?:[^{}]|\{[^{}]*\})*\}|\\[a-zA-Z]+|[A-Za-z0-9])")
_GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu "
    "xi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda "
    "Xi Sigma Upsilon Phi Psi Omega ell".split()
)
_NOT_VARIABLES = frozenset({"e"})  # Euler's number
_NUMBER_SETS = frozenset("RZNQCP")  # \mathbb{R} and the like are sets, not variables

_UNDEFINED = re.compile(
    r"(?<![\d.])0\s*\^\s*\{?\s*0\s*\}?(?![\d.])"
    r"|\\frac\s*\{\s*[^{}]*\}\s*\{\s*0\s*\}"
    r"|\\frac\s*\d\s*0(?!\d)"
    r"|(?<![\d.])\d+(?:\.\d+)?\s*/\s*0(?![\d.])"
    r"|\\infty\s*-\s*\\infty"
    r"|\\frac\s*\{\s*[+-]?\\infty\s*\}\s*\{\s*[+-]?\\infty\s*\}"
    r"|(?<![\d.])0\s*\\cdot\s*\\infty|\\infty\s*\\cdot\s*0(?![\d.])"
    r"|(?<![\d.])1\s*\^\s*\{?\s*\\infty|\\infty\s*\^\s*\{?\s*0\s*\}?(?![\d.])"
)

_NAME_ALLOWED = re.compile(r"[A-Za-z\s+\-*/:|,()'^{}]*")
_NAME_COMMANDS = frozenset(
    _GREEK
    | {"angle", "triangle", "overline", "hat", "bar", "vec", "overrightarrow", "tilde", "frac"}
    | {"dot", "widehat", "measuredangle", "prime", "left", "right", "mathbf", "mathrm", "text"}
    | {"cdot", "times", "operatorname", "sin", "cos", "tan", "log", "ln", "det", "max", "min"}
)
_CALL_ARGUMENTS = re.compile(r"(?<=[A-Za-z'}])\s*\(([^()]*)\)")
_INVERSE = re.compile(r"\^\s*\{\s*-\s*1\s*\}|\^\s*-\s*1")


def _squeeze(text: str) -> str:
    return _SPACE_AND_BRACES.sub("", text)


def normalize_primes(text: str) -> str:
    """``^{\\prime\\prime}``, ``^\\prime`` and ``\\prime`` written as apostrophes.

    >>> normalize_primes("f^{\\\\prime\\\\prime}(x) + y^\\\\prime")
    "f''(x) + y'"
    """
    if "prime" not in text:
        return text
    return _PRIME_COMMAND.sub(lambda m: "'" * max(1, (m.group(1) or "").count("prime")), text)


def marks(text: str) -> frozenset[str]:
    """The marked symbols of ``text`` (see the module docstring), spaces and braces removed."""
    text = normalize_primes(text)
    found: set[str] = set()
    for match in _PRIME.finditer(text):
        found.add(match.group(1) + match.group(2).strip())
    for match in _SUBSCRIPT.finditer(text):
        base = match.group(1)
        if base.startswith("\\") and base[1:] in _OPERATORS:
            continue
        found.add(_squeeze(base + "_" + match.group(2)))
    for match in _ACCENT.finditer(text):
        found.add(match.group(1) + "{" + _squeeze(match.group(2)) + "}")
    return frozenset(found)


def variables(text: str) -> frozenset[str]:
    """The variables ``text`` is written in: single letters and Greek letter names.

    Subscripts, command names and the arguments of ``\\text``, ``\\operatorname``,
    ``\\mathbb`` and the like are not variables; nor is ``e`` (Euler's number).
    """
    text = _GROUP_ARGUMENT.sub(" ", text)
    found = {
        f"{m.group(1)}{{{m.group(2).strip()}}}"
        for m in _NAMED_SYMBOL.finditer(text)
        if not (m.group(1) == "operatorname" and m.group(2).strip().lower() in OPERATOR_NAMES)
        and not (m.group(1) == "mathbb" and m.group(2).strip() in _NUMBER_SETS)
    }
    text = _NAMED_SYMBOL.sub(" ", text)
    text = _SUB_OR_SUPER_GROUP.sub(" ", text)
    found |= {m.group(1) for m in _COMMAND.finditer(text) if m.group(1) in _GREEK}
    text = _COMMAND.sub(" ", text)
    found.update(c for c in text if c.isascii() and c.isalpha() and c not in _NOT_VARIABLES)
    return frozenset(found)


def is_name(text: str) -> bool:
    """True when ``text`` may stand on the left of ``=`` in an answer (module docstring)."""
    text = normalize_primes(text).strip()
    if not text:
        return False
    text = _SUB_OR_SUPER_GROUP.sub("", text)
    text = _INVERSE.sub("", text)
    text = _CALL_ARGUMENTS.sub("", text)
    for match in _COMMAND.finditer(text):
        if match.group(1) not in _NAME_COMMANDS:
            return False
    bare = _COMMAND.sub("a", text)
    return bool(_NAME_ALLOWED.fullmatch(bare)) and any(c.isalpha() for c in bare)


def undefined_form(text: str) -> str | None:
    """The first undefined form in ``text`` (``0^0``, ``\\frac{1}{0}``, ...), else None."""
    match = _UNDEFINED.search(text)
    return None if match is None else match.group().strip()
