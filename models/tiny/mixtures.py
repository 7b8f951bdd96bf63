"""The warm start's data: each family's teacher transcripts, mixed by weight.

A *mixture* draws a training task from weighted task sources (train split) and
writes one episode of (prompt, action) pairs: :class:`_Mixture` writes round 0
without an env (:func:`~flexmg.models.tiny.transcripts.teacher_episode`),
:class:`_EnvMixture` plays the real env
(:func:`~flexmg.models.tiny.transcripts.env_episode`). Each family declares its
warm-start data (``Family.warm_start``); :func:`default_mixtures` weighs math,
code and relay as the shipped warm start does (:mod:`flexmg.models.tiny.warmstart`).

Example:
    >>> [list(w) for w in math_mixture().workflows][2]
    ['planner', 'solver', 'verifier']
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from flexmg.envs.families import family
from flexmg.envs.families.teachers import EnvTeacher, MathTeacher, Teacher
from flexmg.family import Family
from flexmg.models.tiny.historic import historic_env
from flexmg.models.tiny.transcripts import env_episode, teacher_episode

# The warm start predates the test split: its training tasks are everything outside eval,
# the test part included (test_fraction 0, so the shipped weights stay reproducible). The
# tiny model has therefore seen test prompts: report tiny-model figures on eval only.
WARMSTART_TEST_FRACTION = 0.0
# What each family provides (its tasks, envs and noisy teacher) is its warm-start
# declaration (``Family.warm_start``, e.g. ``flexmg.envs.families.math.FAMILY``); the shares
# of the families are ``DEFAULTS`` of :mod:`flexmg.models.tiny.warmstart`.

# Horizon of the multi-round math episodes (DEFAULTS["multi_round_weight"]).
MULTI_ROUND_HORIZON = 2
# The warm start's episodes on the real envs are judged as the math envs v1 judged them,
# when the shipped weights were built (math v2 credits unboxed values, which changes the
# multi-round transcripts): see flexmg.models.tiny.historic. Recorded in warmstart.json.
HISTORIC_JUDGEMENT = "math v1: solved only by one right boxed answer (models/tiny/historic.py)"


def _source_names(sources: Sequence[Any]) -> list[str]:
    """``name/difficulty`` of each task source (for ``warmstart.json``)."""
    return [
        getattr(s, "name", type(s).__name__) + f"/{getattr(s, 'difficulty', '')}" for s in sources
    ]


def _draw_task(sources: Sequence[Any], weights: Sequence[float], rng: random.Random) -> Any:
    """One training task: a weighted source, then a random item of it."""
    source = rng.choices(sources, weights)[0]
    return source.get(rng.randrange(1 << 30))


class _Mixture:
    """Draws (task, roles) from weighted task sources and weighted workflows."""

    def __init__(
        self,
        sources: Sequence[tuple[Any, float]],
        workflows: Sequence[tuple[tuple[str, ...], float]],
        teacher: Teacher,
    ) -> None:
        self.sources, self.source_weights = zip(*sources, strict=True)
        self.workflows, self.workflow_weights = zip(*workflows, strict=True)
        self.teacher = teacher

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description of the data (stored in ``warmstart.json``)."""
        describe = getattr(self.teacher, "describe", None)
        return {
            "sources": _source_names(self.sources),
            "source_weights": list(self.source_weights),
            "workflows": [list(w) for w in self.workflows],
            "workflow_weights": list(self.workflow_weights),
            "teacher": describe() if describe else repr(self.teacher),
        }  # fmt: skip

    def pairs(self, rng: random.Random) -> list[tuple[str, str]]:
        task = _draw_task(self.sources, self.source_weights, rng)
        roles = rng.choices(self.workflows, self.workflow_weights)[0]
        return teacher_episode(task, roles, self.teacher, rng)


class _EnvMixture:
    """Draws (task, env) from weighted task sources and weighted envs; plays the real env.

    Each episode is :func:`~flexmg.models.tiny.transcripts.env_episode`: the teacher acts
    on the env's own observations (``horizon`` rounds at most). ``historic``: the envs
    judge as the shipped warm start's did (:func:`~flexmg.models.tiny.historic.historic_env`).
    """

    def __init__(
        self,
        sources: Sequence[tuple[Any, float]],
        env_ids: Sequence[tuple[str, float]],
        teacher: EnvTeacher,
        horizon: int = 1,
        historic: bool = False,
    ) -> None:
        import flexmg

        self.sources, self.source_weights = zip(*sources, strict=True)
        self.env_ids, self.env_weights = zip(*env_ids, strict=True)
        self.teacher = teacher
        self.horizon = horizon
        self.historic = historic
        make = historic_env if historic else flexmg.make
        self.envs = {env_id: make(env_id, horizon=horizon) for env_id in self.env_ids}

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description of the data (stored in ``warmstart.json``)."""
        describe = getattr(self.teacher, "describe", None)
        return {
            "sources": _source_names(self.sources),
            "source_weights": list(self.source_weights),
            "envs": list(self.env_ids),
            "env_weights": list(self.env_weights),
            "horizon": self.horizon,
            "played_on": "the real env (prompts are its observations)",
            **({"judged": HISTORIC_JUDGEMENT} if self.historic else {}),
            "teacher": describe() if describe else repr(self.teacher),
        }  # fmt: skip

    def pairs(self, rng: random.Random) -> list[tuple[str, str]]:
        task = _draw_task(self.sources, self.source_weights, rng)
        env_id = rng.choices(self.env_ids, self.env_weights)[0]
        return env_episode(self.envs[env_id], task, self.teacher, rng)


def _sources(fam: Family) -> list[tuple[Any, float]]:
    """The family's warm-start task sources (train split), with their weights."""
    return [(fam.task_source(_historic(spec), "train"), w) for spec, w in _declared(fam).tasks]


