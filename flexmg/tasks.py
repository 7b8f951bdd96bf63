"""Tasks and task sources: what an episode is about.

A *task* is one problem instance (a math question with its gold answer, a
function to write with its hidden tests). A *task source* produces tasks
deterministically from ``(seed, index)`` so that ``env.reset(seed=s)`` always
yields the same episode.

Example:
    >>> from flexmg.tasks import Task, ListTaskSource
    >>> src = ListTaskSource([Task(id="t0", prompt="1+1?", answer="2")])
    >>> src.get(0).answer
    '2'
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Split = Literal["train", "eval", "all"]

# Seeds at or above this value address the held-out evaluation stream of
# procedural sources; training seeds live below it. Keeping the two streams
# apart by construction means train and eval tasks never overlap.
EVAL_SEED_OFFSET = 1 << 40


@dataclass(frozen=True)
class Task:
    """One problem instance.

    Attributes:
        id: stable identifier (dataset record id or ``generator/seed``).
        prompt: the text shown to the agents.
        answer: the gold answer (math) or reference solution (code), never shown.
        meta: anything else the verifier needs (hidden tests, entry point, difficulty).
    """

    id: str
    prompt: str
    answer: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@runtime_checkable
class TaskSource(Protocol):
    """Anything that yields tasks deterministically by index.

    ``get(index)`` must return the same task for the same index on every call
    and on every machine. ``__len__`` may be ``None``-like (raise ``TypeError``)
    for infinite procedural sources; finite sources return their size.
    """

    name: str

    def get(self, index: int) -> Task: ...


def stable_hash(*parts: object) -> int:
    """A 64-bit hash that is stable across processes (unlike ``hash()``).

    >>> stable_hash("a", 1) == stable_hash("a", 1)
    True
    """
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(repr(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "little")


def in_eval_split(task_id: str, eval_fraction: float = 0.2) -> bool:
    """Deterministic train/eval assignment of a dataset record by its id.

    >>> isinstance(in_eval_split("gsm8k/17"), bool)
    True
    """
    return (stable_hash("split", task_id) % 10_000) < int(eval_fraction * 10_000)


class ListTaskSource:
    """A finite, in-memory task source with a deterministic train/eval split.

    Args:
        tasks: the tasks.
        split: ``"train"``, ``"eval"`` or ``"all"``; the split is decided per
            task id by :func:`in_eval_split`, so it never overlaps.
        eval_fraction: share of tasks held out for evaluation.
        name: a label used in logs.

    >>> src = ListTaskSource([Task(id=str(i), prompt="p") for i in range(10)], split="all")
    >>> len(src)
    10
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        split: Split = "all",
        eval_fraction: float = 0.2,
        name: str = "list",
    ) -> None:
        if split not in ("train", "eval", "all"):
            raise ValueError(f"split must be 'train', 'eval' or 'all', got {split!r}")
        if split == "all":
            chosen = list(tasks)
        else:
            want_eval = split == "eval"
            chosen = [t for t in tasks if in_eval_split(t.id, eval_fraction) == want_eval]
        if not chosen:
            raise ValueError(
                f"task source {name!r} has no tasks in split {split!r} "
                f"({len(tasks)} tasks before splitting)"
            )
        self.tasks = chosen
        self.split = split
        self.name = name

    def __len__(self) -> int:
        return len(self.tasks)

    def distinct_prompts(self) -> list[str]:
        """The sorted distinct prompts of this split.

        >>> ListTaskSource([Task(id=str(i), prompt="p") for i in range(3)]).distinct_prompts()
        ['p']
        """
        return sorted({t.prompt for t in self.tasks})

    def get(self, index: int) -> Task:
        return self.tasks[index % len(self.tasks)]

    def __repr__(self) -> str:
        return f"ListTaskSource(name={self.name!r}, split={self.split!r}, n={len(self.tasks)})"
