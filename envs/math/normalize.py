"""Rewrite a boxed answer into the LaTeX its writer meant, before it is read.

Applied in-process to both the answer and the gold. Each rule keeps the value
and fixes a writing that parsers misread:

* thousands separators written as a space, a thin space (``\\,``, ``\\ ``,
  ``~``), ``{,}`` or ``,\\!`` are removed (``1\\,000`` was read as ``1 * 000 = 0``);
* a command written with a doubled backslash (``\\\\le``, from escaped text)
  is the command, outside matrices;
* one trailing period is dropped (``\\boxed{42.}`` was unparseable);
* ``\\mathrm{e}`` and ``\\mathrm{i}`` are the constants ``e`` and ``i``;
* a plain-text mixed number ``4 4/9`` is ``\\frac{40}{9}``;
* Unicode mathematics is LaTeX: ``√2`` is ``\\sqrt{2}``, ``π`` is ``\\pi``,
  ``−7`` is ``-7``, ``½`` is ``1/2``, ``≤`` is ``\\le`` (``≈`` becomes ``\\approx``,
  which the reader then refuses);
* a number in scientific notation is written out: ``1.5e6`` and
  ``1.5 \\times 10^{6}`` are ``1500000``, ``1e-05`` is ``0.00001`` (``2e-1`` stays
  two times Euler's number minus one: a one-digit signed exponent after an
  integer is not a float's ``repr``).

Units, scale words and percent signs are the reader's job
(:mod:`flexmg.envs.math.reading`). Every rule is a bounded regular expression:
linear in the answer's length.

Example:
    >>> normalize_answer(r"1\\,000.")
    '1000'
    >>> normalize_answer("4 4/9"), normalize_answer("√2"), normalize_answer("1.5e6")
    ('\\\\frac{40}{9}', '\\\\sqrt{2}', '1500000')
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# A separator between digit groups: spaces (NFKC turns thin and no-break
# spaces into plain ones), LaTeX spacing commands, or a braced comma.
_SEPARATOR = r"(?:\\[,; ]|~|\{,\}|,\\!\s?|\\!| )"
_THOUSANDS = re.compile(
    rf"(?<![\d.,])(\d{{1,3}})((?:{_SEPARATOR}\d{{3}})+)(?![\d/])(?!\.\d*\s*/)(?!\s*\\frac)"
)
_SEPARATOR_RE = re.compile(_SEPARATOR)
_TRAILING_PERIOD = re.compile(r"(?<![.\\])\.\s*$")
_DOUBLED_BACKSLASH = re.compile(r"\\\\(?=[a-zA-Z])")  # \\le written for \le (escaped text)
# \hat x and \hat\theta: the accented symbol in braces, as it is usually written.
_ACCENT_ARGUMENT = re.compile(
    r"\\(hat|widehat|bar|vec|tilde|widetilde|dot|ddot|check|breve|overline|underline)"
    r"(?![a-zA-Z])\s*(\\[a-zA-Z]+|[A-Za-z0-9])"
)
_UPRIGHT_CONSTANT = re.compile(r"\\(?:mathrm|operatorname|rm)\s*\{\s*([ei])\s*\}")
_MIXED_NUMBER = re.compile(r"([+-]?)\s*(\d{1,12})\s+([1-9]\d{0,11})\s*/\s*([1-9]\d{0,11})")

# Unicode symbols and their LaTeX (the radical signs take an argument: below).
_UNICODE = {
    "−": "-",
    "–": "-",
    "×": "\\times ",
    "·": "\\cdot ",
    "⋅": "\\cdot ",
    "÷": "\\div ",
    "≤": "\\le ",
    "≥": "\\ge ",
    "≠": "\\ne ",
    "≈": "\\approx ",
    "≃": "\\simeq ",
    "∼": "\\sim ",
    "±": "\\pm ",
    "∓": "\\mp ",
    "∞": "\\infty ",
    "∈": "\\in ",
    "∪": "\\cup ",
    "∩": "\\cap ",
    "∅": "\\emptyset ",
    "°": "^\\circ ",
    "′": "'",
    "″": "''",
    "⁄": "/",
    "π": "\\pi ",
    "α": "\\alpha ",
    "β": "\\beta ",
    "γ": "\\gamma ",
    "δ": "\\delta ",
    "θ": "\\theta ",
    "λ": "\\lambda ",
    "μ": "\\mu ",
    "σ": "\\sigma ",
    "φ": "\\phi ",
    "ω": "\\omega ",
}
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))
# √2, √x, √(x+1), √{x+1}, ∛8: the radicand is a number, a letter or a bracketed group.
_RADICAL = re.compile(
    r"([√∛∜])\s*(\d+(?:\.\d+)?|[a-zA-Z]|\\[a-zA-Z]+|\([^()]{0,200}\)|\{[^{}]{0,200}\})"
)
_ROOT_INDEX = {"√": "", "∛": "[3]", "∜": "[4]"}

# Scientific notation, as a whole answer: 1.5e6, 1E-05, 6.02 \times 10^{23}, 1.5\cdot10^6.
_SCI_E = re.compile(r"([+-]?)(\d+\.\d*|\.\d+|\d+)[eE]([+-]?)(\d{1,4})")
_SCI_TIMES = re.compile(
    r"([+-]?)(\d+\.\d*|\.\d+|\d+)\s*\\(?:times|cdot)\s*10\s*\^\s*(?:\{\s*([+-]?)\s*(\d{1,4})\s*\}|(\d))"
)
_MAX_WRITTEN_DIGITS = 400  # a written-out number longer than this is left as it was


def strip_thousands_separators(text: str) -> str:
    """``1\\,000\\,000`` / ``1 000`` / ``1{,}000`` -> ``1000000`` / ``1000`` / ``1000``.

    Only groups of exactly three digits after a group of one to three are
    joined; ``4 4/9`` and ``2\\,3`` are left alone.

    >>> strip_thousands_separators(r"x = 12{,}345 and 1\\,000\\,000 and 10,\\!080")
    'x = 12345 and 1000000 and 10080'
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


