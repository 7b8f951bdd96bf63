"""Build a :class:`~flexmg.tasks.TaskSource` of code tasks for the code envs.

Example:
    >>> src = make_code_source(split="train", difficulty=1)
    >>> src.get(0).meta["difficulty"]
    1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path

from flexmg.tasks import ListTaskSource, Split, Task

from .loaders import builtin_tasks, load_tasks

__all__ = ["make_code_source"]

TaskSpec = str | PathLike[str] | Sequence[Task] | None


def _resolve(tasks: TaskSpec) -> tuple[list[Task], str]:
    if tasks is None or (isinstance(tasks, str) and tasks == "builtin"):
        return builtin_tasks(), "code-builtin"
    if isinstance(tasks, (str, PathLike)):
        path = Path(tasks)
        if not path.is_file():
            raise FileNotFoundError(
                f"code tasks {str(tasks)!r}: not 'builtin' and not an existing file; pass "
                "None/'builtin', a HumanEval or MBPP jsonl path, or a list of Task"
            )
        stem = path.name.split(".")[0]
        return load_tasks(path), f"code-{stem}"
    if isinstance(tasks, Sequence):
        items = list(tasks)
        bad = [type(t).__name__ for t in items if not isinstance(t, Task)]
        if bad:
            raise TypeError(f"tasks list must hold flexmg.tasks.Task objects, found {bad[0]}")
        return items, "code-list"
    raise TypeError(
        f"tasks must be None, 'builtin', a path or a list of Task, got {type(tasks).__name__}"
    )


def _levels(difficulty: int | Iterable[int] | None) -> set[int] | None:
    if difficulty is None:
        return None
    levels = {difficulty} if isinstance(difficulty, int) else set(difficulty)
    if not levels or not levels <= {1, 2, 3}:
        raise ValueError(f"difficulty must be 1, 2, 3 or a collection of them, got {difficulty!r}")
    return levels


def make_code_source(
    tasks: TaskSpec = None,
    split: Split = "train",
    difficulty: int | Iterable[int] | None = None,
    eval_fraction: float = 0.2,
) -> ListTaskSource:
    """A deterministic code task source.

    Args:
        tasks: ``None`` or ``"builtin"`` (the built-in set), a path to a
            HumanEval / MBPP file (see :func:`load_tasks`), or a list of Task.
        split: ``"train"``, ``"eval"`` or ``"all"``; decided per task id, so
            train and eval never overlap.
        difficulty: keep only tasks of this level (1..3) or these levels.
        eval_fraction: share of tasks held out for ``"eval"``.

    >>> train = make_code_source(split="train")
    >>> held_out = make_code_source(split="eval")
    >>> {t.id for t in train.tasks} & {t.id for t in held_out.tasks}
    set()
    """
    items, name = _resolve(tasks)
    levels = _levels(difficulty)
    if levels is not None:
        items = [t for t in items if int(t.meta.get("difficulty", 0)) in levels]
        name = f"{name}-d{''.join(str(x) for x in sorted(levels))}"
        if not items:
            raise ValueError(f"no code tasks of difficulty {sorted(levels)} in {name!r}")
    return ListTaskSource(items, split=split, eval_fraction=eval_fraction, name=name)
