"""Build a :class:`~flexmg.tasks.TaskSource` of code tasks for the code envs.

Example:
    >>> src = make_code_source(split="train", difficulty=1)
    >>> src.get(0).meta["difficulty"]
    1
    >>> make_code_source({"name": "procedural", "difficulty": 2}).get(0).meta["source"]
    'procedural'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from flexmg.tasks import (
    EVAL_FRACTION,
    TEST_FRACTION,
    ListTaskSource,
    Split,
    Task,
    TaskSource,
    task_source_factory,
    task_source_names,
)

from .loaders import builtin_tasks, load_tasks
from .procedural import ProceduralCodeTasks as _registered  # noqa: F401 - its source registers

__all__ = ["DEFAULT_CODE_TASKS", "make_code_source"]

TaskSpec = str | PathLike[str] | Mapping[str, Any] | Sequence[Task] | None

# What ``tasks=None`` means for the code envs. Issue 12 item 4: the default was
# "builtin" (60 hand-written tasks); it is now the procedural family, which
# changes what code-Nagent returns (an env version bump). Put "builtin" back
# here to restore the old default.
DEFAULT_CODE_TASKS = "procedural"


def _resolve(tasks: TaskSpec) -> tuple[list[Task], str]:
    if isinstance(tasks, str) and tasks == "builtin":
        return builtin_tasks(), "code-builtin"
    if isinstance(tasks, (str, PathLike)):
        path = Path(tasks)
        if not path.is_file():
            raise FileNotFoundError(
                f"code tasks {str(tasks)!r}: not a family name and not an existing file; "
                f"pass None, 'builtin', one of {task_source_names('code')} (or a dict "
                "{'name': ..., 'difficulty': 1-5, 'seed': ...}), a HumanEval or MBPP jsonl "
                "path, or a list of Task"
            )
        stem = path.name.split(".")[0]
        return load_tasks(path), f"code-{stem}"
    if isinstance(tasks, Sequence):
        items = [t for t in tasks if isinstance(t, Task)]
        bad = [type(t).__name__ for t in tasks if not isinstance(t, Task)]
        if bad:
            raise TypeError(f"tasks list must hold flexmg.tasks.Task objects, found {bad[0]}")
        return items, "code-list"
    raise TypeError(
        f"tasks must be None, 'builtin', a family name or dict, a path or a list of Task, "
        f"got {type(tasks).__name__}"
    )


def _levels(difficulty: int | Iterable[int] | None) -> set[int] | None:
    if difficulty is None:
        return None
    if isinstance(difficulty, int):
        levels: set[Any] = {difficulty}
    elif isinstance(difficulty, Iterable) and not isinstance(difficulty, (str, bytes)):
        levels = set(difficulty)
    else:
        levels = set()
    if not levels or not levels <= {1, 2, 3} or any(isinstance(d, bool) for d in levels):
        raise ValueError(f"difficulty must be 1, 2, 3 or a collection of them, got {difficulty!r}")
    return levels


def _procedural(
    tasks: str | Mapping[str, Any],
    split: Split,
    difficulty: int | Iterable[int] | None,
    eval_fraction: float,
    test_fraction: float,
) -> TaskSource:
    config: dict[str, Any] = {"name": tasks} if isinstance(tasks, str) else dict(tasks)
    name = config.pop("name", None)
    if name not in task_source_names("code"):
        raise ValueError(
            f"code task config needs a family 'name' from {task_source_names('code')}, got {name!r}"
        )
    if difficulty is not None:
        config["difficulty"] = difficulty
    config.setdefault("eval_fraction", eval_fraction)
    config.setdefault("test_fraction", test_fraction)
    try:
        return task_source_factory(name, "code")(split=split, **config)
    except TypeError as e:
        raise ValueError(
            f"bad options for code task family {name!r}: {e}; it takes difficulty, seed, "
            "eval_fraction, test_fraction and config"
        ) from None


def make_code_source(
    tasks: TaskSpec = None,
    split: Split = "train",
    difficulty: int | Iterable[int] | None = None,
    eval_fraction: float = EVAL_FRACTION,
    test_fraction: float = TEST_FRACTION,
) -> TaskSource:
    """A deterministic code task source.

    Args:
        tasks: ``None`` (:data:`DEFAULT_CODE_TASKS`: the procedural family),
            ``"procedural"`` or ``{"name": "procedural", "difficulty": 2,
            "seed": 0}`` (seeded generated tasks, see
            :class:`~flexmg.envs.code.procedural.ProceduralCodeTasks`),
            ``"builtin"`` (the built-in set), a path to a HumanEval / MBPP
            file (see :func:`load_tasks`), or a list of Task.
        split: ``"train"``, ``"eval"``, ``"test"`` or ``"all"``; the three parts
            never overlap (decided per task id for finite sets, per canonical
            form for the procedural family).
        difficulty: only this level or these levels (1..5 for the procedural
            family, 1..3 for task sets).
        eval_fraction: share of tasks held out for ``"eval"``.
        test_fraction: share of tasks held out for ``"test"`` (final reports).

    >>> train = make_code_source("builtin", split="train")
    >>> held_out = make_code_source("builtin", split="eval")
    >>> {t.id for t in train.tasks} & {t.id for t in held_out.tasks}
    set()
    """
    if tasks is None:
        tasks = DEFAULT_CODE_TASKS
    if isinstance(tasks, Mapping) or (
        isinstance(tasks, str) and tasks in task_source_names("code")
    ):
        return _procedural(tasks, split, difficulty, eval_fraction, test_fraction)
    items, name = _resolve(tasks)
    levels = _levels(difficulty)
    if levels is not None:
        items = [t for t in items if int(t.meta.get("difficulty", 0)) in levels]
        name = f"{name}-d{''.join(str(x) for x in sorted(levels))}"
        if not items:
            raise ValueError(f"no code tasks of difficulty {sorted(levels)} in {name!r}")
    return ListTaskSource(
        items, split=split, eval_fraction=eval_fraction, test_fraction=test_fraction, name=name
    )
