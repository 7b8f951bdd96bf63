"""One entry point for math task sources: :func:`make_math_source`.

Example:
    >>> make_math_source({"name": "linear", "difficulty": 3}).get(0).meta["difficulty"]
    3
    >>> make_math_source({"name": "arithmetic", "max_operand": 50, "ops": "+-"}).config.max_operand
    50
    >>> len(distinct_prompts()) >= 300  # the default task's held-out prompts
    True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flexmg.tasks import (
    ListTaskSource,
    Split,
    Task,
    TaskSource,
    task_source_factory,
    task_source_names,
)

from .generators import ArithmeticGenerator as _registered  # noqa: F401 - the package registers them
from .loaders import FILE_SUFFIXES, FORMATS, is_hf_dataset, load_file, load_hf_dataset

DEFAULT_TASKS = "arithmetic"


def _known() -> str:
    return (
        f"known generators: {task_source_names('math')} (or {{'name': ..., 'difficulty': 1-5, "
        "config fields...}}); "
        f"dataset files {list(FILE_SUFFIXES)} in formats {list(FORMATS)}; a Hugging Face "
        "datasets.Dataset; or a list of flexmg.tasks.Task"
    )


def make_math_source(tasks: Any = None, split: Split = "train", **cfg: Any) -> TaskSource:
    """Build a math task source from a generator name/config, a file, a dataset or tasks.

    Args:
        tasks: ``None`` (arithmetic, difficulty 1), a generator name, a dict
            ``{"name": ..., "difficulty": ..., **config fields}`` (e.g.
            ``{"name": "arithmetic", "max_operand": 50, "ops": "+-"}``), a path to a dataset file, a
            Hugging Face ``datasets.Dataset``, or a list of :class:`Task`.
        split: ``"train"``, ``"eval"``, ``"test"`` or ``"all"``; the three parts never
            overlap.
        **cfg: generator kwargs (``difficulty``, ``seed``, ``eval_fraction``,
            ``test_fraction``), or for finite sources those fractions and ``name``.

    >>> make_math_source().get(0).meta["generator"]
    'arithmetic'
    >>> make_math_source("nope")
    Traceback (most recent call last):
    ...
    ValueError: unknown math task source 'nope'; known generators: ...
    """
    if tasks is None:
        tasks = DEFAULT_TASKS
    if isinstance(tasks, Mapping):
        config = dict(tasks)
        name = config.pop("name", None)
        if name not in task_source_names("math"):
            raise ValueError(f"task config needs a generator 'name'; got {name!r}; {_known()}")
        return task_source_factory(name, "math")(split=split, **{**config, **cfg})
    if isinstance(tasks, str) and tasks in task_source_names("math"):
        return task_source_factory(tasks, "math")(split=split, **cfg)
    finite_cfg = {k: v for k, v in cfg.items() if k in ("eval_fraction", "test_fraction", "name")}
    unknown = set(cfg) - set(finite_cfg)
    if isinstance(tasks, (str, Path)):
        path = Path(tasks)
        if not path.name.lower().endswith(FILE_SUFFIXES):
            raise ValueError(f"unknown math task source {str(tasks)!r}; {_known()}")
        _no_extra(unknown)
        loaded = load_file(path)
        return ListTaskSource(
            loaded, split=split, **{"name": loaded[0].id.split("/")[0], **finite_cfg}
        )
    if is_hf_dataset(tasks):
        _no_extra(unknown)
        loaded = load_hf_dataset(tasks, finite_cfg.get("name"))
        return ListTaskSource(
            loaded, split=split, **{"name": loaded[0].id.split("/")[0], **finite_cfg}
        )
    if isinstance(tasks, Sequence) and tasks and all(isinstance(t, Task) for t in tasks):
        _no_extra(unknown)
        return ListTaskSource(list(tasks), split=split, **{"name": "tasks", **finite_cfg})
    raise ValueError(f"unknown math task source {tasks!r:.80}; {_known()}")


def _no_extra(unknown: set[str]) -> None:
    if unknown:
        raise ValueError(
            f"unexpected options {sorted(unknown)} for a finite task source; "
            "only 'eval_fraction', 'test_fraction' and 'name' apply (generator options need a generator name)"
        )


def distinct_prompts(tasks: Any = None, split: Split = "eval", **cfg: Any) -> list[str]:
    """The sorted distinct prompts of a math task source's ``split`` (default: held out).

    Works for generators whose problem space is enumerable (the default task)
    and for finite sources (files, datasets, task lists); other generators
    raise ``TypeError``. Same arguments as :func:`make_math_source`.

    >>> distinct_prompts({"name": "arithmetic", "max_operand": 2}, split="all")[:2]
    ['What is 0 + 0?', 'What is 0 + 1?']
    """
    source = make_math_source(tasks, split=split, **cfg)
    prompts = getattr(source, "distinct_prompts", None)
    if prompts is None:
        raise TypeError(f"cannot list the prompts of {source!r}")
    return prompts()
