"""Spaces for text observations and actions.

Gymnasium's ``Text`` space only accepts characters from a fixed charset, which
rejects ordinary prose (punctuation, newlines, non-Latin scripts). LLM agents
exchange arbitrary Unicode, so flexmg uses :class:`UnicodeText`: any ``str`` up
to ``max_length`` characters.

Example:
    >>> from flexmg.spaces import UnicodeText
    >>> space = UnicodeText(max_length=100, seed=0)
    >>> space.contains("Ünïcödé prose, with \\n newlines — and 漢字!")
    True
    >>> space.contains(b"bytes")
    False
    >>> isinstance(space.sample(), str)
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

# What ``sample()`` draws from: ASCII prose plus a spread of non-Latin
# characters, so that random agents exercise the Unicode paths of an env.
_SAMPLE_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    " \n\t.,;:!?'\"()[]{}<>+-*/=\\_#$%&@^|~`"
    "éüßøñçÅΩπΣλЖжЯ日本語漢字한국어عربيעברית🙂🚀∑∫√∞"
)


class UnicodeText(spaces.Space[str]):
    """Any Python ``str`` of at most ``max_length`` characters.

    Args:
        max_length: the longest string the space contains.
        sample_max_length: the longest string ``sample()`` draws (defaults to
            ``min(max_length, 64)``: random actions are short).
        seed: seed for ``sample()``.
    """

    def __init__(
        self,
        max_length: int = 8192,
        sample_max_length: int | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if not isinstance(max_length, int) or max_length < 0:
            raise ValueError(f"max_length must be a non-negative int, got {max_length!r}")
        self.max_length = max_length
        self.sample_max_length = min(
            max_length, 64 if sample_max_length is None else int(sample_max_length)
        )
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string (Unicode included), reproducible under ``seed()``."""
        if mask is not None or probability is not None:
            raise ValueError("UnicodeText.sample does not support masks")
        length = int(self.np_random.integers(0, self.sample_max_length + 1))
        idx = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=length)
        return "".join(_SAMPLE_ALPHABET[i] for i in idx)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def to_jsonable(self, sample_n: Any) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.max_length))
