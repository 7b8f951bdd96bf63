"""What the family modules share: one workflow per team, and judging a round turn by turn.

Example:
    >>> from flexmg.envs.families.math import MathReward, math_task_source
    >>> from flexmg.family import Family
    >>> duo = Family("duo", teams={"duo": ("a", "b")}, tasks=math_task_source)
    >>> flows = team_workflows(
    ...     duo, prompts={"a": "", "b": ""}, describe=" -> ".join,
    ...     reward_factory=MathReward.from_options,
    ... )
    >>> list(flows["duo"].roles), flows["duo"].description, flows["duo"].family.name
    (['a', 'b'], 'a -> b', 'duo')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from flexmg.env import TurnRecord
from flexmg.family import Family
from flexmg.tasks import Task
from flexmg.workflow import Workflow, current_round

Roles = tuple[str, ...]


class TurnCredit(Protocol):
    """A reward's per-turn judge: the turn's credit info, and its grade when it was graded."""

    def __call__(self, turn: TurnRecord, task: Task, graded: bool) -> tuple[dict[str, Any], Any]:
        """Return ``turn``'s credit info and its grade (meaningful when ``graded``)."""
        ...


def judge_turns(
    credit: TurnCredit, task: Task, transcript: Sequence[TurnRecord]
) -> tuple[TurnRecord, dict[str, dict[str, Any]], Any]:
    """Credit every turn of the latest round; the last turn is the graded one.

    Returns:
        The graded turn, role -> credit info, and the graded turn's grade.
    """
    turns = current_round(transcript)
    graded = turns[-1]
    role_info: dict[str, dict[str, Any]] = {}
    grade: Any = None
    for turn in turns:
        role_info[turn.role], result = credit(turn, task, graded=turn is graded)
        if turn is graded:
            grade = result
    return graded, role_info, grade


def team_workflows(
    family: Family,
    *,
    prompts: Mapping[str, str],
    describe: Callable[[Roles], str],
    per_team: Callable[[Roles], dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Workflow]:
    """One one-round :class:`~flexmg.Workflow` per team of ``family`` (its ``teams``).

    Every workflow draws its tasks from the family's task factory and carries the
    family (``Workflow.family``).

    Args:
        family: the family's metadata (teams: env name -> roles in graph order).
        prompts: role -> its prompt.
        describe: roles -> the one-line description shown by ``flexmg list``.
        per_team: roles -> more Workflow fields for that team (e.g. its edges).
        **fields: Workflow fields shared by every team (reward_factory, options).
    """
    return {
        name: Workflow(
            name=name,
            roles={r: prompts[r] for r in roles},
            description=describe(roles),
            tasks=family.tasks,
            family=family,
            **{"horizon": 1, **fields, **(per_team(roles) if per_team else {})},
        )
        for name, roles in family.teams.items()
    }
