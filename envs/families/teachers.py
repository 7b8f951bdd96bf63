"""Noisy teachers: scripted players of the env families with controlled mistakes.

A teacher plays every role of a workflow on a task and writes what each role
says. Its own answer is **right** with probability ``p_right``, its **one
systematic slip** with probability ``p_slip`` (the mode), and noise otherwise;
a later role copies its predecessor's answer with probability ``p_copy``. It
writes the answer well-formed (a ``\\boxed{}`` value for math, a fenced
``python`` block for code) with probability ``p_format``. The math teacher shows
its work on two-operand problems: the operands restated with two digits each,
then its value (``03+09=13 \\boxed{13}``), the short scratchpad that lets a
2-layer model learn the arithmetic in a few thousand steps.

Each family names its teacher in its warm-start data (``Family.warm_start``):
the tiny model's warm start (``flexmg.models.tiny``) fits these transcripts, so it
formats almost every answer, follows the slip when decoding greedily, and finds
the right answer often when sampling: RL then has a learnable signal (avoid the
slip) that carries over to unseen problems.

Two teachers also act on the **real env**, round after round (an actor per
episode, :meth:`MathTeacher.episode_actor`):

* **Retry rounds** (``horizon >= 2``): after feedback that the team's answer
  is wrong, the math teacher answers right with ``p_retry_right`` and never
  repeats a value the feedback called wrong, so feedback carries information.
* **Relay** (``relay-2agent``, ``relay-3agent``): the relay family's teacher
  (:class:`flexmg.envs.families.relay.RelayTeacher`) builds on the math teacher.

Example:
    >>> import random
    >>> from flexmg.tasks import Task
    >>> task = Task(id="t", prompt="What is 3 + 9?", answer="12")
    >>> MathTeacher(p_right=1.0, p_slip=0.0).value(task, random.Random(0))
    '03+09=12'
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from flexmg.tasks import Task

# Offsets of the math teacher's noise (never 0, never the slip's +1).
MATH_NOISE_OFFSETS: tuple[int, ...] = (-10, -2, -1, 2, 3, 10)
#: One episode's actor: the env's observation -> the action (stateful within the episode).
EpisodeActor = Callable[[Mapping[str, Any]], str]


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
    :func:`worked_prefix` and the box holds the number only. In a retry round
    (after feedback that the team was wrong) it is right with ``p_retry_right``
    and otherwise writes noise that avoids every value the feedback called wrong.

    >>> from flexmg.tasks import Task
    >>> task = Task(id="t", prompt="What is 3 + 9?", answer="12")
    >>> MathTeacher().slip("12"), MathTeacher(p_right=1.0, p_slip=0.0).value(task, random.Random(0))
    ('13', '03+09=12')
    >>> MathTeacher().render("03+09=12", random.Random(1)), MathTeacher().render("7", random.Random(1))
    ('03+09=12 \\\\boxed{12}', '\\\\boxed{7}')
    """

    p_retry_right: float = 0.7
    show_work: bool = True

    @staticmethod
    def number(value: str) -> str:
        """The number of a value, after its work: ``"03+09=12"`` -> ``"12"``."""
        return value.rpartition("=")[2]

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
        return self._worked(task, self._number(task, rng))

    def _worked(self, task: Task, number: str) -> str:
        return (worked_prefix(task.prompt) if self.show_work else "") + number

    def retry_value(self, task: Task, wrong: Collection[str], rng: random.Random) -> str:
        """The answer of a retry round: right with ``p_retry_right``, else noise not in ``wrong``.

        >>> task = Task(id="t", prompt="What is 2 + 3?", answer="5")
        >>> MathTeacher(p_retry_right=0.0).retry_value(task, {"6"}, random.Random(0)) != "6"
        True
        """
        return self._worked(task, self._retry_number(task, wrong, rng))

    def _retry_number(self, task: Task, wrong: Collection[str], rng: random.Random) -> str:
        gold = task.answer.strip()
        if rng.random() < self.p_retry_right:
            return gold
        try:
            base = int(gold)
        except ValueError:
            return gold + "0"
        options = [str(base + d) for d in (1, *MATH_NOISE_OFFSETS) if str(base + d) not in wrong]
        return rng.choice(options) if options else gold

    def render(self, value: str, rng: random.Random) -> str:
        """The work, then the number boxed (well-formed) with probability ``p_format``, else bare."""
        if rng.random() >= self.p_format:
            return value
        boxed = "\\boxed{" + self.number(value) + "}"
        return f"{value} {boxed}" if "=" in value else boxed

    def episode_actor(self, task: Task, rng: random.Random) -> EpisodeActor:
        """An actor for one episode on the real env (see :class:`MathRoundsActor`)."""
        return MathRoundsActor(self, task, rng)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description (stored in the checkpoint's ``warmstart.json``)."""
        return {**asdict(self), "slip": "gold + 1", "noise_offsets": list(MATH_NOISE_OFFSETS),
                "unformatted": "bare value",
                "retry": "right with p_retry_right, else noise avoiding the values judged wrong",
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


@dataclass
class MathRoundsActor:
    """The math teacher acting on the env's observations, round after round.

    Round 0 is played as a round-0 transcript is written: each role answers (right,
    slip or noise) or copies its predecessor's value with ``p_copy``. When the
    env starts another round (the team's answer was wrong), every value the
    team submitted that is not the gold answer counts as judged wrong, and the
    roles answer with :meth:`MathTeacher.retry_value` (or copy, with ``p_copy``).
    """

    teacher: MathTeacher
    task: Task
    rng: random.Random
    wrong: set[str] = field(default_factory=set)
    round: int = -1
    last: str | None = None  # the value of the previous role (this round), then the graded one

    def answer(self) -> str:
        """This round's own answer value (a retry value after round 0)."""
        if self.round == 0:
            return self.teacher.value(self.task, self.rng)
        return self.teacher.retry_value(self.task, self.wrong, self.rng)

    def new_round(self, round_index: int) -> None:
        """Start ``round_index``: the previous round's graded value, if wrong, is remembered."""
        number = None if self.last is None else MathTeacher.number(self.last)
        if number is not None and number != self.task.answer.strip():
            self.wrong.add(number)
        self.round, self.last = round_index, None

    def __call__(self, obs: Mapping[str, Any]) -> str:
        """The role's message for ``obs`` (a new round is noticed from ``obs["round"]``)."""
        if int(obs.get("round", 0)) != self.round:
            self.new_round(int(obs.get("round", 0)))
        copy = self.last is not None and self.rng.random() < self.teacher.p_copy
        value = self.last if copy and self.last is not None else self.answer()
        self.last = value
        return self.teacher.render(value, self.rng)


class EnvTeacher(Protocol):
    """A teacher that plays the real env: one stateful actor per episode."""

    def episode_actor(self, task: Task, rng: random.Random) -> EpisodeActor:
        """The actor of one episode on ``task`` (observation -> action)."""
        ...
