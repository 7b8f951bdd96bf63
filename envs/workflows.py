"""Moved: the workflows live in their family modules (:mod:`flexmg.envs.families`).

This module keeps the old names importable.

Example:
    >>> from flexmg.envs.workflows import math_2agent
    >>> list(math_2agent.roles)
    ['solver', 'verifier']
"""

from __future__ import annotations

from flexmg.envs.families.code import code_1agent, code_2agent, code_3agent, code_4agent
from flexmg.envs.families.math import math_1agent, math_2agent, math_3agent, math_4agent

__all__ = [
    "code_1agent",
    "code_2agent",
    "code_3agent",
    "code_4agent",
    "math_1agent",
    "math_2agent",
    "math_3agent",
    "math_4agent",
]
