"""Bracket depth and top-level splitting of LaTeX answers, in linear time.

The reader (:mod:`flexmg.envs.math.reading`) splits an answer at commas and
``=`` signs only where they are not inside brackets: ``(1, 2), (3, 4)`` is a
list of two points, ``f(x, y) = 3`` one assignment. Brackets of any kind
count, mismatched ones too (``[0, 1)`` is an interval); ``\\{``, ``\\}``,
``\\begin{...}`` and ``\\end{...}`` open and close like brackets.

Example:
    >>> split_top("(1, 2), [3, 4), x", ",")
    ['(1, 2)', ' [3, 4)', ' x']
    >>> depths("a(b)c")
    [0, 1, 1, 1, 0]
"""

from __future__ import annotations

import re

_OPEN = re.compile(r"\\begin\s*\{[^{}]*\}|\\\{|\\langle(?![a-zA-Z])|\\lceil|\\lfloor|[(\[{]")
_CLOSE = re.compile(r"\\end\s*\{[^{}]*\}|\\\}|\\rangle(?![a-zA-Z])|\\rceil|\\rfloor|[)\]}]")
_TOKEN = re.compile(_OPEN.pattern + "|" + _CLOSE.pattern + r"|\\[a-zA-Z]+|\\.")


def depths(text: str) -> list[int]:
    """The bracket depth at each character (a bracket counts as inside its group).

    Unbalanced closers never take the depth below zero.
    """
    out = [0] * len(text)
    depth = 0
    position = 0
    for match in _TOKEN.finditer(text):
        for index in range(position, match.start()):
            out[index] = depth
        token = match.group()
        if _OPEN.fullmatch(token):
            depth += 1
            value = depth
        elif _CLOSE.fullmatch(token):
            value = depth
            depth = max(0, depth - 1)
        else:
            value = depth
        for index in range(match.start(), match.end()):
            out[index] = value
        position = match.end()
    for index in range(position, len(text)):
        out[index] = depth
    return out


def balanced(text: str) -> bool:
    """True when every bracket closes one opened before it and all are closed.

    Kinds may differ (``[0, 1)`` is an interval), counts may not.

    >>> balanced("[0, 1)"), balanced("(1))"), balanced("\\frac{7}{1}\\}")
    (True, False, False)
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _OPEN.fullmatch(token):
            depth += 1
        elif _CLOSE.fullmatch(token):
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def top_level_matches(text: str, pattern: re.Pattern[str] | str) -> list[re.Match[str]]:
    """Matches of ``pattern`` that start outside every bracket.

    >>> [m.group() for m in top_level_matches("x = (a = b) = c", "=")]
    ['=', '=']
    """
    regex = re.compile(pattern) if isinstance(pattern, str) else pattern
    level = depths(text)
    return [m for m in regex.finditer(text) if level[m.start()] == 0]


def split_top(text: str, pattern: re.Pattern[str] | str) -> list[str]:
    """``text`` split at the top-level matches of ``pattern`` (separators dropped)."""
    parts: list[str] = []
    start = 0
    for match in top_level_matches(text, pattern):
        if match.end() == match.start():
            continue
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    return parts


def is_wrapped(text: str, opener: str, closer: str) -> bool:
    """True when ``text`` is one group from ``opener`` to its matching ``closer``.

    >>> is_wrapped(r"\\{1, 2\\}", r"\\{", r"\\}"), is_wrapped("(1)(2)", "(", ")")
    (True, False)
    """
    text = text.strip()
    if len(text) < len(opener) + len(closer):
        return False
    if not (text.startswith(opener) and text.endswith(closer)):
        return False
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _OPEN.fullmatch(token):
            depth += 1
        elif _CLOSE.fullmatch(token):
            depth -= 1
            if depth <= 0:
                return match.end() == len(text)
    return False
