"""Math tasks for flexmg: the boxed-answer grader, task generators, dataset loaders.

Example:
    >>> from flexmg.envs.math import grade, make_math_source
    >>> task = make_math_source("arithmetic").get(0)
    >>> grade("\\\\boxed{" + task.answer + "}", task.answer)
    1.0
"""

from __future__ import annotations

from .boxed import extract_boxed
from .grader import REASONS, GradeResult, configure, grade, grade_detailed, shutdown
from .settings import DATASET_DEFAULTS, GradingSettings, settings_for_task
from .sources import distinct_prompts, make_math_source

__all__ = [
    "DATASET_DEFAULTS",
    "REASONS",
    "GradeResult",
    "GradingSettings",
    "configure",
    "distinct_prompts",
    "extract_boxed",
    "grade",
    "grade_detailed",
    "make_math_source",
    "settings_for_task",
    "shutdown",
]
