"""The math family: a team of roles solves a math problem; one boxed answer is graded.

| | |
|---|---|
| Ids | ``math-1agent-v3``, ``math-2agent-v3``, ``math-3agent-v3``, ``math-4agent-v3`` |
| Agents (graph order) | 1: solver; 2: solver -> verifier; 3: planner -> solver -> verifier; 4: decomposer -> planner -> executor -> verifier |
| Graph | full chain: each role sees every earlier role's message of the round |
| Observation keys | ``task``, ``role``, ``instructions``, ``round``, ``context``, ``feedback`` |
| Action | text (``str``; cut at ``max_action_chars`` and flagged) |
| Reward | ``(1 - format_weight) * correct + format_weight * format_ok`` of the graded role: ``correct`` when its answer has the gold value however it is written (its one boxed answer, else, with no box at all, its last number; several different boxes commit to nothing), ``format_ok`` when it gives exactly one ``\\boxed{}`` answer holding a value (right or wrong); ``format_weight`` 0.1 by default; an episode's rewards add up to its final score |
| Graded role | the last role of the round (verifier; the solver alone in math-1agent) |
| Episode end | terminated when solved (the graded answer's value is right) or when the last round (``horizon``, default 1) is judged; truncated only by ``max_rounds`` |
| Arguments | ``tasks`` (default: ``arithmetic`` difficulty 1), ``split``, ``horizon``, ``max_rounds``, ``roles``, ``prompts``, ``max_action_chars``, ``render_mode``, ``grade_timeout``, ``format_weight`` |
| Credit info | ``infos[role]``: ``answer`` (the value the role committed to: its one boxed answer, else, with no box at all, its last number; None), ``answer_kind`` (``right``, ``off_by_one``, ``sign``, ``no_answer``, ``repeats_earlier``, ``other``), ``copies_earlier`` (its answer is one an earlier role of the round gave), ``own_correct``, ``format_ok``, ``answer_correct``, ``format_error``, ``grade_reason``, ``graded`` |

``format_ok`` is True when the message gives exactly one boxed answer that holds a
value, right or wrong (the same box repeated counts once); ``answer_correct`` says
whether the role's answer has the right value however it is written: the boxed
answer when there is one, else the last number or fraction in the message (None for a role whose
message holds none; the graded role always gets a bool).

Version history:
    v3: ``format_ok`` (and the format term) needs a box that commits to a value,
        right or wrong: ``\\boxed{not sure}``, a hedge, prose or a free variable in
        the box earns no format credit and commits to no answer (a policy could
        farm the term by boxing anything).
    v2: the reward credits the graded answer's value however it is written
        (a model that answers "The answer is 12." is right), and the box is a
        separate, smaller shaping term (``format_weight``, default 0.1); an
        episode is solved when the value is right; the role infos gain
        ``answer``. v1 paid 1.0 only for exactly one right boxed answer, so a
        pretrained model that rarely boxes got no signal.
    v1: judging the last round terminates the episode (v0 truncated it at
        the horizon, which Gymnasium reads as "the game could go on"); the
        role infos gain ``format_ok`` and ``answer_correct``; the default
        task is arithmetic with operands up to 40 (v0: single digits, only
        26 distinct held-out prompts) split on canonical forms, so ``3 + 4``
        and ``4 + 3`` are never on both sides.
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("math-2agent")
    >>> env.possible_agents
    ['solver', 'verifier']
    >>> env.reset(seed=0)
    >>> env.step("I think it is 3.")
    >>> env.step(f"\\\\boxed{{{env.task.answer}}}")
    >>> env.terminations["verifier"], env.infos["solver"]["format_ok"]
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, cast

from flexmg.env import Judgement, TurnRecord
from flexmg.envs.families.common import judge_turns, team_workflows
from flexmg.envs.families.teachers import MathTeacher
from flexmg.family import Family, WarmStart
from flexmg.tasks import Split, Task, TaskSource
from flexmg.workflow import Workflow

VERSION = 3

#: Env name -> its roles in graph order (the last one is graded).
TEAMS: dict[str, tuple[str, ...]] = {
    "math-1agent": ("solver",),
    "math-2agent": ("solver", "verifier"),
    "math-3agent": ("planner", "solver", "verifier"),
    "math-4agent": ("decomposer", "planner", "executor", "verifier"),
}

BOX = "Put the final answer, and nothing else, inside \\boxed{}."

PROMPTS: dict[str, str] = {
    "solver": f"You are the solver. Solve the problem step by step. {BOX}",
    "verifier": (
        "You are the verifier. Check the previous answer carefully; if it is wrong, correct it. "
        f"Restate the final answer. {BOX}"
    ),
    "planner": "You are the planner. Outline a short plan to solve the problem; do not solve it.",
    "decomposer": (
        "You are the decomposer. Break the problem into small sub-questions, in order; "
        "do not solve them."
    ),
    "executor": f"You are the executor. Follow the plan and compute the answer. {BOX}",
}

FORMAT_WEIGHT = 0.1
"""Default share of the reward paid for the format (one boxed answer), the rest for the value."""

OPTIONS: dict[str, Any] = {"grade_timeout": 1.0, "format_weight": FORMAT_WEIGHT}

# A number as an answer may be written: 1,234 / -3.5 / 3/4 / \frac{3}{4} / -\dfrac{1}{2}.
_LAST_VALUE = re.compile(
    r"-?\\[dt]?frac\{-?\d+\}\{\d+\}|-?\d{1,3}(?:,\d{3})+(?!\d)|-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?"
)
_VALUE_SCAN_CHARS = 65536  # the last value is looked for in the message's tail


def math_task_source(spec: Any, split: str) -> TaskSource:
    """``tasks=`` of the math envs: a generator name/dict, a data file, a dataset or tasks."""
    from flexmg.envs.math import make_math_source

    # the env passes its ``split=`` through as given; make_math_source rejects unknown splits
    return make_math_source(spec, split=cast(Split, split))


def last_value(text: str) -> str | None:
    """The last number or fraction written in ``text`` (None when there is none).

    >>> last_value("7 + 5 = 12, so the total is 12.")
    '12'
    >>> last_value(r"x = -\\frac{3}{4}") == r"-\\frac{3}{4}"
    True
    >>> last_value("no digits") is None
    True
    """
    from flexmg.envs.math.boxed import sanitize

    matches = _LAST_VALUE.findall(sanitize(text[-_VALUE_SCAN_CHARS:]))
    if not matches:
        return None
    return re.sub(r"\s+", "", matches[-1]).replace(",", "")


class MathReward:
    """Score = the graded role's answer value (however written) plus a small format term.

    ``score = (1 - format_weight) * correct + format_weight * format_ok``, where
    ``correct`` is the graded role's ``answer_correct`` (its boxed answer, else
    the last number it wrote, checked by :func:`flexmg.envs.math.grade_detailed`)
    and ``format_ok`` says it gave exactly one boxed answer. Every role also gets
    credit info (see the module docstring).

    >>> MathReward(format_weight=0.25).format_weight
    0.25
    """

    def __init__(self, grade_timeout: float = 1.0, format_weight: float = FORMAT_WEIGHT) -> None:
        if isinstance(format_weight, bool) or not 0.0 <= float(format_weight) < 1.0:
            raise ValueError(f"format_weight must be in [0, 1), got {format_weight!r}")
        self.grade_timeout = float(grade_timeout)
        self.format_weight = float(format_weight)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> MathReward:
        """Build from the env's options (``grade_timeout``, ``format_weight``)."""
        return cls(
            grade_timeout=options.get("grade_timeout", 1.0),
            format_weight=options.get("format_weight", FORMAT_WEIGHT),
        )

    def _grade(self, text: str, task: Task) -> Any:
        from flexmg.envs.math import grade_detailed, settings_for_task

        return grade_detailed(
            text, task.answer, timeout=self.grade_timeout, settings=settings_for_task(task)
        )

    def _value_correct(self, value: str | None, task: Task) -> bool | None:
        if value is None:
            return None
        return self._grade(f"\\boxed{{{value}}}", task).score >= 1.0

    def read(self, text: str, task: Task) -> tuple[Any, str | None, bool | None]:
        """Grade ``text``: the grader's result, the committed answer, and whether its value is right.

        The committed answer is the one boxed answer, else (no box at all) the last
        number; several different boxes (or an empty one) commit to nothing.
        """
        result = self._grade(text, task)
        if committed(result):
            return result, _shown(result.extracted), result.score >= 1.0
        if not result.format_error:  # one box, but it holds no value (a hedge, prose, ...)
            return result, None, False
        if "\\boxed" in text or "\\fbox" in text:
            return result, None, None
        value = last_value(text)
        return result, value, self._value_correct(value, task)

    def score_of(self, text: str, task: Task) -> float:
        """The reward ``text`` earns as the graded answer: the value plus the format term."""
        result, _, correct = self.read(text, task)
        w = self.format_weight
        return (1.0 - w) * bool(correct) + w * committed(result)

    def credit(self, turn: TurnRecord, task: Task, graded: bool) -> tuple[dict[str, Any], Any]:
        """The credit info of one turn, and its grade result (None when not graded)."""
        boxed = "\\boxed" in turn.action or "\\fbox" in turn.action
        if not (graded or boxed):
            value = last_value(turn.action)
            info: dict[str, Any] = {"own_correct": None, "format_error": False, "graded": False}
            info.update(
                format_ok=False, answer=value, answer_correct=self._value_correct(value, task)
            )
            return info, None
        result, answer, answer_correct = self.read(turn.action, task)
        if graded and answer_correct is None:
            answer_correct = False
        info = {
            "own_correct": result.score >= 1.0,
            "format_error": bool(result.format_error),
            "format_ok": committed(result),
            "answer": answer,
            "answer_correct": answer_correct,
            "grade_reason": result.reason,
            "graded": graded,
        }
        return info, result

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        """Judge the latest round."""
        graded, role_info, result = judge_turns(self.credit, task, transcript)
        _name_answers(role_info, task)
        team = role_info[graded.role]
        correct, format_ok = bool(team["answer_correct"]), bool(team["format_ok"])
        if correct:
            feedback = "The final answer is correct."
        elif team["answer"] is None:
            feedback = "No final answer was found: put exactly one answer inside \\boxed{}."
        else:
            feedback = f"The final answer {team['answer']!s:.200} is incorrect. Try again."
        w = self.format_weight
        return Judgement(
            score=(1.0 - w) * correct + w * format_ok,
            done=correct,
            feedback=feedback,
            role_info=role_info,
            metrics={
                "graded_role": graded.role,
                "grade_reason": result.reason,
                "format_ok": format_ok,
                "answer_correct": correct,
            },
        )


