"""A seeded, procedural family of small code tasks with hidden tests.

Every task asks for one tiny function ``f`` ("Write `f(x)` that returns
x * 3 + 1.", "... the list xs with every element multiplied by 2", "... the
first 3 characters of s", conditionals from difficulty 3), small enough for a
character-level language model to learn to write. Each task carries:

* a canonical reference solution (``task.answer``, :func:`reference_solution`),
  so a scripted oracle scores 1.0 through the real sandbox;
* hidden tests (``meta["tests"]``: ``assert f(...) == ...`` lines whose
  expected values come from interpreting the task's spec, never from running
  code); the first one is the example shown in the prompt;
* systematic wrong variants (:func:`wrong_solution`: a constant one off, a
  wrong operator or comparison, a missing step, swapped branches), each
  checked to fail at least one hidden test, for noisy-teacher warm starts.

Train and eval never share a task or an equivalent one: the split is decided
by a stable hash of the task's canonical form (its behaviour on fixed probe
inputs, :func:`~flexmg.envs.code.procedural_spec.canonical_form`), so
``x + 2 + 1`` and ``x + 3`` always land on the same side.

Example:
    >>> src = ProceduralCodeTasks(difficulty=1, split="eval")
    >>> task = src.get(0)
    >>> task.prompt.startswith("Write `f("), task.meta["difficulty"], task.meta["entry_point"]
    (True, 1, 'f')
    >>> src.get(0) == task and reference_solution(task) == task.answer
    True
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from flexmg.tasks import (
    EVAL_FRACTION,
    TEST_FRACTION,
    Split,
    Task,
    check_split,
    in_split,
    register_task_source,
    stable_hash,
)

from .procedural_spec import (
    COMPARISONS,
    KINDS,
    MULTIPLICATIVE,
    Spec,
    behaviour,
    call_text,
    canonical_form,
    evaluate,
    mutations,
    outcome,
    render_code,
    render_prompt,
)

__all__ = [
    "DEFAULT_DIFFICULTIES",
    "DIFFICULTY_CONFIGS",
    "ProceduralCodeConfig",
    "ProceduralCodeTasks",
    "canonical_key",
    "reference_solution",
    "wrong_solution",
    "wrong_solutions",
]

#: The difficulty mix of ``make_code_source("procedural")`` (levels drawn uniformly per index).
DEFAULT_DIFFICULTIES: tuple[int, ...] = (1, 2)
MAX_REDRAWS = 10_000
_ARITH_OPS = ("+", "-", "*", "//", "%")
_REDUCTIONS = ("sum", "len", "max", "min")
_STRING_LITERALS = ("!", "ab", "xyz", "?", "-")
_LETTERS = string.ascii_lowercase + "ABCDEFXYZ"


@dataclass(frozen=True)
class ProceduralCodeConfig:
    """How one difficulty level draws its tasks (see :data:`DIFFICULTY_CONFIGS`).

    >>> ProceduralCodeConfig(n_tests=1).validate()
    Traceback (most recent call last):
    ...
    ValueError: n_tests must be an int from 3 to 50 (hidden tests per task), got 1
    """

    kinds: tuple[str, ...] = ("arith", "binary", "list_map", "list_reduce", "string")
    """Kinds of function drawn, uniformly: any of ``procedural_spec.KINDS``."""
    operations: tuple[int, int] = (1, 1)
    """Least and most operations per task; an arithmetic step, a filter, a
    reduction, a binary operator and a string operation count one each."""
    ops: tuple[str, ...] = ("+", "-", "*")
    """Arithmetic operators a step may use: ``+ - * // %``."""
    max_const: int = 9
    """Constants are drawn from 1..max_const (2..max_const for ``* // %``);
    comparison thresholds from 0..max_const."""
    comparisons: tuple[str, ...] = ()
    """Comparisons a filter or a branch may use (``> < >= <= == != even odd``);
    empty: no filters and no branches."""
    filter_rate: float = 0.0
    """Chance that a list task keeps only the elements meeting a condition."""
    branches: int = 0
    """Most ``if`` arms of a ``branch`` task before its otherwise-value."""
    negative_thresholds: bool = False
    """Whether comparison thresholds may be negative (-max_const..max_const)."""
    n_tests: int = 5
    """Hidden tests per task (the first is the prompt's example)."""
    input_range: int = 20
    """Test integers (arguments, list elements) lie in -input_range..input_range."""
    show_example: bool = True
    """Whether the prompt shows one example call and its result."""

    def validate(self) -> None:
        """Raise ValueError naming the first bad field and what it accepts."""
        if not self.kinds or len(set(self.kinds)) != len(self.kinds):
            raise ValueError(f"kinds must be distinct names from {KINDS}, got {self.kinds!r}")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown kinds {unknown}; known kinds: {KINDS}")
        lo, hi = _pair(self.operations, "operations")
        if not 1 <= lo <= hi <= 6:
            raise ValueError(
                f"operations must be (least, most) with 1 <= least <= most <= 6, got {self.operations!r}"
            )
        if not self.ops or any(op not in _ARITH_OPS for op in self.ops):
            raise ValueError(f"ops must be a non-empty subset of {_ARITH_OPS}, got {self.ops!r}")
        if not _int_in(self.max_const, 2, 99):
            raise ValueError(f"max_const must be an int from 2 to 99, got {self.max_const!r}")
        bad = [c for c in self.comparisons if c not in COMPARISONS]
        if bad:
            raise ValueError(f"unknown comparisons {bad}; known: {tuple(COMPARISONS)}")
        if not 0.0 <= self.filter_rate <= 1.0:
            raise ValueError(f"filter_rate must lie in [0, 1], got {self.filter_rate!r}")
        if self.filter_rate > 0 and not self.comparisons:
            raise ValueError("filter_rate > 0 needs at least one entry in comparisons")
        if not _int_in(self.branches, 0, 4):
            raise ValueError(f"branches must be an int from 0 to 4, got {self.branches!r}")
        if "branch" in self.kinds and (self.branches < 1 or not self.comparisons):
            raise ValueError("kind 'branch' needs branches >= 1 and at least one comparison")
        if not _int_in(self.n_tests, 3, 50):
            raise ValueError(
                f"n_tests must be an int from 3 to 50 (hidden tests per task), got {self.n_tests!r}"
            )
        if not _int_in(self.input_range, self.max_const, 10_000):
            raise ValueError(
                f"input_range must be an int from max_const ({self.max_const}) to 10000 so "
                f"thresholds fall among the test inputs, got {self.input_range!r}"
            )


