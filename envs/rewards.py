"""Moved: each reward lives in its family module (:mod:`flexmg.envs.families`).

This module keeps the old names importable.

Example:
    >>> from flexmg.envs.rewards import MathReward
    >>> MathReward(grade_timeout=2.0).grade_timeout
    2.0
"""

from __future__ import annotations

from flexmg.envs.families.code import CodeReward, code_task_source
from flexmg.envs.families.math import MathReward, math_task_source

__all__ = ["CodeReward", "MathReward", "code_task_source", "math_task_source"]