def committed(result: Any) -> bool:
    r"""Whether a grade result is one boxed answer that commits to a value (right or wrong).

    A box the grader reads but that holds no value (``\boxed{not sure}``, prose, a
    hedge, a free variable) earns no format credit: the term pays for an answer, not a box.

    >>> from flexmg.envs.math import grade_detailed
    >>> committed(grade_detailed(r"\boxed{7}", "5")), committed(grade_detailed(r"\boxed{?}", "5"))
    (True, False)
    """
    return not result.format_error and result.reason in ("correct", "wrong")


def _name_answers(role_info: dict[str, dict[str, Any]], task: Task) -> None:
    """Add each role's ``answer_kind`` and ``copies_earlier`` (roles in the round's order).

    ``copies_earlier``: its answer equals one an earlier role of the round committed to;
    ``answer_kind``: ``right`` or the kind of wrong answer (:mod:`flexmg.envs.math.answers`).
    """
    from flexmg.envs.math.answers import answer_kind, same_answer

    earlier: list[str | None] = []
    for info in role_info.values():
        answer = info.get("answer")
        info["answer_kind"] = answer_kind(answer, info.get("answer_correct"), task.answer, earlier)
        info["copies_earlier"] = any(same_answer(answer, e) for e in earlier)
        earlier.append(answer)


