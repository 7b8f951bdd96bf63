"""The envs as the shipped warm start played them: the math family's v1 judgement.

The warm start plays some of its episodes on the real envs (multi-round math,
relay), so what the env says between rounds is part of its training data. The
shipped checkpoint was built when the math envs were v1 (the relay envs v0,
which judge the same way): only exactly one right ``\\boxed{}`` answer solved
the task, and an unboxed answer got the feedback "No single final answer was
found (no_boxed): ...". Math v2 credits the value however it is written, so an
unboxed right answer now ends the episode and an unboxed wrong one is "The
final answer 12 is incorrect." Both change the multi-round transcripts (and,
through the episodes that end earlier, every later draw of the data).

:func:`historic_env` builds a registered env with its reward judged as v1, so
the warm start keeps rebuilding the shipped weights bit for bit; the envs
everyone else makes are untouched.

Example:
    >>> env = historic_env("math-1agent", horizon=2)
    >>> env.reset(seed=0)
    >>> env.step("The answer is " + env.task.answer)  # right, but not boxed
    >>> env.terminations["solver"], env.observe("solver")["feedback"][:33]
    (False, 'No single final answer was found ')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from flexmg.env import Judgement, TurnRecord
from flexmg.envs.families.common import judge_turns
from flexmg.envs.families.math import MathReward
from flexmg.tasks import Task
from flexmg.workflow import Workflow

__all__ = ["MathRewardV1", "historic_env"]


class MathRewardV1(MathReward):
    """The math family's v1 judgement: the score is the graded role's boxed answer's grade.

    Solved (score 1) only for exactly one right boxed answer; the feedback names
    the grader's reason when no single boxed answer was found. Per-turn credit is
    today's (it is not shown to the roles).

    >>> from flexmg.env import TurnRecord
    >>> task = Task(id="t", prompt="What is 2 + 3?", answer="5")
    >>> judge = MathRewardV1()
    >>> [judge(task, [TurnRecord(0, "solver", 0, {}, text)]).score for text in ("5", "\\\\boxed{5}")]
    [0.0, 1.0]
    """

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        """Judge the latest round as math v1 did."""
        graded, role_info, result = judge_turns(self.credit, task, transcript)
        if result.score >= 1.0:
            feedback = "The final answer is correct."
        elif result.format_error:
            feedback = (
                f"No single final answer was found ({result.reason}): "
                "put exactly one answer inside \\boxed{}."
            )
        else:
            feedback = f"The final answer {result.extracted!s:.200} is incorrect. Try again."
        team = role_info[graded.role]
        return Judgement(
            score=float(result.score),
            feedback=feedback,
            role_info=role_info,
            metrics={
                "graded_role": graded.role,
                "grade_reason": result.reason,
                "format_ok": team["format_ok"],
                "answer_correct": team["answer_correct"],
            },
        )


def historic_env(env_id: str, **kwargs: Any) -> Any:
    """``flexmg.make(env_id, **kwargs)``, with a math-family reward judged as v1.

    An env whose reward is not the math family's is made as it is today.

    >>> type(historic_env("relay-2agent")._reward).__name__
    'MathRewardV1'
    """
    import flexmg

    spec = flexmg.spec(env_id)
    workflow = spec.load()
    if isinstance(workflow, Workflow) and workflow.reward_factory == MathReward.from_options:
        workflow = dataclasses.replace(workflow, reward_factory=MathRewardV1.from_options)
    return workflow(**{**spec.kwargs, **kwargs})
