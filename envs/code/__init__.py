"""Code tasks for the code-Nagent envs: task sets, code extraction and grading.

Example:
    >>> from flexmg.envs.code import builtin_tasks, extract_code, make_code_source
    >>> src = make_code_source(split="train")
    >>> task = src.get(0)
    >>> extract_code("```python\\n" + task.answer + "```") == task.answer.rstrip()
    True
"""

from .agent_tests import extract_agent_tests, run_agent_tests
from .extract import extract_code, find_code_blocks, python_blocks
from .grading import GRADE_STATUSES, CodeGrade, grade_code, grade_many
from .loaders import BUILTIN_TASKS_PATH, builtin_tasks, load_tasks
from .procedural import (
    DIFFICULTY_CONFIGS,
    ProceduralCodeConfig,
    ProceduralCodeTasks,
    canonical_key,
    reference_solution,
    wrong_solution,
    wrong_solutions,
)
from .program import Program, assemble_program, build_program
from .source import DEFAULT_CODE_TASKS, make_code_source

__all__ = [
    "BUILTIN_TASKS_PATH",
    "DEFAULT_CODE_TASKS",
    "DIFFICULTY_CONFIGS",
    "GRADE_STATUSES",
    "CodeGrade",
    "ProceduralCodeConfig",
    "ProceduralCodeTasks",
    "Program",
    "assemble_program",
    "build_program",
    "builtin_tasks",
    "canonical_key",
    "extract_agent_tests",
    "extract_code",
    "find_code_blocks",
    "grade_code",
    "grade_many",
    "load_tasks",
    "make_code_source",
    "python_blocks",
    "reference_solution",
    "run_agent_tests",
    "wrong_solution",
    "wrong_solutions",
]
