"""Reward functions and task-source factories of the built-in math and code workflows.

The graded role is the last role of the round (``transcript[-1]``); every other
role that produced an answer of its own is graded too, for credit analysis
(``infos[role]["own_correct"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flexmg.env import Judgement, TurnRecord
from flexmg.tasks import Task, TaskSource


def _current_round(transcript: Sequence[TurnRecord]) -> list[TurnRecord]:
    last = transcript[-1].round
    return [r for r in transcript if r.round == last]


def math_task_source(spec: Any, split: str) -> TaskSource:
    """``tasks=`` of the math envs: a generator name/dict, a data file, a dataset or tasks."""
    from flexmg.envs.math import make_math_source

    return make_math_source(spec, split=split)


def code_task_source(spec: Any, split: str) -> TaskSource:
    """``tasks=`` of the code envs: ``None``/``"builtin"``, a HumanEval/MBPP file or tasks."""
    from flexmg.envs.code import make_code_source

    return make_code_source(spec, split=split)


class MathReward:
    """Score = the graded role's boxed answer checked by :func:`flexmg.envs.math.grade_detailed`."""

    def __init__(self, grade_timeout: float = 1.0) -> None:
        self.grade_timeout = float(grade_timeout)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> MathReward:
        return cls(grade_timeout=options.get("grade_timeout", 1.0))

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        from flexmg.envs.math import grade_detailed

        turns = _current_round(transcript)
        graded = turns[-1]
        result = grade_detailed(graded.action, task.answer, timeout=self.grade_timeout)
        role_info: dict[str, dict[str, Any]] = {}
        for turn in turns:
            if turn is graded:
                r = result
            elif "\\boxed" in turn.action:
                r = grade_detailed(turn.action, task.answer, timeout=self.grade_timeout)
            else:
                role_info[turn.role] = {"own_correct": None, "format_error": False, "graded": False}
                continue
            role_info[turn.role] = {
                "own_correct": r.score >= 1.0,
                "format_error": bool(r.format_error),
                "grade_reason": r.reason,
                "graded": turn is graded,
            }
        if result.score >= 1.0:
            feedback = "The final answer is correct."
        elif result.format_error:
            feedback = (
                f"No single final answer was found ({result.reason}): "
                "put exactly one answer inside \\boxed{}."
            )
        else:
            feedback = f"The final answer {result.extracted!s:.200} is incorrect. Try again."
        return Judgement(
            score=float(result.score),
            feedback=feedback,
            role_info=role_info,
            metrics={"graded_role": graded.role, "grade_reason": result.reason},
        )


class CodeReward:
    """Score = fraction of the hidden tests the graded role's last ``python`` block passes.

    The sandbox is created on first use in the process that judges (so every
    ``AsyncVectorEnv`` worker has its own) and closed by ``env.close()``.
    """

    def __init__(self, sandbox: Any = "auto", sandbox_timeout: float = 5.0) -> None:
        self._sandbox_spec = sandbox
        self.sandbox_timeout = float(sandbox_timeout)
        self._sandbox: Any = None if isinstance(sandbox, str) else sandbox

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CodeReward:
        return cls(
            sandbox=options.get("sandbox", "auto"),
            sandbox_timeout=options.get("sandbox_timeout", 5.0),
        )

    @property
    def sandbox(self) -> Any:
        if self._sandbox is None:
            from flexmg.sandboxes import make_sandbox

            self._sandbox = make_sandbox(self._sandbox_spec, timeout=self.sandbox_timeout)
        return self._sandbox

    def _defines_solution(self, text: str, task: Task) -> bool:
        from flexmg.envs.code import extract_code
        from flexmg.envs.code.program import defines_name

        code = extract_code(text)
        return bool(code) and defines_name(code, task.meta.get("entry_point", ""))

    def __call__(self, task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
        from flexmg.envs.code import grade_code

        turns = _current_round(transcript)
        graded = turns[-1]
        result = grade_code(graded.action, task, self.sandbox)
        role_info: dict[str, dict[str, Any]] = {}
        for turn in turns:
            if turn is graded:
                g = result
            elif self._defines_solution(turn.action, task):
                g = grade_code(turn.action, task, self.sandbox)
            else:
                role_info[turn.role] = {"own_correct": None, "format_error": False, "graded": False}
                continue
            role_info[turn.role] = {
                "own_correct": g.total > 0 and g.passed == g.total,
                "format_error": bool(g.format_error),
                "tests_passed": g.passed,
                "tests_total": g.total,
                "sandbox_error": g.sandbox_error,
                "graded": turn is graded,
            }
        feedback = result.feedback()  # counts and failure kinds, never the hidden tests
        done = result.total > 0 and result.passed == result.total
        return Judgement(
            score=float(result.reward),
            done=done,
            feedback=feedback,
            role_info=role_info,
            metrics={
                "graded_role": graded.role,
                "tests_passed": result.passed,
                "tests_total": result.total,
                "sandbox_error": result.sandbox_error,
                "status": result.status,
            },
        )

    def annotate(self, task: Task, transcript: Sequence[TurnRecord]) -> str | None:
        """After a ``tester`` turn: run its asserts against this round's latest solution."""
        from flexmg.envs.code import extract_code, run_agent_tests

        turn = transcript[-1]
        if turn.role != "tester":
            return None
        candidates = [
            r for r in _current_round(transcript)[:-1] if self._defines_solution(r.action, task)
        ]
        if not candidates:
            return "No solution code to test yet."
        code = extract_code(candidates[-1].action) or ""
        return run_agent_tests(code, turn.action, self.sandbox, task=task)

    def close(self) -> None:
        if self._sandbox is not None and isinstance(self._sandbox_spec, str):
            self._sandbox.close()
            self._sandbox = None
