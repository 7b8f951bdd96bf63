"""An example env package: ``dice-v0``, a caller and a checker guess a hidden die roll.

flexmg finds it through the ``flexmg.envs`` entry point this package's
``pyproject.toml`` declares: the registry calls :func:`register_envs` on its
first lookup. :func:`make_env` also works as an env spec of its own,
``flexmg check flexmg_dice:make_env``, without any registration.
"""

from __future__ import annotations

from collections.abc import Sequence

import flexmg
from flexmg.tasks import ListTaskSource, Task

TASKS = [
    Task(id=f"die/{n}", prompt="Guess the die roll (1-6).", answer=str(n)) for n in range(1, 7)
]


def reward(task: Task, transcript: Sequence[flexmg.TurnRecord]) -> float:
    """1.0 when the checker's last message is the roll."""
    last = {turn.role: turn.action.strip() for turn in transcript}
    return float(last.get("checker") == task.answer)


DICE = flexmg.Workflow(
    name="dice",
    roles={"caller": "Call a number from 1 to 6.", "checker": "Repeat or change the call."},
    tasks=ListTaskSource(TASKS, split="all", name="dice"),
    reward=reward,
    description="example plugin: a caller and a checker guess a die roll",
)


def make_env(**kwargs: object) -> flexmg.FlexMGEnv:
    """The env, built directly (``flexmg_dice:make_env`` as an env spec)."""
    return DICE(**kwargs)


def register_envs() -> None:
    """Register ``dice-v0`` (the ``flexmg.envs`` entry point)."""
    flexmg.register("dice-v0", DICE, description=DICE.description)