def _historic(spec: Any) -> dict[str, Any]:
    """A ``tasks=`` spec with the test part kept in train (see WARMSTART_TEST_FRACTION).

    >>> _historic("procedural")
    {'name': 'procedural', 'test_fraction': 0.0}
    """
    fields = {"name": spec} if isinstance(spec, str) else dict(spec)
    return {**fields, "test_fraction": WARMSTART_TEST_FRACTION}


def _declared(fam: Family) -> Any:
    if fam.warm_start is None:
        raise ValueError(f"family {fam.name!r} provides no warm-start data (Family.warm_start)")
    return fam.warm_start


def family_mixture(
    name: str, teacher: Any = None, horizon: int | None = None, historic: bool = False
) -> _Mixture | _EnvMixture:
    """The warm-start data of family ``name`` (train split), as it declares them.

    Its tasks on its envs, played by its teacher (or ``teacher``): written for round
    0, or played on the real env when the family says so or ``horizon`` is given
    (``historic``: envs that judge as the shipped warm start's did, see
    :mod:`flexmg.models.tiny.historic`).
    """
    fam = family(name)
    data = _declared(fam)
    player = teacher if teacher is not None else data.teacher()
    if data.on_env or horizon is not None:
        return _EnvMixture(_sources(fam), data.envs, player, horizon or 1, historic)
    workflows = [(tuple(fam.teams[env]), w) for env, w in data.envs]
    return _Mixture(_sources(fam), workflows, player)


def relay_mixture(teacher: EnvTeacher | None = None, historic: bool = False) -> _EnvMixture:
    """The relay part of the warm-start data: relay episodes on the real relay envs."""
    mixture = family_mixture("relay", teacher, historic=historic)
    assert isinstance(mixture, _EnvMixture)  # the relay family plays on the env
    return mixture


def multi_round_mixture(
    teacher: MathTeacher | None = None, horizon: int = MULTI_ROUND_HORIZON, historic: bool = False
) -> _EnvMixture:
    """Math episodes with ``horizon`` rounds on the real math envs (retry after feedback)."""
    if horizon < 2:
        raise ValueError(f"a multi-round mixture needs horizon >= 2, got {horizon}")
    mixture = family_mixture("math", teacher, horizon, historic)
    assert isinstance(mixture, _EnvMixture)
    return mixture


def math_mixture(teacher: Teacher | None = None) -> _Mixture:
    """The math part of the warm-start data (train split only)."""
    mixture = family_mixture("math", teacher)
    assert isinstance(mixture, _Mixture)
    return mixture


def code_mixture(teacher: Teacher | None = None) -> _Mixture:
    """The code part of the warm-start data: procedural tasks, train split only."""
    mixture = family_mixture("code", teacher)
    assert isinstance(mixture, _Mixture)
    return mixture


def default_mixtures(
    code_weight: float = 0.0, relay_weight: float = 0.0, multi_round_weight: float = 0.0
) -> list[tuple[Any, float]]:
    """The warm-start data: (mixture, weight) pairs of math, procedural code and relay.

    ``code_weight`` and ``relay_weight`` are shares of all episodes; the rest
    is math, of which ``multi_round_weight`` is played with horizon 2. A part
    of weight 0 is left out (so the data of the other parts is unchanged). The
    parts played on the real envs are judged as when the shipped weights were
    built (:data:`HISTORIC_JUDGEMENT`, :mod:`flexmg.models.tiny.historic`).

    >>> default_mixtures(code_weight=0.6, relay_weight=0.5)
    Traceback (most recent call last):
    ...
    ValueError: code_weight + relay_weight must be < 1 (the rest is math), got 0.6 + 0.5
    """
    for name, value in (("code_weight", code_weight), ("relay_weight", relay_weight),
                        ("multi_round_weight", multi_round_weight)):  # fmt: skip
        if not 0.0 <= value < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    if code_weight + relay_weight >= 1.0:
        raise ValueError(
            "code_weight + relay_weight must be < 1 (the rest is math), "
            f"got {code_weight} + {relay_weight}"
        )
    math_share = 1.0 - code_weight - relay_weight
    parts: list[tuple[Any, float]] = [(math_mixture(), math_share * (1.0 - multi_round_weight))]
    if multi_round_weight > 0:
        parts.append((multi_round_mixture(historic=True), math_share * multi_round_weight))
    if code_weight > 0:
        parts.append((code_mixture(), code_weight))
    if relay_weight > 0:
        parts.append((relay_mixture(historic=True), relay_weight))
    return parts
