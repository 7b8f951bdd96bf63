"""Procedural math task generators: seeded, infinite, answers computed exactly.

One module per generator (``arithmetic``, ``chain``, ``fractions``,
``linear``, ``word``), each with a config dataclass, a difficulty -> config
table and its registration at the bottom; :mod:`.base` holds what they share.
Pick one by name and override any config field:
``make_math_source({"name": "arithmetic", "max_operand": 50, "ops": "+-"})``.

Example:
    >>> from flexmg.tasks import task_source_factory
    >>> src = task_source_factory("arithmetic", "math")(difficulty=1)
    >>> task = src.get(0)
    >>> task.prompt.startswith("What is"), src.get(0) == task
    (True, True)
"""

from __future__ import annotations

from .arithmetic import ArithmeticConfig, ArithmeticGenerator
from .base import (
    MAX_REDRAWS,
    Generator,
    GeneratorConfig,
    Problem,
    format_number,
    plain_fraction,
    register_generator,
)
from .chain import ChainConfig, ChainGenerator
from .fractions import FractionsConfig, FractionsGenerator
from .linear import LinearConfig, LinearGenerator
from .word import WordConfig, WordGenerator

__all__ = [
    "MAX_REDRAWS",
    "ArithmeticConfig",
    "ArithmeticGenerator",
    "ChainConfig",
    "ChainGenerator",
    "FractionsConfig",
    "FractionsGenerator",
    "Generator",
    "GeneratorConfig",
    "LinearConfig",
    "LinearGenerator",
    "Problem",
    "WordConfig",
    "WordGenerator",
    "format_number",
    "plain_fraction",
    "register_generator",
]
