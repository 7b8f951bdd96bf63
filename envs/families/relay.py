"""The relay family (didactic): the graded role cannot succeed without its predecessor.

Only the first role, the reader, sees the problem; the graded solver sees
only the message of the role just before it (and never the problem), so the
team scores only when the problem travels down the chain. It is the smallest
setting in which credit must flow through agents: the reader's behaviour can
only be learned from the team reward, because the reader is never graded.

| | |
|---|---|
| Ids | ``relay-2agent-v1``, ``relay-3agent-v1`` |
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

import re
from collections.abc import Iterable
from typing import Any

from flexmg.envs.families.common import team_workflows
from flexmg.envs.families.math import BOX, FORMAT_WEIGHT, MathReward, math_task_source
from flexmg.tasks import Task
from flexmg.workflow import Workflow

VERSION = 1

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


#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    TEAMS,
    prompts=PROMPTS,
    describe=lambda roles: (
        f"didactic: {' -> '.join(roles)} (graded); only the reader sees the problem"
    ),
    per_team=lambda roles: {
        "edges": list(zip(roles, roles[1:])),
        "task_views": {r: hidden_task for r in roles[1:]},
    },
    tasks=math_task_source,
    reward_factory=MathReward.from_options,
    options=OPTIONS,
)

relay_2agent = WORKFLOWS["relay-2agent"]
relay_3agent = WORKFLOWS["relay-3agent"]
