"""Scripted baselines: the oracle (an upper bound), empty/random agents (lower bounds), replays.

The oracle solves the tasks of every env family that declares a scripted
oracle (``Family.oracle``): on a math task the graded role writes
``\\boxed{<gold answer>}``; on a code task it writes the reference solution in
a fenced ``python`` block. Roles that are not graded write something plausible
for their role (a plan, sub-questions, doctest-derived ``assert`` lines for a
tester, the worked answer for a solver).

The observation never carries the answer, so the oracle reads the live task
from the env(s) it plays: it is built from a *task provider*, a function that
returns the envs being played (a ``SyncVectorEnv``'s ``envs`` or one env), and
matches each observation to the env that shows it (the role's task view and
context: a view may hide the task, as relay's and split's do). Nothing is written
into any observation, so other agents never see the answer. On the
leaderboard use ``scripted:oracle`` (the runner gives the factory the vector
env it plays, always a ``SyncVectorEnv`` for this entry).

:class:`ScriptedAgent` replays fixed messages (or calls a script), for tests and
for driving some roles of a team deterministically.

Example:
    >>> import flexmg
    >>> from flexmg.episodes import rollout
    >>> env = flexmg.make("math-2agent", split="eval")
    >>> rollout(env, OracleAgent(lambda: [env]), episodes=3, seed=0).success_rate
    1.0
    >>> rollout(flexmg.make("echo"), RandomAgent(seed=0), episodes=2).summary()["episodes"]
    2
    >>> ScriptedAgent(["first", "second"]).act([{}, {}, {}])
    ['first', 'second', 'first']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from flexmg.env import FlexMGEnv
from flexmg.family import OracleFn
from flexmg.protocols import Observation, VectorEnv
from flexmg.tasks import Task, stable_hash

EnvProvider = Callable[[], Iterable[FlexMGEnv]]


class OracleAgent:
    """Solves the task exactly by reading it from the env (an upper bound, not a learner).

    Args:
        envs: a function returning the envs being played (called on every
            ``act``, so envs reset between batches are seen fresh).

    An observation whose task prompt matches no env raises ``LookupError``
    (the oracle was wired to the wrong envs).
    """

    def __init__(self, envs: EnvProvider) -> None:
        if not callable(envs):
            raise TypeError(
                "OracleAgent(envs=...) expects a function returning the envs being played, "
                f"e.g. lambda: vec.envs; got {type(envs).__name__}"
            )
        self._envs = envs
        self.calls = 0

    def _live(self) -> list[tuple[Any, Task, str, OracleFn]]:
        live: list[tuple[Any, Task, str, OracleFn]] = []
        for env in self._envs():
            task = env.task
            if task is None:
                continue
            oracle = env.family.oracle if env.family is not None else None
            if oracle is None:
                raise LookupError(
                    f"OracleAgent: env {env.metadata.get('name', type(env).__name__)!r} "
                    "declares no scripted oracle (its family's Family.oracle), so there is "
                    "nothing that solves it"
                )
            live.append((env, task, env.graph.order()[-1], oracle))
        return live

    @staticmethod
    def _sees(env: Any, obs: Mapping[str, Any]) -> bool:
        """Is ``obs`` what ``env`` shows its role now (task view and context)?

        A role's task view may hide the task (relay's solver, split's solver), so
        the prompt alone cannot tell two envs apart; the whole observation can.
        """
        try:
            mine = env.observe(str(obs.get("role", "")))
        except (KeyError, RuntimeError):
            return False
        return mine["task"] == obs.get("task") and mine["context"] == obs.get("context")

    def act(self, observations: list[Mapping[str, Any]]) -> list[str]:
        """One message per observation (see the module docs)."""
        self.calls += 1
        live = self._live()
        used: set[int] = set()
        out: list[str] = []
        for obs in observations:
            # each observation is one env's; identical ones take the envs in order
            match = next(
                (i for i, (env, *_) in enumerate(live) if i not in used and self._sees(env, obs)),
                None,
            )
            if match is None:
                prompt = str(obs.get("task", ""))
                raise LookupError(
                    "OracleAgent: no env being played shows this observation; build it with "
                    "the envs it plays (e.g. OracleAgent(lambda: vec.envs)). Task: "
                    f"{prompt[:80]!r}"
                )
            used.add(match)
            _, task, graded_role, oracle = live[match]
            role = str(obs.get("role", ""))
            instructions = str(obs.get("instructions", ""))
            out.append(oracle(task, role, instructions, role == graded_role))
        return out


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

    def act(self, observations: Sequence[Observation]) -> list[str]:
        """The scripted messages, one per observation."""
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

    def act(self, observations: Sequence[Observation]) -> list[str]:
        """Random words, one message per observation."""
        out = []
        for _ in observations:
            n = int(self.rng.integers(0, self.max_words + 1))
            out.append(" ".join(self.VOCAB[i] for i in self.rng.integers(0, len(self.VOCAB), n)))
        return out


class EmptyAgent:
    """Always answers with an empty message (the floor of any leaderboard)."""

    def act(self, observations: Sequence[Observation]) -> list[str]:
        """The empty message, once per observation."""
        return ["" for _ in observations]


def envs_of(vec_or_env: VectorEnv | FlexMGEnv) -> list[FlexMGEnv]:
    """The envs of a ``SyncVectorEnv`` or a single env (the oracle cannot see async workers).

    >>> import flexmg
    >>> len(envs_of(flexmg.make_vec("echo", num_envs=2)))
    2
    """
    if isinstance(vec_or_env, FlexMGEnv):
        return [vec_or_env]
    envs = getattr(vec_or_env, "envs", None)
    if envs is None:
        raise TypeError(
            f"the oracle needs the env objects, but {type(vec_or_env).__name__} keeps them in "
            "worker processes; use vectorization='sync' (the leaderboard does this for "
            "scripted:oracle)"
        )
    return list(envs)


def make_oracle(vec: VectorEnv | FlexMGEnv) -> OracleAgent:
    """An :class:`OracleAgent` playing the envs of ``vec`` (a sync vector env or one env)."""
    envs = envs_of(vec)
    return OracleAgent(lambda: envs)


def make_random(seed: int, *parts: object) -> RandomAgent:
    """A :class:`RandomAgent` seeded from ``seed`` and labels (e.g. the env id).

    >>> make_random(0, "math-2agent").act([{}]) == make_random(0, "math-2agent").act([{}])
    True
    """
    return RandomAgent(seed=stable_hash("scripted-random", seed, *parts) % (2**32))


def make_empty() -> EmptyAgent:
    """The empty agent: every message is ``""`` (the floor of every leaderboard)."""
    return EmptyAgent()


#: name -> (needs the env objects, one-line description)
SCRIPTED: dict[str, tuple[bool, str]] = {
    "oracle": (True, "reads the task's gold answer / reference solution from the env"),
    "empty": (False, "always the empty message"),
    "random": (False, "random words from a small vocabulary (seeded)"),
}


def make_scripted(name: str, vec: VectorEnv | FlexMGEnv, seed: int = 0, label: str = "") -> Any:
    """Build the scripted agent ``name`` (``oracle``, ``empty`` or ``random``) for ``vec``.

    >>> import flexmg
    >>> type(make_scripted("empty", None)).__name__
    'EmptyAgent'
    """
    if name == "oracle":
        return make_oracle(vec)
    if name == "empty":
        return make_empty()
    if name == "random":
        return make_random(seed, label)
    raise ValueError(f"unknown scripted agent {name!r}; known: {sorted(SCRIPTED)}")