def _shown(extracted: Any) -> str | None:
    """The grader's extracted answer as short text (None when nothing was extracted)."""
    if extracted is None:
        return None
    text = str(extracted).strip()
    return text[:200] if text else None


# ----------------------------------------------------------------- what it declares
def math_oracle(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The scripted oracle's message for one role on a math task (solves it exactly).

    >>> t = Task(id="t", prompt="What is 2 + 3?", answer="5", meta={"solution": "2 + 3 = 5"})
    >>> math_oracle(t, "verifier", "", graded=True)
    '2 + 3 = 5\\nThe answer is \\\\boxed{5}.'
    """
    solution = str(task.meta.get("solution") or "").strip()
    boxed = f"The answer is \\boxed{{{task.answer}}}."
    if graded or "\\boxed" in instructions:
        return f"{solution}\n{boxed}" if solution else boxed
    if role == "decomposer":
        return (
            "1. Which quantities does the problem give?\n"
            "2. Which operations combine them, in which order?\n"
            "3. What is the final value?"
        )
    return "Plan: identify the given quantities, apply the operations in order, check the result."


def math_score(task: Task, message: str) -> float:
    """The message graded as the team's final answer: the value plus the format term.

    >>> t = Task(id="t", prompt="1 + 1?", answer="2")
    >>> math_score(t, "so \\\\boxed{2}"), math_score(t, "It is 2.")
    (1.0, 0.9)
    """
    return MathReward().score_of(message, task)


#: The tiny model's warm-start tasks of the math envs (``tasks=`` specs, weights; train
#: split): difficulty 1 is the default task (operands up to 40), 2 (up to 99) adds breadth.
MATH_WARM_START_TASKS: tuple[tuple[Any, float], ...] = (
    ({"name": "arithmetic", "difficulty": 1}, 0.85),
    ({"name": "arithmetic", "difficulty": 2}, 0.15),
)

#: The family's metadata. Its warm-start data are mostly short single-solver transcripts:
#: the arithmetic is learned per example, and longer multi-role transcripts cost more
#: compute for the same number of answers.
FAMILY = Family(
    name="math",
    teams=TEAMS,
    tasks=math_task_source,
    oracle=math_oracle,
    score=math_score,
    warm_start=WarmStart(
        tasks=MATH_WARM_START_TASKS,
        envs=(
            ("math-1agent", 0.5),
            ("math-2agent", 0.35),
            ("math-3agent", 0.1),
            ("math-4agent", 0.05),
        ),  # fmt: skip
        teacher=MathTeacher,
    ),
)


#: Env name -> its workflow; registered as ``<name>-v<VERSION>``.
WORKFLOWS: dict[str, Workflow] = team_workflows(
    FAMILY,
    prompts=PROMPTS,
    describe=lambda roles: f"math: {' -> '.join(roles)} (graded)",
    reward_factory=MathReward.from_options,
    options=OPTIONS,
)

math_1agent = WORKFLOWS["math-1agent"]
math_2agent = WORKFLOWS["math-2agent"]
math_3agent = WORKFLOWS["math-3agent"]
math_4agent = WORKFLOWS["math-4agent"]
