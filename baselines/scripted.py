"""Scripted baselines: the oracle (an upper bound) and the empty/random agents (lower bounds).

The oracle solves the built-in tasks exactly: on a math task the graded role
writes ``\\boxed{<gold answer>}``; on a code task it writes the reference
solution in a fenced ``python`` block. Roles that are not graded write
something plausible for their role (a plan, sub-questions, doctest-derived
``assert`` lines for a tester, the worked answer for a solver).

The observation never carries the answer, so the oracle reads the live task
from the env(s) it plays: it is built from a *task provider*, a function that
returns the envs being played (a ``SyncVectorEnv``'s ``envs`` or one env), and
matches each observation to its env by the task prompt. Nothing is written
into any observation, so other agents never see the answer. On the
leaderboard use ``scripted:oracle`` (the runner gives the factory the vector
env it plays, always a ``SyncVectorEnv`` for this entry).

Example:
    >>> import flexmg
    >>> from flexmg.agents import rollout
    >>> from flexmg.baselines.scripted import OracleAgent
    >>> env = flexmg.make("math-2agent", split="eval")
    >>> rollout(env, OracleAgent(lambda: [env]), episodes=3, seed=0).success_rate
    1.0
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flexmg.agents.base import EmptyAgent, RandomAgent
from flexmg.env import FlexMGEnv
from flexmg.protocols import VectorEnv
from flexmg.tasks import Task, stable_hash

EnvProvider = Callable[[], Iterable[FlexMGEnv]]

_DOCTEST = re.compile(r"^\s*>>>\s?(?P<expr>.+?)\s*$")
_MAX_ASSERTS = 8


def is_code_task(task: Task) -> bool:
    """True for code tasks (they name an ``entry_point``).

    >>> is_code_task(Task(id="t", prompt="p", meta={"entry_point": "f"}))
    True
    """
    return bool(task.meta.get("entry_point"))


def doctest_asserts(prompt: str, limit: int = _MAX_ASSERTS) -> list[str]:
    """``assert expr == expected`` lines from the ``>>>`` examples of a docstring.

    >>> doctest_asserts('''    >>> add(1, 2)\\n    3\\n''')
    ['assert add(1, 2) == 3']
    """
    lines = prompt.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        m = _DOCTEST.match(line)
        if not m or i + 1 >= len(lines):
            continue
        expected = lines[i + 1].strip()
        if not expected or expected.startswith(">>>") or expected.startswith("Traceback"):
            continue
        out.append(f"assert {m.group('expr')} == {expected}")
        if len(out) >= limit:
            break
    return out


def math_message(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The oracle's message for one role on a math task.

    >>> t = Task(id="t", prompt="What is 2 + 3?", answer="5", meta={"solution": "2 + 3 = 5"})
    >>> math_message(t, "verifier", "", graded=True)
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


def code_message(task: Task, role: str, instructions: str, graded: bool) -> str:
    """The oracle's message for one role on a code task (reference solution when it writes code).

    >>> t = Task(id="t", prompt="def f():\\n    '''\\n    >>> f()\\n    1\\n    '''",
    ...          answer="def f():\\n    return 1\\n", meta={"entry_point": "f"})
    >>> code_message(t, "tester", "", graded=False)
    '```python\\nassert f() == 1\\n```'
    """
    entry = str(task.meta.get("entry_point", ""))
    writes_tests = role == "tester" or ("assert" in instructions and not graded)
    if writes_tests:
        asserts = doctest_asserts(task.prompt) or [f"assert callable({entry})"]
        return "```python\n" + "\n".join(asserts) + "\n```"
    if graded or "```python" in instructions:
        return f"```python\n{task.answer.strip()}\n```"
    return (
        f"Plan: implement `{entry}` as the docstring specifies; handle empty inputs and the "
        "boundary cases the examples show; keep it pure (no I/O)."
    )


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

    def _live_tasks(self) -> dict[str, tuple[Task, str]]:
        live: dict[str, tuple[Task, str]] = {}
        for env in self._envs():
            task = env.task
            if task is None:
                continue
            order = env.graph.order()
            prompt = task.prompt[: env.max_task_chars]
            live[prompt] = (task, order[-1])
        return live

    def act(self, observations: list[Mapping[str, Any]]) -> list[str]:
        """One message per observation (see the module docs)."""
        self.calls += 1
        live = self._live_tasks()
        out: list[str] = []
        for obs in observations:
            prompt = str(obs.get("task", ""))
            if prompt not in live:
                raise LookupError(
                    "OracleAgent: no env being played has this task; build it with the envs "
                    f"it plays (e.g. OracleAgent(lambda: vec.envs)). Task: {prompt[:80]!r}"
                )
            task, graded_role = live[prompt]
            role = str(obs.get("role", ""))
            instructions = str(obs.get("instructions", ""))
            graded = role == graded_role
            writer = code_message if is_code_task(task) else math_message
            out.append(writer(task, role, instructions, graded))
        return out


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
    """A :class:`~flexmg.agents.RandomAgent` seeded from ``seed`` and labels (e.g. the env id).

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
