"""The tiny model's warm-start transcripts: (compact prompt, action) pairs from a teacher.

The env families' noisy teachers (:mod:`flexmg.envs.families.teachers`) decide
what each role says; this module writes what the tiny model learns from: each
role's prompt in the tiny model's compact format
(:func:`~flexmg.models.prompts.compact_prompt`) and its action.

* :func:`teacher_episode`: a round-0 episode written without an env (each role
  sees the task and its predecessors' outputs exactly as the env renders them);
* :func:`env_episode`: an episode played on the real env by the episode driver
  (:func:`flexmg.episodes.play_batch`), so prompts, context and feedback are
  exactly what the env shows the model, every round.

Example:
    >>> import random
    >>> from flexmg.envs.families.teachers import MathTeacher
    >>> from flexmg.tasks import Task
    >>> task = Task(id="t", prompt="What is 2 + 3?", answer="5")
    >>> pairs = teacher_episode(task, ("solver", "verifier"), MathTeacher(), random.Random(0))
    >>> [prompt.rsplit(chr(10), 1)[-1] for prompt, _ in pairs]
    ['[solver]:', '[verifier]:']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from flexmg.actors import as_agent
from flexmg.envs.families.teachers import EnvTeacher, Teacher
from flexmg.episodes import play_batch
from flexmg.models.prompts import compact_prompt
from flexmg.tasks import Task
from flexmg.vector import SyncVectorEnv

__all__ = ["env_episode", "teacher_episode"]


def env_episode(
    env: Any, task: Task, teacher: EnvTeacher, rng: random.Random
) -> list[tuple[str, str]]:
    """(compact prompt, action) pairs of one episode of the real ``env`` played by ``teacher``.

    The episode driver resets the env on ``task`` and steps it with the teacher's
    actions, so each prompt is :func:`~flexmg.models.prompts.compact_prompt` of the
    env's own observation: the role's view of the task, the context (earlier
    rounds included) and the feedback, exactly as the tiny model sees them in
    training.

    >>> import flexmg
    >>> from flexmg.envs.families.relay import RelayTeacher
    >>> env = flexmg.make("relay-2agent")
    >>> task = Task(id="t", prompt="What is 2 + 3?", answer="5")
    >>> pairs = env_episode(env, task, RelayTeacher(p_relay=1.0), random.Random(0))
    >>> [prompt.rsplit(chr(10), 1)[-1] for prompt, _ in pairs]
    ['[reader]:', '[solver]:']
    """
    actor = teacher.episode_actor(task, rng)
    actions: list[str] = []
    (episode,) = play_batch(
        SyncVectorEnv([lambda: env]), as_agent(actor), seed=0, options={"task": task},
        on_step=lambda role, envs, acts: actions.extend(acts),
    )  # fmt: skip
    observations = [turn.observation for turn in episode.transcript]
    return [(compact_prompt(o), a) for o, a in zip(observations, actions, strict=True)]


def teacher_episode(
    task: Task, roles: Sequence[str], teacher: Teacher, rng: random.Random
) -> list[tuple[str, str]]:
    """(compact prompt, action) pairs of one round-0 episode played by ``teacher``.

    Every role sees the task and its predecessors' outputs exactly as the env
    renders them (``[role]: action`` lines), in the tiny model's compact format.
    """
    pairs: list[tuple[str, str]] = []
    outputs: list[tuple[str, str]] = []
    last = ""
    for i, role in enumerate(roles):
        value = last if i > 0 and rng.random() < teacher.p_copy else teacher.value(task, rng)
        action = teacher.render(value, rng)
        context = "\n".join(f"[{r}]: {a}" for r, a in outputs)
        obs = {"task": task.prompt, "role": role, "context": context, "feedback": "", "round": 0}
        pairs.append((compact_prompt(obs), action))
        outputs.append((role, action))
        last = value
    return pairs
