"""Noisy teachers: the transcripts the tiny model is warm-started on.

A teacher plays every role of a workflow on a training task and writes what
each role says. Its own answer is **right** with probability ``p_right``, its
**one systematic slip** with probability ``p_slip`` (the mode), and noise
otherwise; a later role copies its predecessor's answer with probability
``p_copy``. It writes the answer well-formed (a ``\\boxed{}`` value for math,
a fenced ``python`` block for code) with probability ``p_format``. The math
teacher shows its work on two-operand problems: the operands restated with two
digits each, then its value (``03+09=13 \\boxed{13}``), the short scratchpad
that lets a 2-layer model learn the arithmetic in a few thousand steps.

A model fitted to these transcripts formats almost every answer, follows the
slip when decoding greedily, and finds the right answer often when sampling:
RL then has a learnable signal (avoid the slip) that carries over to unseen
problems.

Example:
    >>> import random
    >>> from flexmg.tasks import Task
    >>> task = Task(id="t", prompt="What is 2 + 3?", answer="5")
    >>> pairs = teacher_episode(task, ("solver", "verifier"), MathTeacher(), random.Random(0))
    >>> [prompt.rsplit(chr(10), 1)[-1] for prompt, _ in pairs]
    ['[solver]:', '[verifier]:']
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from flexmg.agents.prompts import compact_prompt
from flexmg.tasks import Task

# Offsets of the math teacher's noise (never 0, never the slip's +1).
MATH_NOISE_OFFSETS: tuple[int, ...] = (-10, -2, -1, 2, 3, 10)


class Teacher(Protocol):
    """What :func:`teacher_episode` needs from a teacher."""

    p_copy: float

    def value(self, task: Task, rng: random.Random) -> str:
        """The teacher's own answer to ``task`` (right, its slip or noise), unformatted."""
        ...

    def render(self, value: str, rng: random.Random) -> str:
        """How a role writes ``value`` (well-formed or not)."""
        ...


def _check_probabilities(teacher: Any) -> None:
    """Every field is a probability, and right + slip leave room for noise."""
    name = type(teacher).__name__
    for key, p in asdict(teacher).items():
        if isinstance(p, bool) or not key.startswith("p_"):
            continue
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name}.{key} must be a probability in [0, 1], got {p!r}")
    if teacher.p_right + teacher.p_slip > 1.0:
        raise ValueError(
            f"{name}: p_right + p_slip must be <= 1 (the rest is noise), "
            f"got {teacher.p_right} + {teacher.p_slip}"
        )


@dataclass(frozen=True)
class NoisyTeacherRates:
    """The rates every noisy teacher shares (validated on construction)."""

    p_right: float = 0.4
    p_slip: float = 0.5
    p_format: float = 0.95
    p_copy: float = 0.5

    def __post_init__(self) -> None:
        _check_probabilities(self)

    def draw_kind(self, rng: random.Random) -> str:
        """``"right"``, ``"slip"`` or ``"noise"`` at the teacher's rates (one ``rng`` draw)."""
        draw = rng.random()
        if draw < self.p_right:
            return "right"
        return "slip" if draw < self.p_right + self.p_slip else "noise"


# "What is 3 + 9?": the two-operand problems the math teacher shows its work on.
_TWO_OPERANDS = re.compile(r"What is (\d{1,2}) ([-+]) (\d{1,2})\?")


def worked_prefix(prompt: str) -> str:
    """The teacher's scratchpad for a two-operand problem (``""`` for any other prompt).

    Operands are restated with two digits each, so the digits the value is
    computed from sit at the same offsets in every problem.

    >>> worked_prefix("What is 3 + 9?"), worked_prefix("What is 1/2 of 8?")
    ('03+09=', '')
    """
    match = _TWO_OPERANDS.fullmatch(prompt.strip())
    if not match:
        return ""
    a, op, b = match.groups()
    return f"{int(a):02d}{op}{int(b):02d}="


