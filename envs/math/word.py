"""Moved to :mod:`flexmg.envs.math.generators.word`; this name stays importable.

Example:
    >>> from flexmg.envs.math.word import WordGenerator
    >>> WordGenerator.name
    'word'
"""

from __future__ import annotations

from .generators.word import WordConfig, WordGenerator

__all__ = ["WordConfig", "WordGenerator"]
