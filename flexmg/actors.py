"""Turning what plays into actors: ``as_agent`` and ``team_of``.

An actor (:class:`flexmg.protocols.Actor`) maps a *batch* of observations (the
env's dict observations, each naming its ``role``) to one ``str`` action per
observation. Batching is what makes LLM actors fast. A plain function ``obs ->
str`` is wrapped with :func:`as_agent`; a team is ``{role: actor}`` or one
actor for every role (:func:`team_of`).

Example:
    >>> shout = as_agent(lambda obs: obs["task"].upper())
    >>> shout.act([{"task": "hi"}, {"task": "yo"}])
    ['HI', 'YO']
    >>> sorted(team_of(shout, ["a", "b"]))
    ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flexmg.protocols import Actor, Observation

__all__ = ["FunctionAgent", "as_agent", "team_of"]


class FunctionAgent:
    """Wraps a per-observation function ``obs -> str`` as a batch actor."""

    def __init__(self, fn: Callable[[Observation], str], name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"expected a callable obs -> str, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")

    def act(self, observations: Sequence[Observation]) -> list[str]:
        """``fn`` of each observation, checked to be a ``str``."""
        actions = [self.fn(o) for o in observations]
        for a in actions:
            if not isinstance(a, str):
                raise TypeError(f"agent {self.name!r} returned {type(a).__name__}, expected str")
        return actions

    def __repr__(self) -> str:
        return f"FunctionAgent({self.name})"


def as_agent(obj: Any) -> Actor:
    """Return ``obj`` if it is an actor (has ``act``), else wrap a callable ``obs -> str``.

    >>> as_agent(3)
    Traceback (most recent call last):
    ...
    TypeError: an agent must have act(list[obs]) -> list[str] or be a callable obs -> str; got int
    """
    if callable(getattr(obj, "act", None)):
        return obj
    if callable(obj):
        return FunctionAgent(obj)
    raise TypeError(
        f"an agent must have act(list[obs]) -> list[str] or be a callable obs -> str; "
        f"got {type(obj).__name__}"
    )


def team_of(team: Mapping[str, Any] | Any, roles: Sequence[str]) -> dict[str, Actor]:
    """``{role: actor}`` from a mapping of actors (or ``obs -> str`` functions) or one actor.

    One actor plays every role of ``roles``; a mapping is taken as it is (a role it
    lacks is an error when that role is to act).
    """
    if isinstance(team, Mapping):
        return {str(r): as_agent(a) for r, a in team.items()}
    one = as_agent(team)
    return {r: one for r in roles}
