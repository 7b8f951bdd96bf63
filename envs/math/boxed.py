"""Finding ``\\boxed{...}`` answers in untrusted text, in linear time.

Completions are hostile LLM text: any length, unbalanced braces, lone
surrogates, control characters, ``\\boxed{`` nested thousands of levels deep.
Nothing here recurses or rescans, so every function is O(len(text)).

Example:
    >>> extract_boxed(r"so x = \\boxed{\\frac{3}{4}} and y = \\fbox{2}")
    ['\\\\frac{3}{4}', '2']
    >>> extract_boxed(r"\\boxed{unclosed")
    []
"""

from __future__ import annotations

import re
import unicodedata

# One token per match: a box opener, an unbraced box (``\\boxed 4``), an escaped
# character (``\\{`` is not a brace), or a bare brace. Everything else is skipped.
_TOKEN = re.compile(
    r"(?P<box>\\(?:boxed|fbox)\s*\{)|(?P<bare>\\(?:boxed|fbox)(?![a-zA-Z])\s*(?=[^\s{}$]))"
    r"|\\.|[{}]",
    re.DOTALL,
)
# The content of an unbraced box: one run of non-space text, braces balanced.
_UNBRACED_STOP = re.compile(r"\s|\$|\\[)\]]")
_UNBRACED_MAX = 200
_TRAILING_PUNCTUATION = ".,;:!?"

# Characters removed before grading: C0/C1 controls other than whitespace, and
# invisible format characters (zero-width spaces and joiners, bidi overrides,
# soft hyphens, the byte-order mark) that could hide or reorder a value.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]"
)
# Unicode superscripts and subscripts keep their position: NFKC alone would turn
# a superscript 7 into a plain 7. They become ``^{7}`` and ``_{7}`` first.
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜ", "0123456789+-=()aeoxhklmnpst", strict=True))
_SUPER_RUN = re.compile("[" + "".join(_SUPERSCRIPTS) + "]+")
_SUB_RUN = re.compile("[" + "".join(_SUBSCRIPTS) + "]+")

# Cosmetic LaTeX that never changes a value; removed before comparing boxes.
_COSMETIC = re.compile(
    r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\[,;:! ]|\\displaystyle|\\mathrm\{\s*\}|\s+|\$"
)


def extract_boxed(text: str) -> list[str]:
    """Return the contents of every outermost ``\\boxed{...}`` (or ``\\fbox{...}``).

    Braces are matched with escapes (``\\{``, ``\\}``) ignored; a box whose
    closing brace never comes is dropped. Boxes nested inside a box are part
    of the outer box's content. Runs in linear time on any input.

    >>> extract_boxed(r"\\boxed{\\{1, 2\\}} or \\boxed {a{b}c}")
    ['\\\\{1, 2\\\\}', 'a{b}c']
    >>> extract_boxed(r"\\boxed{\\boxed{5}}")
    ['\\\\boxed{5}']

    An unbraced ``\\boxed 42`` (no ``{``) boxes the run of text up to the next
    space or ``$``, without trailing punctuation:

    >>> extract_boxed(r"so $\\boxed 42$. And \\boxed -3.")
    ['42', '-3']
    """
    if not isinstance(text, str):
        raise TypeError(f"extract_boxed expects a str, got {type(text).__name__}")
    found: list[str] = []
    # Stack of open braces: True where the brace opened a box.
    stack: list[bool] = []
    starts: list[int] = []  # content start of each open box (parallel to box entries)
    open_boxes = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if match.lastgroup == "bare":
            if open_boxes == 0:  # an unbraced box (inside a box it is that box's text)
                run = _unbraced_run(text, match.end())
                if run:
                    found.append(run)
            continue
        if match.lastgroup == "box":
            stack.append(True)
            starts.append(match.end())
            open_boxes += 1
        elif token == "{":
            stack.append(False)
        elif token == "}":
            if not stack:
                continue  # stray closing brace: ignore
            if stack.pop():
                start = starts.pop()
                open_boxes -= 1
                if open_boxes == 0:
                    found.append(text[start : match.start()])
    return found


def _unbraced_run(text: str, start: int) -> str:
    """The answer of an unbraced ``\\boxed``: text from ``start`` to a space, ``$`` or an
    unmatched ``}``, without trailing punctuation (bounded: at most 200 characters).
    """
    depth = 0
    end = start
    limit = min(len(text), start + _UNBRACED_MAX)
    while end < limit:
        char = text[end]
        if char == "\\" and end + 1 < limit and text[end + 1] in "{}":
            end += 2
            continue
        if depth == 0 and _UNBRACED_STOP.match(text, end):
            break
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                break
            depth -= 1
        end += 1
    if depth:
        return ""  # an unclosed brace: not an answer
    return text[start:end].rstrip(_TRAILING_PUNCTUATION)


def sanitize(text: str) -> str:
    """Make arbitrary text safe for parsers: no lone surrogates, no control chars.

    Lone surrogates become ``?``; invisible format characters are removed;
    superscripts and subscripts become ``^{...}`` and ``_{...}``; then Unicode
    is NFKC-normalized so that e.g. full-width digits read as digits.

    >>> sanitize("1\\x00 2\\ud800")
    '1 2?'
    >>> sanitize("x² and ⁷ and a₁₀ and ７")
    'x^{2} and ^{7} and a_{10} and 7'
    """
    cleaned = text.encode("utf-8", "replace").decode("utf-8")
    cleaned = _CONTROL.sub("", cleaned)
    if not cleaned.isascii():
        cleaned = _SUPER_RUN.sub(
            lambda m: "^{" + "".join(_SUPERSCRIPTS[c] for c in m.group()) + "}", cleaned
        )
        cleaned = _SUB_RUN.sub(
            lambda m: "_{" + "".join(_SUBSCRIPTS[c] for c in m.group()) + "}", cleaned
        )
        cleaned = unicodedata.normalize("NFKC", cleaned)
    return cleaned


# Rewrites that never change what an answer means (used to say "correct" in-process).
_FRAC_VARIANT = re.compile(r"\\[dt]frac(?![a-zA-Z])")
_SIZING = re.compile(r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z.])|\\displaystyle(?![a-zA-Z])")
_SPACE_BY_PUNCTUATION = re.compile(r"(?<=[{(\[=+\-^_/])\s+|\s+(?=[})\]=+\-^_/])")


def same_meaning_form(content: str) -> str:
    """A rewriting that keeps the meaning: ``\\dfrac`` -> ``\\frac``, no ``\\left``/``\\right``,
    no spaces next to brackets and operators (spaces between two terms stay: ``2 3``;
    so do spaces after commas: ``1, 000`` may be a pair).

    >>> same_meaning_form(r"\\left( \\dfrac{1}{2}, \\pi r \\right)")
    '(\\\\frac{1}{2}, \\\\pi r)'
    """
    out = _FRAC_VARIANT.sub(r"\\frac", content)
    out = _SIZING.sub("", out)
    return _SPACE_BY_PUNCTUATION.sub("", out).strip()


def canonical_box(content: str) -> str:
    """A cosmetic normal form of a box, used to tell *distinct* boxes apart.

    Only removes what never changes a value (spacing, ``\\left``/``\\right``,
    ``$``, ``\\dfrac`` vs ``\\frac``, a trailing period).

    >>> canonical_box(r" \\dfrac{1}{2}. ") == canonical_box(r"\\frac{1}{2}")
    True
    """
    out = _COSMETIC.sub("", content)
    out = out.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    return out.rstrip(".")
