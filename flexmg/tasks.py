"""Tasks and task sources: what an episode is about.

A *task* is one problem instance (a math question with its gold answer, a
function to write with its hidden tests). A *task source* produces tasks
deterministically from ``(seed, index)`` so that ``env.reset(seed=s)`` always
yields the same episode.

Named task sources (procedural generators of the env families) live in one
registry: :func:`register_task_source` adds a factory under a name and a kind
(``"math"``, ``"code"``), and a family's ``tasks=`` keyword finds it by name
(:func:`task_source_factory`).

Example:
    >>> from flexmg.tasks import Task, ListTaskSource
    >>> src = ListTaskSource([Task(id="t0", prompt="1+1?", answer="2")])
    >>> src.get(0).answer
    '2'
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Split = Literal["train", "eval", "test", "all"]
SPLITS: tuple[str, ...] = ("train", "eval", "test", "all")
"""The splits every task source takes: three disjoint parts and their union."""

EVAL_FRACTION = 0.2
"""Default share of problems held out for evaluation during training (curves, tuning)."""
TEST_FRACTION = 0.2
"""Default share of problems held out for final reports only (nothing is tuned on them)."""

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


def check_split(split: object, fractions: tuple[float, float] | None = None) -> None:
    """Raise ``ValueError`` unless ``split`` is a split name and the fractions leave a train part.

    >>> check_split("dev")
    Traceback (most recent call last):
    ...
    ValueError: split must be one of 'train', 'eval', 'test', 'all'; got 'dev'
    >>> check_split("test", (0.5, 0.5))
    Traceback (most recent call last):
    ...
    ValueError: eval_fraction + test_fraction must leave a train part: got 0.5 + 0.5
    """
    if split not in SPLITS:
        names = ", ".join(repr(s) for s in SPLITS)
        raise ValueError(f"split must be one of {names}; got {split!r}")
    if fractions is None:
        return
    eval_fraction, test_fraction = fractions
    for name, value, low in (("eval_fraction", eval_fraction, 0.0),
                             ("test_fraction", test_fraction, -1.0)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value < 1:
            bound = "strictly between 0 and 1" if low == 0.0 else "in [0, 1)"
            raise ValueError(f"{name} must be {bound}, got {value!r}")
    if eval_fraction + test_fraction >= 1.0:
        raise ValueError(
            "eval_fraction + test_fraction must leave a train part: "
            f"got {eval_fraction} + {test_fraction}"
        )


def split_of(
    key: str, eval_fraction: float = EVAL_FRACTION, test_fraction: float = TEST_FRACTION
) -> str:
    """The split (``"train"``, ``"eval"`` or ``"test"``) of a problem, by a hash of ``key``.

    ``key`` is what makes two problems the same (a dataset record id, a
    generator's canonical form), so equivalent problems never straddle splits.
    The hash's first ``eval_fraction`` is eval, the next ``test_fraction`` is
    test, the rest is train: changing ``test_fraction`` never moves a problem
    in or out of eval.

    >>> split_of("gsm8k/17") in ("train", "eval", "test")
    True
    >>> sum(split_of(str(i)) == "test" for i in range(10_000)) / 10_000
    0.2071
    """
    bucket = stable_hash("split", key) % 10_000
    if bucket < int(eval_fraction * 10_000):
        return "eval"
    if bucket < int(round((eval_fraction + test_fraction) * 10_000)):
        return "test"
    return "train"


def in_split(
    key: str,
    split: str,
    eval_fraction: float = EVAL_FRACTION,
    test_fraction: float = TEST_FRACTION,
) -> bool:
    """Whether the problem named ``key`` belongs to ``split`` (``"all"``: always).

    >>> in_split("gsm8k/17", "all")
    True
    """
    return split == "all" or split_of(key, eval_fraction, test_fraction) == split


class ListTaskSource:
    """A finite, in-memory task source with a deterministic train/eval split.

    Args:
        tasks: the tasks.
        split: ``"train"``, ``"eval"``, ``"test"`` or ``"all"``; the split is
            decided per task id by :func:`split_of`, so they never overlap.
        eval_fraction: share of tasks held out for evaluation.
        test_fraction: share of tasks held out for final reports.
        name: a label used in logs.

    >>> src = ListTaskSource([Task(id=str(i), prompt="p") for i in range(10)], split="all")
    >>> len(src)
    10
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        split: Split = "all",
        eval_fraction: float = EVAL_FRACTION,
        name: str = "list",
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        check_split(split, (eval_fraction, test_fraction))
        chosen = [t for t in tasks if in_split(t.id, split, eval_fraction, test_fraction)]
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


# ----------------------------------------------------------------------------- the registry
TaskSourceFactory = Callable[..., Any]
"""``factory(split=..., **config)`` -> a :class:`TaskSource` (e.g. a generator class)."""


@dataclass(frozen=True)
class NamedSource:
    """A registered task source: its name, the kind of tasks it makes, its factory."""

    name: str
    kind: str
    factory: TaskSourceFactory


TASK_SOURCES: dict[str, NamedSource] = {}
"""Every named task source, by name (math generators, the procedural code family, ...)."""


def register_task_source(name: str, factory: TaskSourceFactory, kind: str) -> None:
    """Make ``factory`` the task source ``name`` of ``kind`` (a name is taken once).

    >>> register_task_source("arithmetic", lambda **c: None, "math")
    Traceback (most recent call last):
    ...
    ValueError: a task source named 'arithmetic' is already registered (math)
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"a task source needs a non-empty name, got {name!r}")
    known = TASK_SOURCES.get(name)
    if known is not None and known.factory is not factory:
        raise ValueError(f"a task source named {name!r} is already registered ({known.kind})")
    TASK_SOURCES[name] = NamedSource(name, kind, factory)


def task_source_names(kind: str | None = None) -> list[str]:
    """The names of the registered task sources (of one ``kind``), sorted.

    >>> import flexmg.envs.math
    >>> task_source_names("math")
    ['arithmetic', 'chain', 'fractions', 'linear', 'word']
    """
    return sorted(n for n, s in TASK_SOURCES.items() if kind is None or s.kind == kind)


def task_source_factory(name: str, kind: str) -> TaskSourceFactory:
    """The factory of the task source ``name`` of ``kind`` (``KeyError`` naming the known ones)."""
    found = TASK_SOURCES.get(name)
    if found is None or found.kind != kind:
        raise KeyError(f"no {kind} task source {name!r}; known: {task_source_names(kind)}")
    return found.factory