def _pair(value: Any, name: str) -> tuple[int, int]:
    if not (isinstance(value, tuple) and len(value) == 2 and all(_int_in(v, 0, 99) for v in value)):
        raise ValueError(f"{name} must be a (least, most) tuple of ints, got {value!r}")
    return value


def _int_in(value: Any, lo: int, hi: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi


_LIST_KINDS = ("arith", "binary", "list_map", "list_reduce", "string")

#: Difficulty level -> how its tasks are drawn. 1: one operation; 2: two, with
#: list filters; 3: conditionals; 4: ``//``, ``%``, parity, two-arm branches;
#: 5: longer chains, negative thresholds, equality tests.
DIFFICULTY_CONFIGS: dict[int, ProceduralCodeConfig] = {
    1: ProceduralCodeConfig(max_const=12),
    2: ProceduralCodeConfig(
        operations=(1, 2), max_const=15, comparisons=(">", "<"), filter_rate=0.4, n_tests=6
    ),
    3: ProceduralCodeConfig(
        kinds=(*_LIST_KINDS, "branch"),
        operations=(2, 3),
        comparisons=(">", "<", ">=", "<="),
        filter_rate=0.5,
        branches=1,
        n_tests=7,
    ),
    4: ProceduralCodeConfig(
        kinds=(*_LIST_KINDS, "branch"),
        operations=(2, 3),
        ops=_ARITH_OPS,
        max_const=12,
        comparisons=(">", "<", ">=", "<=", "even", "odd"),
        filter_rate=0.5,
        branches=2,
        n_tests=8,
        input_range=30,
    ),
    5: ProceduralCodeConfig(
        kinds=(*_LIST_KINDS, "branch"),
        operations=(3, 4),
        ops=_ARITH_OPS,
        max_const=20,
        comparisons=tuple(COMPARISONS),
        filter_rate=0.6,
        branches=2,
        negative_thresholds=True,
        n_tests=10,
        input_range=40,
    ),
}

# ----------------------------------------------------------------- drawing


def _redundant(prev: str | None, op: str) -> bool:
    """``x + 2 - 1``, ``x * 2 * 3`` and ``x // 2 // 3`` are one step written twice."""
    if prev is None:
        return False
    return prev == op or (prev in "+-" and op in "+-")


def _draw_steps(rng: random.Random, cfg: ProceduralCodeConfig, n: int) -> list[list[Any]]:
    steps: list[list[Any]] = []
    while len(steps) < n:
        op = rng.choice(cfg.ops)
        if _redundant(steps[-1][0] if steps else None, op):
            continue
        steps.append([op, rng.randint(2 if op in MULTIPLICATIVE else 1, cfg.max_const)])
    return steps


def _draw_cond(rng: random.Random, cfg: ProceduralCodeConfig) -> list[Any]:
    cmp = rng.choice(cfg.comparisons)
    if cmp in ("even", "odd"):
        return [cmp, 0]
    return [cmp, rng.randint(-cfg.max_const if cfg.negative_thresholds else 0, cfg.max_const)]


def _draw_string_ops(rng: random.Random, n: int) -> list[list[Any]]:
    ops: list[list[Any]] = []
    while len(ops) < n:
        name = rng.choice(("head", "tail", "drop", "reverse", "upper", "lower", "repeat", "append"))
        prev = ops[-1][0] if ops else None
        if name == prev or {name, prev} == {"upper", "lower"}:
            continue
        k: Any = 0
        if name in ("head", "tail", "drop"):
            k = rng.randint(1, 5)
        elif name == "repeat":
            k = rng.randint(2, 3)
        elif name == "append":
            k = rng.choice(_STRING_LITERALS)
        ops.append([name, k])
    return ops


def _draw_spec(rng: random.Random, cfg: ProceduralCodeConfig) -> Spec:
    kind = rng.choice(cfg.kinds)
    n = rng.randint(*cfg.operations)
    if kind == "arith":
        return {"kind": kind, "steps": _draw_steps(rng, cfg, n)}
    if kind == "binary":
        return {
            "kind": kind,
            "op": rng.choice(("+", "-", "*", "max", "min")),
            "steps": _draw_steps(rng, cfg, n - 1),
        }
    if kind == "branch":
        arms: list[list[Any]] = []
        for _ in range(rng.randint(1, cfg.branches)):
            cond = _draw_cond(rng, cfg)
            if all(cond[0] != arm[0][0] for arm in arms):
                arms.append([cond, _draw_steps(rng, cfg, rng.randint(1, max(1, n - 1)))])
        return {
            "kind": kind,
            "arms": arms,
            "otherwise": _draw_steps(rng, cfg, rng.randint(0, n - 1)),
        }
    if kind == "list_map":
        keep = _draw_cond(rng, cfg) if cfg.filter_rate and rng.random() < cfg.filter_rate else None
        return {"kind": kind, "steps": _draw_steps(rng, cfg, n - (keep is not None)), "keep": keep}
    if kind == "list_reduce":
        reduce = rng.choice(_REDUCTIONS)
        left = n - 1
        keep = None
        filtered = bool(cfg.comparisons) and (reduce == "len" or rng.random() < cfg.filter_rate)
        if left and reduce in ("sum", "len") and filtered:  # len only grows by a filter
            keep, left = _draw_cond(rng, cfg), left - 1
        steps = [] if reduce == "len" else _draw_steps(rng, cfg, left)
        return {"kind": kind, "reduce": reduce, "steps": steps, "keep": keep}
    return {"kind": "string", "ops": _draw_string_ops(rng, n)}


def _degenerate(spec: Spec, outcomes: tuple[str, ...]) -> bool:
    """Whether ``spec`` is degenerate, judged by its ``outcomes`` on the probe inputs.

    Degenerate means a constant function, a step that changes nothing
    (``s[:3][-5:]``), or a branch that behaves like one of its arms.
    """
    if len(set(outcomes)) == 1:
        return True
    if any(
        label == "missing_step" and behaviour(shorter) == outcomes
        for label, shorter in mutations(spec)
    ):
        return True
    if spec["kind"] != "branch":
        return False
    plain = [steps for _, steps in spec["arms"]] + [spec["otherwise"]]
    return any(behaviour({"kind": "arith", "steps": steps}) == outcomes for steps in plain)


def _draw_int(rng: random.Random, cfg: ProceduralCodeConfig) -> int:
    return rng.randint(-cfg.input_range, cfg.input_range)


def _draw_args(rng: random.Random, cfg: ProceduralCodeConfig, spec: Spec) -> list[Any]:
    kind = spec["kind"]
    if kind in ("arith", "branch"):
        return [_draw_int(rng, cfg)]
    if kind == "binary":
        return [_draw_int(rng, cfg), _draw_int(rng, cfg)]
    if kind in ("list_map", "list_reduce"):
        least = 1 if spec.get("reduce") in ("max", "min") else 0
        return [[_draw_int(rng, cfg) for _ in range(rng.randint(least, 6))]]
    return ["".join(rng.choice(_LETTERS) for _ in range(rng.randint(0, 10)))]


def _example_args(rng: random.Random, spec: Spec) -> list[Any]:
    """A small, readable first input (it is shown in the prompt)."""
    kind = spec["kind"]
    if kind in ("arith", "branch"):
        return [rng.randint(0, 9)]
    if kind == "binary":
        return [rng.randint(0, 9), rng.randint(0, 9)]
    if kind in ("list_map", "list_reduce"):
        return [[rng.randint(0, 9) for _ in range(3)]]
    return ["".join(rng.choice(_LETTERS) for _ in range(6))]


def _edge_args(spec: Spec) -> list[list[Any]]:
    """Inputs every task of this spec should be tested on: thresholds and empties."""
    kind = spec["kind"]
    if kind == "branch":
        edges: list[list[Any]] = []
        for (cmp, c), _ in spec["arms"]:
            edges += [[c - 1], [c], [c + 1]] if cmp not in ("even", "odd") else [[0], [7]]
        return edges
    if kind in ("list_map", "list_reduce") and spec.get("reduce") not in ("max", "min"):
        return [[[]]]
    if kind == "string":
        return [[""]]
    return []


def _draw_inputs(rng: random.Random, cfg: ProceduralCodeConfig, spec: Spec) -> list[list[Any]]:
    """Distinct test inputs: the example first, then edge cases, then random ones."""
    inputs: list[list[Any]] = []
    seen: set[str] = set()
    candidates = [_example_args(rng, spec), *_edge_args(spec)]
    for attempt in range(100 * cfg.n_tests):
        if len(inputs) >= cfg.n_tests:
            break
        args = candidates[attempt] if attempt < len(candidates) else _draw_args(rng, cfg, spec)
        if repr(args) not in seen:
            seen.add(repr(args))
            inputs.append(args)
    return inputs


# ----------------------------------------------------------------- the source


def _levels(difficulty: int | Iterable[int] | None) -> tuple[int, ...]:
    if difficulty is None:
        return DEFAULT_DIFFICULTIES
    if isinstance(difficulty, int):
        levels: tuple[Any, ...] = (difficulty,)
    elif isinstance(difficulty, Iterable) and not isinstance(difficulty, (str, bytes)):
        levels = tuple(difficulty)
    else:
        levels = ()
    if not levels or not all(_int_in(d, 1, 5) for d in levels):
        raise ValueError(
            f"procedural code tasks: difficulty must be an int from 1 to 5 or a collection "
            f"of them, got {difficulty!r}"
        )
    return tuple(sorted(set(levels)))


class ProceduralCodeTasks:
    """An infinite, seeded task source of small code tasks (a flexmg ``TaskSource``).

    Args:
        difficulty: a level 1..5, several levels (drawn uniformly per index),
            or ``None`` for :data:`DEFAULT_DIFFICULTIES`.
        seed: selects an independent stream of tasks.
        split: ``"train"``, ``"eval"`` or ``"all"``; decided on the canonical
            form, so equivalent tasks never straddle train and eval.
        eval_fraction: share of canonical forms reserved for evaluation.
        config: draw every level with this config instead of
            :data:`DIFFICULTY_CONFIGS` (the level is then only a label).

    >>> src = ProceduralCodeTasks(difficulty=[1, 3], seed=7)
    >>> sorted({src.get(i).meta["difficulty"] for i in range(20)})
    [1, 3]
    """

    family: ClassVar[str] = "procedural"

    def __init__(
        self,
        difficulty: int | Iterable[int] | None = None,
        seed: int = 0,
        split: Split = "train",
        eval_fraction: float = EVAL_FRACTION,
        config: ProceduralCodeConfig | None = None,
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        self.levels = _levels(difficulty)
        check_split(split, (eval_fraction, test_fraction))
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if config is not None:
            if not isinstance(config, ProceduralCodeConfig):
                raise TypeError(
                    f"config must be a ProceduralCodeConfig, got {type(config).__name__}"
                )
            config.validate()
        self.configs = {d: config or DIFFICULTY_CONFIGS[d] for d in self.levels}
        self.seed = seed
        self.split = split
        self.eval_fraction = eval_fraction
        self.test_fraction = test_fraction
        self.name = f"code-{self.family}-d{''.join(str(d) for d in self.levels)}"

    def level_of(self, index: int) -> int:
        """The difficulty level of the task at ``index``."""
        if len(self.levels) == 1:
            return self.levels[0]
        return self.levels[stable_hash(self.family, "level", self.seed, index) % len(self.levels)]

    def get(self, index: int) -> Task:
        """The task at ``index`` (any int; the same on every call and machine)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"task index must be an int, got {index!r}")
        level = self.level_of(index)
        cfg = self.configs[level]
        for attempt in range(MAX_REDRAWS):
            rng = random.Random(
                stable_hash(self.family, level, self.seed, self.split, index, attempt)
            )
            spec = _draw_spec(rng, cfg)
            outcomes = behaviour(spec)
            if _degenerate(spec, outcomes):
                continue
            form = canonical_form(spec, outcomes)
            if in_split(form, self.split, self.eval_fraction, self.test_fraction):
                return self._task(spec, form, level, index, cfg)
        raise RuntimeError(
            f"{self.name}: no task landed in split {self.split!r} after {MAX_REDRAWS} draws"
        )

    def _task(
        self,
        spec: Spec,
        form: str,
        level: int,
        index: int,
        cfg: ProceduralCodeConfig,
    ) -> Task:
        code = render_code(spec)
        # The tests depend only on the function and the config: one prompt per function.
        inputs = _draw_inputs(random.Random(stable_hash("inputs", code, cfg)), cfg, spec)
        tests = [f"assert {call_text(spec, args)} == {evaluate(spec, args)!r}" for args in inputs]
        meta: dict[str, Any] = {
            "entry_point": "f",
            "tests": tests,
            "difficulty": level,
            "category": spec["kind"],
            "source": self.family,
            "spec": spec,
            "inputs": inputs,
            "canonical": f"{stable_hash('canonical', form):016x}",
            "seed": self.seed,
            "index": index,
            "split": self.split,
        }
        return Task(
            id=f"{self.family}/d{level}/s{self.seed}/{self.split}/{index}",
            prompt=render_prompt(spec, inputs[0] if cfg.show_example else None),
            answer=code,
            meta=meta,
        )

    def __len__(self) -> int:
        raise TypeError(f"task source {self.name!r} is infinite; it has no len()")

    def __repr__(self) -> str:
        return (
            f"ProceduralCodeTasks(difficulty={list(self.levels)}, seed={self.seed}, "
            f"split={self.split!r})"
        )


# ----------------------------------------------------------------- oracle and noisy teacher


def _spec_of(task: Task) -> Spec:
    spec = task.meta.get("spec") if isinstance(task.meta, dict) else None
    if not isinstance(spec, dict) or task.meta.get("source") != ProceduralCodeTasks.family:
        raise ValueError(
            f"task {task.id!r} is not a procedural code task (no meta['spec']); "
            "draw tasks from ProceduralCodeTasks or make_code_source('procedural')"
        )
    return spec


def canonical_key(task: Task) -> str:
    """The short key of a procedural task's canonical form (equal for equivalent tasks).

    >>> t = ProceduralCodeTasks(difficulty=1).get(3)
    >>> canonical_key(t) == t.meta["canonical"]
    True
    """
    return f"{stable_hash('canonical', canonical_form(_spec_of(task))):016x}"


def reference_solution(task: Task) -> str:
    """The canonical solution of a procedural task: a complete ``def f(...)``.

    >>> print(reference_solution(ProceduralCodeTasks(difficulty=1, seed=2).get(0)), end="")
    def f(xs):
        return sum(xs)
    """
    return render_code(_spec_of(task))


def wrong_solutions(task: Task) -> list[tuple[str, str]]:
    """Every distinct systematic wrong solution of ``task``: ``(label, code)``.

    Each fails at least one of the task's hidden tests (checked on the spec);
    labels are those of :func:`~flexmg.envs.code.procedural_spec.mutations`.

    >>> task = ProceduralCodeTasks(difficulty=1).get(0)
    >>> all(code != task.answer for _, code in wrong_solutions(task))
    True
    """
    spec = _spec_of(task)
    inputs = task.meta["inputs"]
    right = [outcome(spec, args) for args in inputs]
    seen = {render_code(spec)}
    out: list[tuple[str, str]] = []
    for label, wrong in mutations(spec):
        code = render_code(wrong)
        if code in seen:
            continue
        seen.add(code)
        if [outcome(wrong, args) for args in inputs] != right:
            out.append((label, code))
    return out


def wrong_solution(task: Task, rng: random.Random) -> str:
    """One systematic wrong solution of ``task`` (a complete ``def f``), drawn with ``rng``.

    >>> task = ProceduralCodeTasks(difficulty=2).get(5)
    >>> wrong_solution(task, random.Random(0)) != task.answer
    True
    """
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    options = wrong_solutions(task)
    if not options:
        raise RuntimeError(f"task {task.id!r} has no systematic wrong variant (please report it)")
    return rng.choice(options)[1]


# ----------------------------------------------------------------- registration

# The procedural code family joins the one task-source registry (kind "code"), where
# ``make_code_source`` and ``tasks=`` find it by name; it takes ``difficulty, seed, split,
# eval_fraction`` keywords.
register_task_source(ProceduralCodeTasks.family, ProceduralCodeTasks, kind="code")