@dataclass(frozen=True)
class MathTeacher(NoisyTeacherRates):
    """Noisy arithmetic teacher: right, ``gold + 1`` (the slip), or a small offset.

    With ``show_work`` (default) its value carries the scratchpad of
    :func:`worked_prefix` and the box holds the number only.

    >>> from flexmg.tasks import Task
    >>> task = Task(id="t", prompt="What is 3 + 9?", answer="12")
    >>> MathTeacher().slip("12"), MathTeacher(p_right=1.0, p_slip=0.0).value(task, random.Random(0))
    ('13', '03+09=12')
    >>> MathTeacher().render("03+09=12", random.Random(1)), MathTeacher().render("7", random.Random(1))
    ('03+09=12 \\\\boxed{12}', '\\\\boxed{7}')
    """

    show_work: bool = True

    @staticmethod
    def slip(answer: str) -> str:
        """The systematic wrong answer: the gold value plus one."""
        try:
            return str(int(answer.strip()) + 1)
        except ValueError:
            return answer.strip() + "1"

    def _number(self, task: Task, rng: random.Random) -> str:
        kind = self.draw_kind(rng)
        if kind == "right":
            return task.answer.strip()
        if kind == "slip":
            return self.slip(task.answer)
        try:
            return str(int(task.answer.strip()) + rng.choice(MATH_NOISE_OFFSETS))
        except ValueError:
            return task.answer.strip() + "0"

    def value(self, task: Task, rng: random.Random) -> str:
        """The teacher's answer: right, the slip, or noise (gold plus an offset), with its work."""
        number = self._number(task, rng)
        return (worked_prefix(task.prompt) if self.show_work else "") + number

    def render(self, value: str, rng: random.Random) -> str:
        """The work, then the number boxed (well-formed) with probability ``p_format``, else bare."""
        work, _, number = value.rpartition("=")
        if rng.random() >= self.p_format:
            return value
        boxed = "\\boxed{" + number + "}"
        return f"{work}={number} {boxed}" if work else boxed

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description (stored in the checkpoint's ``warmstart.json``)."""
        return {**asdict(self), "slip": "gold + 1", "noise_offsets": list(MATH_NOISE_OFFSETS),
                "unformatted": "bare value",
                "work": "operands restated with two digits, then '=' and the value"
                if self.show_work else "none"}  # fmt: skip


@dataclass(frozen=True)
class CodeTeacher(NoisyTeacherRates):
    """Noisy teacher of the procedural code family (``flexmg.envs.code.procedural``).

    Right: the task's reference solution. Slip: the task's first systematic
    mutation (a constant one off when the task has one, else a wrong operator
    or a missing step). Noise: another mutation. Well-formed: a fenced
    ``python`` block; otherwise the bare code, which the grader cannot find.
    """

    def value(self, task: Task, rng: random.Random) -> str:
        """The teacher's solution: the reference, the first mutation (slip), or another."""
        from flexmg.envs.code.procedural import reference_solution, wrong_solutions

        kind = self.draw_kind(rng)
        if kind == "right":
            return reference_solution(task)
        wrong = [code for _, code in wrong_solutions(task)] or [reference_solution(task)]
        if kind == "slip" or len(wrong) == 1:
            return wrong[0]
        return rng.choice(wrong[1:])

    def render(self, value: str, rng: random.Random) -> str:
        """The code fenced (well-formed) with probability ``p_format``, else bare."""
        code = value if value.endswith("\n") else value + "\n"
        return "```python\n" + code + "```" if rng.random() < self.p_format else code.rstrip("\n")

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description (stored in the checkpoint's ``warmstart.json``)."""
        return {**asdict(self), "slip": "first systematic mutation (wrong_solutions(task)[0])",
                "noise": "another mutation", "unformatted": "bare code"}  # fmt: skip


def teacher_episode(
    task: Task, roles: Sequence[str], teacher: Teacher, rng: random.Random
) -> list[tuple[str, str]]:
    """(compact prompt, action) pairs of one round-0 episode played by ``teacher``.

    Every role sees the task and its predecessors' outputs exactly as the env
    renders them (``[role]: action`` lines), in the tiny model's compact format.
    """
    pairs: list[tuple[str, str]] = []
    outputs: list[tuple[str, str]] = []
    last = ""
    for i, role in enumerate(roles):
        value = last if i > 0 and rng.random() < teacher.p_copy else teacher.value(task, rng)
        action = teacher.render(value, rng)
        context = "\n".join(f"[{r}]: {a}" for r, a in outputs)
        obs = {"task": task.prompt, "role": role, "context": context, "feedback": "", "round": 0}
        pairs.append((compact_prompt(obs), action))
        outputs.append((role, action))
        last = value
    return pairs
