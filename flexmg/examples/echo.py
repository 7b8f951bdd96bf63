"""The smallest Flex-MG: two roles, graph ``a -> b``; the team wins when ``b``
repeats the word ``a`` said.

It is the documentation example of the API: a :class:`flexmg.Workflow` with a
task source, a dependency edge and a reward function, registered as
``echo-v1``. It needs no model, no sandbox and no data.

Version history:
    v1: judging the last round terminates the episode (v0 truncated it at
        the horizon).
    v0: first release.

Example:
    >>> import flexmg
    >>> env = flexmg.make("echo-v1")
    >>> env.reset(seed=3)
    >>> word = env.observe("a")["task"].removeprefix("Say: ")
    >>> env.step(word)                  # a says the word
    >>> env.observe("b")["context"] == f"[a]: {word}"
    True
    >>> env.step(word)                  # b repeats it
    >>> env.rewards, env.terminations["b"]
    ({'a': 1.0, 'b': 1.0}, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from flexmg.env import Judgement, TurnRecord
from flexmg.tasks import ListTaskSource, Task
from flexmg.workflow import Workflow

WORDS = (
    "apple",
    "river",
    "orange",
    "planet",
    "violet",
    "anchor",
    "pencil",
    "garden",
    "window",
    "silver",
    "tiger",
    "castle",
    "forest",
    "rocket",
    "candle",
    "mirror",
)


def echo_reward(task: Task, transcript: Sequence[TurnRecord]) -> Judgement:
    """1.0 when ``b`` repeated ``a``'s message (case and surrounding space ignored)."""
    current = transcript[-1].round
    said = {r.role: r.action.strip().casefold() for r in transcript if r.round == current}
    a_said, b_said = said.get("a", ""), said.get("b", "")
    a_ok = a_said == task.answer
    success = bool(a_said) and b_said == a_said
    feedback = "" if success else f"b said {b_said[:40]!r}, but a said {a_said[:40]!r}."
    return Judgement(
        score=float(success),
        feedback=feedback,
        role_info={"a": {"own_correct": a_ok}, "b": {"own_correct": success}},
    )


EchoEnv = Workflow(
    name="echo",
    roles={"a": "Say the word you are given.", "b": "Repeat exactly what a said."},
    edges=[("a", "b")],
    tasks=ListTaskSource([Task(id=f"echo/{w}", prompt=f"Say: {w}", answer=w) for w in WORDS]),
    reward=echo_reward,
    horizon=1,
    description="toy: b must repeat the word a says (API example, no model needed)",
)
