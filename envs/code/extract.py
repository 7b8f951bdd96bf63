"""Pull Python code out of an LLM message (Markdown fenced blocks).

The parser is a single linear pass over the lines of the message: no regular
expression backtracking, no evaluation, so any text (huge, unicode, NUL bytes,
half-written fences) is safe to feed it.

Example:
    >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\n")
    'def f():\\n    return 1'
    >>> extract_code("no code here") is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CodeBlock", "extract_code", "find_code_blocks", "PYTHON_LANGS"]

#: Info strings (first word after the opening fence, lower-cased) taken as Python.
#: The empty string is a bare fence (```), which LLMs use for Python very often.
PYTHON_LANGS: frozenset[str] = frozenset({"", "python", "py", "python3", "py3", "python2"})


@dataclass(frozen=True)
class CodeBlock:
    """One fenced block: its language tag (lower case, "" for a bare fence),
    its body, and whether the closing fence was present.
    """

    lang: str
    code: str
    closed: bool


def _fence(line: str) -> tuple[str, int, str] | None:
    """If ``line`` is a fence line, return (fence char, fence length, info string)."""
    stripped = line.lstrip(" \t")
    if len(stripped) < 3 or stripped[0] not in "`~":
        return None
    ch = stripped[0]
    n = len(stripped) - len(stripped.lstrip(ch))
    if n < 3:
        return None
    info = stripped[n:].strip()
    if ch == "`" and "`" in info:
        # "```python```" on one line or inline code like ```x``` is not a fence.
        return None
    return ch, n, info


def find_code_blocks(text: str) -> list[CodeBlock]:
    """Return every fenced block of ``text`` in order (any language).

    A closing fence is a line of at least as many fence characters as the
    opening one and nothing else. An opening fence left unclosed at the end of
    the message (a generation cut short) still yields a block, with
    ``closed=False``.

    >>> [b.lang for b in find_code_blocks("```js\\nx\\n```\\n```py\\ny\\n```")]
    ['js', 'py']
    """
    if not isinstance(text, str):
        raise TypeError(f"find_code_blocks expects a str, got {type(text).__name__}")
    blocks: list[CodeBlock] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    open_fence: tuple[str, int, str] | None = None
    body: list[str] = []
    for line in lines:
        fence = _fence(line)
        if open_fence is None:
            if fence is not None:
                open_fence = fence
                body = []
            continue
        if (
            fence is not None
            and fence[0] == open_fence[0]
            and fence[1] >= open_fence[1]
            and not fence[2]
        ):
            lang = open_fence[2].split()[0].lower() if open_fence[2] else ""
            blocks.append(CodeBlock(lang=lang, code="\n".join(body), closed=True))
            open_fence = None
            continue
        body.append(line)
    if open_fence is not None:
        lang = open_fence[2].split()[0].lower() if open_fence[2] else ""
        blocks.append(CodeBlock(lang=lang, code="\n".join(body), closed=False))
    return blocks


def _clean_lang(lang: str) -> str:
    # "{.python}" (pandoc) and "python:main.py" style tags.
    return lang.strip("{}.").split(":")[0]


def python_blocks(text: str) -> list[str]:
    """Return the bodies of all Python (or bare) fenced blocks, in order.

    >>> python_blocks("```python\\na = 1\\n```\\n```bash\\nls\\n```\\n```\\nb = 2\\n```")
    ['a = 1', 'b = 2']
    """
    return [b.code for b in find_code_blocks(text) if _clean_lang(b.lang) in PYTHON_LANGS]


def extract_code(text: str) -> str | None:
    """Return the LAST fenced Python block of ``text`` (```python, ```py or a
    bare ```), without the fences and trailing blank lines; ``None`` when the
    message holds no such block or only empty ones.

    Blocks in other languages (```bash, ```text ...) are ignored. An
    unclosed final fence counts as a block (its text runs to the end).

    >>> extract_code("```python\\nx = 1\\n```\\nthen\\n```\\nx = 2\\n```")
    'x = 2'
    >>> extract_code("```bash\\npip install foo\\n```") is None
    True
    """
    if not isinstance(text, str):
        return None
    for code in reversed(python_blocks(text)):
        code = code.rstrip()
        if code.strip():
            return code
    return None
