"""The split family (the relay's information-split sibling): no role can answer alone.

Each problem is ``A op B`` with two-digit operands. The holder sees only
``A``; the graded solver sees only ``B`` and the operation. The answer needs
both, so the team scores only when the holder tells the solver ``A``: with a
mute holder the solver can do no better than guessing ``A`` (about 1 in 90).

| | |
|---|---|
| Ids | ``split-2agent-v1`` |
| Agents (graph order) | 2: holder -> solver |
| Graph | a path: the solver sees the holder's message of the round |
| Observation keys | ``task`` (the role's own part: ``A`` for the holder, ``B`` and the operation for the solver), ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | as in the math family: ``(1 - format_weight) * correct + format_weight * format_ok`` of the solver's answer |
| Graded role | solver (the last role) |
| Episode end | terminated when solved or when the last round (``horizon``, default 1) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (``None`` or a :class:`SplitConfig` or its dict: operand range and operations), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``grade_timeout``, ``format_weight`` |
| Credit info | as in the math family: ``answer``, ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``grade_reason``, ``graded`` |

Version history:
    v1: the format term is paid only for a box that commits to a value (right or wrong): a box holding a hedge, prose or a free variable earns nothing (the math family's v3 reward).
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("split-2agent")
    >>> env.reset(seed=0)
    >>> a, b, op = (env.task.meta[k] for k in ("a", "b", "op"))
    >>> env.observe("holder")["task"] == f"A = {a}"
    True
    >>> env.step(f"A = {a}")                            # the holder passes its part on
    >>> env.step(f"\\\\boxed{{{env.task.answer}}}")      # the solver answers
    >>> env.rewards["holder"]
    1.0
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from typing import Any

from flexmg.envs.families.common import team_workflows
from flexmg.envs.families.math import BOX, FORMAT_WEIGHT, MathReward, math_score
from flexmg.family import Family
from flexmg.tasks import Task, check_split, split_of, stable_hash
from flexmg.workflow import Workflow

VERSION = 1

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {"split-2agent": ("holder", "solver")}

PROMPTS: dict[str, str] = {
    "holder": (
        "You are the holder. You see only the number A; the solver needs it. Tell the solver A."
    ),
    "solver": (
        "You are the solver. You see B and the operation; only the holder knows A. "
        f"Compute A op B from what the holder told you. {BOX}"
    ),
}

OPTIONS: dict[str, Any] = {"grade_timeout": 1.0, "format_weight": FORMAT_WEIGHT}

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


@dataclass(frozen=True)
class SplitConfig:
    """The split family's tasks: operands in ``low..high``, operations from ``ops``.

    >>> SplitConfig(low=5, high=3).validate()
    Traceback (most recent call last):
    ...
    ValueError: SplitConfig needs 0 <= low < high <= 10**6, got low=5 high=3
    """

    low: int = 10
    high: int = 99
    ops: tuple[str, ...] = ("+", "-", "*")

    def validate(self) -> SplitConfig:
        """Return self, or raise ``ValueError`` naming the bad field."""
        if not (isinstance(self.low, int) and isinstance(self.high, int)) or not (
            0 <= self.low < self.high <= 10**6
        ):
            raise ValueError(
                f"SplitConfig needs 0 <= low < high <= 10**6, got low={self.low} high={self.high}"
            )
        bad = [op for op in self.ops if op not in _OPS]
        if not self.ops or bad:
            raise ValueError(
                f"SplitConfig.ops must be a non-empty subset of {list(_OPS)}, got {self.ops}"
            )
        return self

    @classmethod
    def of(cls, spec: Any) -> SplitConfig:
        """The config of a ``tasks=`` spec: None, a SplitConfig or its dict."""
        if spec is None:
            return cls()
        if isinstance(spec, SplitConfig):
            return spec.validate()
        if isinstance(spec, dict):
            fields = {**spec, **({"ops": tuple(spec["ops"])} if "ops" in spec else {})}
            try:
                return cls(**fields).validate()
            except TypeError as err:
                raise ValueError(f"bad SplitConfig fields {sorted(spec)}: {err}") from None
        raise TypeError(f"tasks= must be None, a SplitConfig or a dict, got {type(spec).__name__}")


class SplitTaskSource:
    """Procedural ``A op B`` problems, seeded by index, kept to one split by their form.

    >>> src = SplitTaskSource(SplitConfig(), "train")
    >>> src.get(3) == src.get(3), src.get(3).meta["a"] in range(10, 100)
    (True, True)
    """

    def __init__(self, config: SplitConfig, split: str) -> None:
        check_split(split)
        self.config = config.validate()
        self.split = split
        self.name = "split"

    def get(self, index: int) -> Task:
        """The task at ``index`` (same on every call and machine)."""
        rng = random.Random(stable_hash("split-family", asdict(self.config), self.split, index))
        c = self.config
        while True:
            a, b = rng.randint(c.low, c.high), rng.randint(c.low, c.high)
            op = rng.choice(c.ops)
            form = f"{a} {op} {b}"
            if self.split == "all" or split_of(f"split/{form}") == self.split:
                break
        answer = str(_OPS[op](a, b))
        return Task(
            id=f"split/{form}",
            prompt=f"What is A {op} B, where A = {a} and B = {b}?",
            answer=answer,
            meta={"a": a, "b": b, "op": op, "solution": f"{form} = {answer}"},
        )


def split_task_source(spec: Any, split: str) -> SplitTaskSource:
    """``tasks=`` of the split env: None, a :class:`SplitConfig` or its dict."""
    return SplitTaskSource(SplitConfig.of(spec), split)


def holder_view(task: Task) -> str:
    """What the holder sees: ``A`` only."""
    return f"A = {task.meta['a']}"


def solver_view(task: Task) -> str:
    """What the solver sees: ``B`` and the operation, never ``A``."""
    return f"Compute A {task.meta['op']} B, where B = {task.meta['b']}. Only the holder knows A."


_A_VALUE = re.compile(r"A\s*(?:=|is|:)\s*(-?\d{1,12})")
_NUMBER = re.compile(r"-?\d{1,12}")


def solve_from(context: str, task_view: str) -> str:
    """A scripted solver that uses only its own observation (``A`` read from the context).

    Reads ``A`` from ``A = n`` (else the last number) in ``context``; with none it
    guesses the middle of the default range. Used by tests and the transcripts script.

    >>> solve_from("[holder]: A = 12", "Compute A * B, where B = 3. Only the holder knows A.")
    'A * B = 36, so \\\\boxed{36}'
    """
    found = _A_VALUE.findall(context[-4096:]) or _NUMBER.findall(context[-4096:])
    a = int(found[-1]) if found else 55
    match = re.search(r"A ([-+*]) B, where B = (\d+)", task_view)
    if match is None:
        return "\\boxed{0}"
    op, b = match.group(1), int(match.group(2))
    return f"A {op} B = {_OPS[op](a, b)}, so \\boxed{{{_OPS[op](a, b)}}}"


def split_oracle(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The scripted oracle's message: the holder tells A, the solver answers.

    >>> split_oracle(Task("t", "p", "7", {"a": 3}), "holder", "", graded=False)
    'A = 3'
    """
    if graded:
        return f"\\boxed{{{task.answer}}}"
    return f"A = {task.meta['a']}"


#: The family's metadata.
FAMILY = Family(
    name="split",
    teams=TEAMS,
    tasks=split_task_source,
    oracle=split_oracle,
    score=math_score,
    ability="multi-agent",
)

#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    FAMILY,
    prompts=PROMPTS,
    describe=lambda roles: "information split: the holder sees A, the solver B and op (graded)",
    per_team=lambda roles: {
        "edges": list(zip(roles, roles[1:])),
        "task_views": {"holder": holder_view, "solver": solver_view},
    },
    reward_factory=MathReward.from_options,
    options=OPTIONS,
)

split_2agent = WORKFLOWS["split-2agent"]