def unicode_to_latex(text: str) -> str:
    """Unicode mathematics as LaTeX (see the module docstring).

    >>> unicode_to_latex("2√3 + √(x+1) − π")
    '2\\\\sqrt{3} + \\\\sqrt{x+1} - \\\\pi '
    """
    if text.isascii():
        return text

    def radical(match: re.Match[str]) -> str:
        body = match.group(2)
        if body[0] in "({":
            body = body[1:-1]
        return f"\\sqrt{_ROOT_INDEX[match.group(1)]}{{{body}}}"

    text = _RADICAL.sub(radical, text)
    return _UNICODE_RE.sub(lambda m: _UNICODE[m.group()], text)


def _written_out(sign: str, mantissa: str, exp_sign: str, exponent: str) -> str | None:
    try:
        value = Decimal(mantissa).scaleb(int(exp_sign + exponent))
    except InvalidOperation:
        return None
    digits = format(value, "f")
    if len(digits) > _MAX_WRITTEN_DIGITS:
        return None
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".") if "." in mantissa or exp_sign == "-" else digits
    return ("-" if sign == "-" else "") + digits


def scientific_to_decimal(text: str) -> str:
    """A whole answer in scientific notation, written out (see the module docstring).

    >>> scientific_to_decimal("1e-05"), scientific_to_decimal("6.02 \\\\times 10^{23}")
    ('0.00001', '602000000000000000000000')
    >>> scientific_to_decimal("2e-1"), scientific_to_decimal("x = 1.5e6")
    ('2e-1', 'x = 1.5e6')
    """
    stripped = text.strip()
    match = _SCI_E.fullmatch(stripped)
    if match is not None:
        sign, mantissa, exp_sign, exponent = match.groups()
        float_like = "." in mantissa or len(exponent) >= 2 or not exp_sign
        if not float_like:
            return text  # 2e-1: two Euler's numbers minus one
        return _written_out(sign, mantissa, exp_sign, exponent) or text
    match = _SCI_TIMES.fullmatch(stripped)
    if match is not None:
        sign, mantissa, exp_sign, exponent, digit = match.groups()
        return _written_out(sign, mantissa, exp_sign or "", exponent or digit) or text
    return text


def normalize_answer(text: str, units: str = "strip") -> str:
    """Normalise one (already sanitised) answer; see the module docstring.

    ``units`` is accepted for compatibility and no longer used here: units are
    read by :mod:`flexmg.envs.math.reading`.

    >>> normalize_answer(r"1-\\frac{1}{\\mathrm{e}}")
    '1-\\\\frac{1}{e}'
    """
    out = unicode_to_latex(text)
    if "\\\\" in out and "\\begin" not in out and "matrix" not in out:
        out = _DOUBLED_BACKSLASH.sub(r"\\", out)
    out = _TRAILING_PERIOD.sub("", out).strip() or out.strip()
    out = _UPRIGHT_CONSTANT.sub(r"\1", out)
    out = _ACCENT_ARGUMENT.sub(r"\\\1{\2}", out)
    out = strip_thousands_separators(out)
    out = _mixed_number(out)
    return scientific_to_decimal(out)
