"""Moved: the role prompts live in their family modules (:mod:`flexmg.envs.families`).

This module keeps the old names importable.

Example:
    >>> from flexmg.envs.prompts import MATH_ROLES
    >>> sorted(MATH_ROLES)[:2]
    ['decomposer', 'executor']
"""

from __future__ import annotations

from flexmg.envs.families.code import FENCE
from flexmg.envs.families.code import PROMPTS as CODE_ROLES
from flexmg.envs.families.math import BOX
from flexmg.envs.families.math import PROMPTS as MATH_ROLES

__all__ = ["BOX", "CODE_ROLES", "FENCE", "MATH_ROLES"]
