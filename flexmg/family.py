"""What an env family declares about itself once, so that nothing parses env ids.

A family (``flexmg.envs.families.math``, ``code``, ``relay``, or your own)
describes itself in one :class:`Family` attached to each of its workflows
(``Workflow.family``): its teams, the token budget of an action for each model
kind, its scripted oracle, how a message is scored as the team's answer, the
``ability`` that dataset export writes, and the warm-start data it provides
for the tiny model. :func:`family_of` reads it from an env id or an env.

Example:
    >>> fam = family_of("code-2agent")
    >>> fam.name, fam.token_budget("tiny"), fam.token_budget("llm"), fam.teams["code-2agent"]
    ('code', 80, 512, ('coder', 'reviewer'))
    >>> family_of("echo") is None, token_budget(None, "tiny")
    (True, 24)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flexmg.tasks import Task, TaskSource

__all__ = [
    "DEFAULT_TOKEN_BUDGETS",
    "Family",
    "OracleFn",
    "ScoreFn",
    "WarmStart",
    "family_of",
    "token_budget",
]

DEFAULT_TOKEN_BUDGETS: Mapping[str, int] = {"tiny": 24, "llm": 512}
"""New tokens per action (stop token included) by model kind, for a family that sets none.

``tiny``: the tiny model writes one token per character, and a worked math answer
(``03+09=12 \\boxed{12}``) fits in 24; ``llm``: a real model's reasoning and answer."""

OracleFn = Callable[[Task, str, str, bool], str]
"""``oracle(task, role, instructions, graded) -> message``: what a role writes that solves it."""

ScoreFn = Callable[[Task, str], float]
"""``score(task, message) -> float``: the message graded as the team's final answer."""


@dataclass(frozen=True)
class WarmStart:
    """The warm-start data a family provides: tasks, on which of its envs, by which teacher.

    Attributes:
        tasks: ``(spec, weight)``: specs of the family's ``tasks=`` keyword (train split).
        envs: ``(env name, weight)``: the family's envs whose teams play them.
        teacher: builds the noisy teacher that writes the transcripts
            (``flexmg.envs.families.teachers``).
        on_env: the transcripts are played on the real env (its observations, every
            round) rather than written for round 0.
    """

    tasks: tuple[tuple[Any, float], ...]
    envs: tuple[tuple[str, float], ...]
    teacher: Callable[[], Any]
    on_env: bool = False


@dataclass(frozen=True)
class Family:
    """An env family's metadata (see the module docstring).

    Attributes:
        name: the family's name (``math``).
        teams: env name -> its roles in graph order (the last is graded).
        tasks: the family's task factory ``(spec, split) -> TaskSource`` (``tasks=``).
        token_budgets: model kind (``tiny``, ``llm``) -> new tokens per action, as
            an int for every role or ``{role: int}`` (``"*"``: the other roles).
        oracle: the scripted oracle's message writer (None: the family has none).
        score: grades a message as the team's answer (None: judging needs the env,
            e.g. a sandbox).
        ability: the task kind dataset export writes (default: the name).
        warm_start: the warm-start data it provides (None: none).
    """

    name: str
    teams: Mapping[str, tuple[str, ...]]
    tasks: Callable[[Any, str], TaskSource]
    token_budgets: Mapping[str, int | Mapping[str, int]] = field(
        default_factory=lambda: dict(DEFAULT_TOKEN_BUDGETS)
    )
    oracle: OracleFn | None = None
    score: ScoreFn | None = None
    ability: str = ""
    warm_start: WarmStart | None = None

    def __post_init__(self) -> None:
        if not self.ability:
            object.__setattr__(self, "ability", self.name)

    def token_budget(self, kind: str, roles: str | Sequence[str] | None = None) -> int:
        """New tokens per action for a model ``kind``: of ``roles`` (the largest), or of all.

        >>> Family("f", {}, lambda s, x: None, {"tiny": {"a": 8, "*": 4}}).token_budget("tiny", "b")
        4
        """
        budget = self.token_budgets.get(kind, DEFAULT_TOKEN_BUDGETS.get(kind))
        if budget is None:
            raise KeyError(f"family {self.name!r} has no token budget for model kind {kind!r}")
        if isinstance(budget, int):
            return budget
        wanted = [roles] if isinstance(roles, str) else list(roles or budget)
        values = [budget.get(r, budget.get("*")) for r in wanted]
        found = [int(v) for v in values if v is not None]
        if not found:
            raise KeyError(f"family {self.name!r}: no {kind!r} token budget for roles {wanted}")
        return max(found)

    def task_source(self, spec: Any, split: str) -> TaskSource:
        """The family's task source for ``spec`` (its ``tasks=`` keyword) and ``split``."""
        return self.tasks(spec, split)


def family_of(env: Any) -> Family | None:
    """The :class:`Family` of an env id (registered or ``module:factory``) or of an env.

    None for an env that declares none (``echo``, most envs of your own).
    """
    if not isinstance(env, str):
        return getattr(env, "family", None)
    from flexmg.registration import spec

    entry = spec(env).load()
    if hasattr(entry, "family"):  # a Workflow: no env needs building
        return entry.family
    made = entry(**spec(env).kwargs)
    try:
        return getattr(made, "family", None)
    finally:
        made.close()


def token_budget(family: Family | None, kind: str, roles: Sequence[str] | None = None) -> int:
    """New tokens per action: the family's budget for a model ``kind``, else the default."""
    if family is None:
        if kind not in DEFAULT_TOKEN_BUDGETS:
            raise KeyError(f"no default token budget for model kind {kind!r}")
        return DEFAULT_TOKEN_BUDGETS[kind]
    return family.token_budget(kind, roles)
