"""The agent protocol and the simple built-in agents.

An agent maps a *batch* of observations (the env's dict observations) to a
batch of ``str`` actions. Batching is what makes LLM agents fast; a plain
function ``obs -> str`` is wrapped with :func:`as_agent`.

Example:
    >>> from flexmg.agents import as_agent, ScriptedAgent
    >>> shout = as_agent(lambda obs: obs["task"].upper())
    >>> shout.act([{"task": "hi"}, {"task": "yo"}])
    ['HI', 'YO']
    >>> ScriptedAgent(["first", "second"]).act([{}, {}, {}])
    ['first', 'second', 'first']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

Observation = dict[str, Any]


@runtime_checkable
class Agent(Protocol):
    """Anything with ``act(observations: list[dict]) -> list[str]`` (one action per observation)."""

    def act(self, observations: list[Observation]) -> list[str]: ...


class FunctionAgent:
    """Wraps a per-observation function ``obs -> str`` as a batch agent."""

    def __init__(self, fn: Callable[[Observation], str], name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"expected a callable obs -> str, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")

    def act(self, observations: list[Observation]) -> list[str]:
        actions = [self.fn(o) for o in observations]
        for a in actions:
            if not isinstance(a, str):
                raise TypeError(f"agent {self.name!r} returned {type(a).__name__}, expected str")
        return actions

    def __repr__(self) -> str:
        return f"FunctionAgent({self.name})"


def as_agent(obj: Any) -> Agent:
    """Return ``obj`` if it is an agent (has ``act``), else wrap a callable ``obs -> str``."""
    if callable(getattr(obj, "act", None)):
        return obj
    if callable(obj):
        return FunctionAgent(obj)
    raise TypeError(
        f"an agent must have act(list[obs]) -> list[str] or be a callable obs -> str; "
        f"got {type(obj).__name__}"
    )


class ScriptedAgent:
    """Replays fixed messages in turn (``responses[i % len]``), or calls ``script(obs)``.

    Useful for tests, for driving some roles of a team deterministically, and
    as an oracle when ``script`` solves the task.
    """

    def __init__(self, responses: Sequence[str] | Callable[[Observation], str]) -> None:
        if callable(responses):
            self._fn: Callable[[Observation], str] | None = responses
            self.responses: list[str] = []
        else:
            self._fn = None
            self.responses = [str(r) for r in responses]
            if not self.responses:
                raise ValueError("ScriptedAgent needs at least one response")
        self._i = 0

    def act(self, observations: list[Observation]) -> list[str]:
        if self._fn is not None:
            return [str(self._fn(o)) for o in observations]
        out = []
        for _ in observations:
            out.append(self.responses[self._i % len(self.responses)])
            self._i += 1
        return out


class RandomAgent:
    """Random text (a lower bound): words drawn from a vocabulary, seeded.

    >>> RandomAgent(seed=0).act([{}])[0] == RandomAgent(seed=0).act([{}])[0]
    True
    """

    VOCAB = (
        "the",
        "answer",
        "is",
        "\\boxed{1}",
        "\\boxed{0}",
        "def",
        "return",
        "x",
        "+",
        "=",
        "```python",
        "```",
        "\n",
        "7",
        "42",
        "maybe",
        "check",
        "solve",
    )

    def __init__(self, max_words: int = 20, seed: int | None = None) -> None:
        self.max_words = max_words
        self.rng = np.random.default_rng(seed)

    def act(self, observations: list[Observation]) -> list[str]:
        out = []
        for _ in observations:
            n = int(self.rng.integers(0, self.max_words + 1))
            out.append(" ".join(self.VOCAB[i] for i in self.rng.integers(0, len(self.VOCAB), n)))
        return out


class EmptyAgent:
    """Always answers with an empty message (the floor of any leaderboard)."""

    def act(self, observations: list[Observation]) -> list[str]:
        return ["" for _ in observations]
