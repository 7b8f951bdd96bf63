"""The relay family (didactic): the graded role cannot succeed without its predecessor.

Only the first role, the reader, sees the problem; the graded solver sees
only the message of the role just before it (and never the problem), so the
team scores only when the problem travels down the chain. It is the smallest
setting in which credit must flow through agents: the reader's behaviour can
only be learned from the team reward, because the reader is never graded.

| | |
|---|---|
| Ids | ``relay-2agent-v2``, ``relay-3agent-v2`` |
| Agents (graph order) | 2: reader -> solver; 3: reader -> courier -> solver |
| Graph | a path: each role sees only the previous role's message of the round |
| Observation keys | ``task`` (the problem for the reader; a notice that it is hidden for the others), ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | as in the math family: ``(1 - format_weight) * correct + format_weight * format_ok`` of the solver's answer (its value however written; one ``\\boxed{}`` for the format term) |
| Graded role | solver (the last role) |
| Episode end | terminated when solved or when the last round (``horizon``, default 1) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (default: ``arithmetic`` difficulty 1, any math source works), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``grade_timeout``, ``format_weight`` |
| Credit info | as in the math family: ``answer``, ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``grade_reason``, ``graded`` |

With ``horizon > 1`` the earlier rounds' messages and the feedback are shown
to every role, as in every flexmg env.

Version history:
    v2: the format term is paid only for a box that commits to a value (right or wrong): a box holding a hedge, prose or a free variable earns nothing (the math family's v3 reward).
    v1: the math family's v2 reward (the value, however written, plus a small
        format term); solved when the solver's value is right.
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("relay-2agent")
    >>> env.reset(seed=0)
    >>> env.observe("solver")["task"] == HIDDEN
    True
    >>> env.step(env.observe("reader")["task"])       # the reader passes the problem on
    >>> env.step(f"\\\\boxed{{{env.task.answer}}}")    # the solver answers it
    >>> env.rewards["reader"], env.terminations["reader"]
    (1.0, True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flexmg.envs.families.common import team_workflows
from flexmg.envs.families.math import (
    BOX,
    FORMAT_WEIGHT,
    MATH_WARM_START_TASKS,
    MathReward,
    math_oracle,
    math_score,
    math_task_source,
)
from flexmg.envs.families.teachers import EpisodeActor, MathRoundsActor, MathTeacher
from flexmg.family import Family, WarmStart
from flexmg.tasks import Task
from flexmg.workflow import Workflow

VERSION = 2

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {
    "relay-2agent": ("reader", "solver"),
    "relay-3agent": ("reader", "courier", "solver"),
}

HIDDEN = "The problem is hidden from you; the message you were given is all you know."

PROMPTS: dict[str, str] = {
    "reader": (
        "You are the reader. Only you can see the problem. Pass on everything the next role "
        "needs to solve it (its numbers and operations)."
    ),
    "courier": (
        "You are the courier. You cannot see the problem. Pass on what the reader told you, "
        "completely and exactly."
    ),
    "solver": f"You are the solver. You cannot see the problem; solve what you were told. {BOX}",
}

OPTIONS: dict[str, Any] = {"grade_timeout": 1.0, "format_weight": FORMAT_WEIGHT}


def hidden_task(task: Task) -> str:
    """What every role but the reader sees of the task: a notice, never the problem."""
    return HIDDEN


# Numbers and arithmetic symbols: what a message must carry for the problem to be recovered.
_PROBLEM_TOKEN = re.compile(r"\d+(?:\.\d+)?|[-+*/×÷^()=]")


def problem_tokens(text: str) -> list[str]:
    """The numbers and arithmetic symbols of ``text``, in order (spaces and words dropped).

    >>> problem_tokens("What is 19 - 6?")
    ['19', '-', '6']
    """
    return _PROBLEM_TOKEN.findall(text)


def carries_problem(message: str, problem: str) -> bool:
    """True when the ``problem`` can be recovered from ``message``.

    The message must hold the problem's numbers and arithmetic symbols in the
    problem's order, contiguously (``19-6``, ``19 - 6`` and the whole question
    all count; ``6 - 19``, ``19 6`` and the answer alone do not). A problem
    without numbers or symbols must appear word for word (spaces normalised).

    >>> carries_problem("It asks: 19 - 6.", "What is 19 - 6?")
    True
    >>> carries_problem("\\boxed{13}", "What is 19 - 6?"), carries_problem("119 - 6", "What is 19 - 6?")
    (False, False)
    """
    want = problem_tokens(problem)
    if not want:
        squash = " ".join(problem.split())
        return bool(squash) and squash in " ".join(message.split())
    have = problem_tokens(message)
    n = len(want)
    return any(have[i : i + n] == want for i in range(len(have) - n + 1))


def relay_rate(messages: Iterable[str], problems: Iterable[str]) -> float:
    """Share of ``messages`` that carry their problem (:func:`carries_problem`); 0.0 when none.

    >>> relay_rate(["19 - 6", "ok"], ["What is 19 - 6?", "What is 2 + 3?"])
    0.5
    """
    pairs = list(zip(messages, problems, strict=True))
    return sum(carries_problem(m, p) for m, p in pairs) / len(pairs) if pairs else 0.0


# ----------------------------------------------------------------- its noisy teacher
# What a relay teacher's reader or courier writes when it does not pass the problem on
# (a random number, 0..RELAY_GUESS_MAX, is the other unhelpful message).
RELAY_FILLERS: tuple[str, ...] = ("ok", "I read it.", "Got it.", "Done.")
# The relay solver's guess when its context does not carry the problem: 0..RELAY_GUESS_MAX.
RELAY_GUESS_MAX = 80


@dataclass(frozen=True)
class RelayTeacher(MathTeacher):
    """Teacher of the relay family: a reader that seldom relays, a solver that needs it.

    * **reader** (sees the problem): writes the problem (the question, or just
      its expression such as ``19 - 6``) with ``p_relay``; otherwise an
      unhelpful message (one of :data:`RELAY_FILLERS` or a random number).
    * **courier** (relay-3agent): copies the message it was given with
      ``p_copy``, else writes an unhelpful message.
    * **solver** (graded): when its context carries the problem
      (:func:`flexmg.envs.families.relay.carries_problem`) it answers like the
      :class:`MathTeacher` (right, slip or noise; retry values after a wrong
      round); otherwise it guesses a number in ``0..RELAY_GUESS_MAX``. Answers
      are boxed with ``p_format``.

    >>> RelayTeacher(p_relay=1.5)
    Traceback (most recent call last):
    ...
    ValueError: RelayTeacher.p_relay must be a probability in [0, 1], got 1.5
    """

    p_relay: float = 0.3
    p_copy: float = 0.9

    def unhelpful(self, rng: random.Random) -> str:
        """A message that does not carry the problem: a filler or a random number."""
        options = len(RELAY_FILLERS) + 1
        pick = rng.randrange(options)
        return RELAY_FILLERS[pick] if pick < len(RELAY_FILLERS) else str(rng.randint(0, 99))

    def relay(self, task: Task, rng: random.Random) -> str:
        """The reader's message: the problem with ``p_relay``, else an unhelpful one."""
        if rng.random() >= self.p_relay:
            return self.unhelpful(rng)
        if rng.random() < 0.5:
            return task.prompt
        return " ".join(problem_tokens(task.prompt)) or task.prompt

    def episode_actor(self, task: Task, rng: random.Random) -> EpisodeActor:
        """An actor for one relay episode on the real env (see :class:`RelayActor`)."""
        return RelayActor(self, task, rng)

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description (stored in the checkpoint's ``warmstart.json``)."""
        return {**super().describe(),
                "reader": "the problem (question or expression) with p_relay, else unhelpful",
                "courier": "copies its predecessor with p_copy, else unhelpful",
                "unhelpful": [*RELAY_FILLERS, "a random number 0..99"],
                "solver": "math teacher when its context carries the problem, "
                          f"else a guess 0..{RELAY_GUESS_MAX}"}  # fmt: skip


@dataclass
class RelayActor:
    """:class:`RelayTeacher` acting on a relay env's observations (any horizon)."""

    teacher: RelayTeacher
    task: Task
    rng: random.Random
    solver: MathRoundsActor = field(init=False)

    def __post_init__(self) -> None:
        self.solver = MathRoundsActor(self.teacher, self.task, self.rng)

    def __call__(self, obs: Mapping[str, Any]) -> str:
        """The message of ``obs["role"]``: reader, courier (any middle role) or solver."""
        role, context = str(obs.get("role", "")), str(obs.get("context", ""))
        if role == "reader":
            return self.teacher.relay(self.task, self.rng)
        if role != "solver":  # a courier: pass the last message on, or not
            last = context.rsplit("\n", 1)[-1]
            message = last.split("]: ", 1)[1] if last.startswith("[") and "]: " in last else ""
            copy = bool(message) and self.rng.random() < self.teacher.p_copy
            return message if copy else self.teacher.unhelpful(self.rng)
        if carries_problem(context, self.task.prompt):
            return self.solver(obs)
        self.solver.new_round(int(obs.get("round", 0)))
        guesses = [str(v) for v in range(RELAY_GUESS_MAX + 1) if str(v) not in self.solver.wrong]
        guess = self.rng.choice(guesses)
        self.solver.last = guess
        return self.teacher.render(guess, self.rng)


# ----------------------------------------------------------------- what it declares
#: The family's metadata: its warm-start data are relay episodes on the real env.
FAMILY = Family(
    name="relay",
    teams=TEAMS,
    tasks=math_task_source,
    oracle=math_oracle,
    score=math_score,
    ability="multi-agent",  # what dataset export has always written for relay rows
    warm_start=WarmStart(
        tasks=MATH_WARM_START_TASKS,
        envs=(("relay-2agent", 0.75), ("relay-3agent", 0.25)),
        teacher=lambda: RelayTeacher(),
        on_env=True,
    ),
)

#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    FAMILY,
    prompts=PROMPTS,
    describe=lambda roles: (
        f"didactic: {' -> '.join(roles)} (graded); only the reader sees the problem"
    ),
    per_team=lambda roles: {
        "edges": list(zip(roles, roles[1:])),
        "task_views": {r: hidden_task for r in roles[1:]},
    },
    reward_factory=MathReward.from_options,
    options=OPTIONS,
)

relay_2agent = WORKFLOWS["relay-2agent"]
relay_3agent = WORKFLOWS["relay-3agent"]
