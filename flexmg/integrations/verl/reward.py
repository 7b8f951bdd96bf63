"""verl's ``compute_score`` backed by flexmg's graders (no verl import needed).

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info)``
for every finished response when the reward config points at it::

    reward.custom_reward_function.path=pkg://flexmg.integrations.verl.reward
    reward.custom_reward_function.name=compute_score

A row exported by ``flexmg export`` (:func:`flexmg.integrations.export.export_rows`)
carries the env id, its keyword arguments and the episode seed in ``extra_info``: the env is
rebuilt, reset with that seed, and its own judge scores the response as the graded
role's (the last role of the round) answer — the math grader for math envs, the
sandboxed hidden tests for code envs, exactly as during an episode. A row without
an env (``extra_info`` lacking ``seed``) is graded as a math answer against
``ground_truth``.

Example:
    >>> from flexmg.integrations.verl.reward import compute_score
    >>> compute_score("math-1agent-v0", r"so \\boxed{12}", "12")
    1.0
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import flexmg
from flexmg.env import FlexMGEnv, TurnRecord


def parse_env_kwargs(raw: Any) -> dict[str, Any]:
    """``extra_info["env_kwargs"]`` as a dict (exported rows store it as JSON text).

    >>> parse_env_kwargs('{"split": "eval"}'), parse_env_kwargs(None)
    ({'split': 'eval'}, {})
    """
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        raw = json.loads(raw)
    if not isinstance(raw, Mapping):
        raise TypeError(f"extra_info['env_kwargs'] must be a dict or JSON object, got {raw!r}")
    return dict(raw)


@lru_cache(maxsize=16)
def _cached_env(env_id: str, kwargs_json: str) -> FlexMGEnv:
    """One env per (id, kwargs) per process: building a code env starts a sandbox."""
    return flexmg.make(env_id, **json.loads(kwargs_json))


def judge_as_graded_role(env: FlexMGEnv, seed: int, solution: str) -> tuple[float, str]:
    """Score ``solution`` with ``env``'s judge as the graded role's answer.

    ``env`` is reset with ``seed`` and ``solution`` judged as the last role's answer
    of round 0; returns ``(score, gold answer)``.

    >>> import flexmg
    >>> env = flexmg.make("math-2agent")
    >>> score, gold = judge_as_graded_role(env, 3, "no answer")
    >>> score
    0.0
    """
    env.reset(seed=int(seed))
    order = env.graph.order()
    graded = order[-1]
    action = solution[: env.max_action_chars]
    record = TurnRecord(
        round=0,
        role=graded,
        position=len(order) - 1,
        observation=env.observe(graded),
        action=action,
    )
    task = env.task
    if task is None:
        raise RuntimeError(f"{type(env).__name__}.reset() left no task to judge against")
    judgement = env.judge(task, (record,), 0)
    return float(judgement.score), task.answer


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | None,
    extra_info: Mapping[str, Any] | None = None,
    **_: Any,
) -> float:
    """The score in ``[0, 1]`` of one response (verl's ``compute_score`` signature).

    Raises ``ValueError`` when a row names an env seed whose gold answer differs
    from ``ground_truth`` (the data was exported with other env arguments).
    """
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be the decoded response text, got {solution_str!r}")
    info = dict(extra_info or {})
    if info.get("seed") is None:
        if not ground_truth:
            raise ValueError(
                f"row of {data_source!r} has neither extra_info['seed'] (to rebuild the env) "
                "nor a ground_truth answer to grade against; export it with "
                "`flexmg export`"
            )
        from flexmg.envs.math import grade

        return float(grade(solution_str, str(ground_truth)))
    env_id = str(info.get("env_id") or data_source)
    kwargs_json = json.dumps(parse_env_kwargs(info.get("env_kwargs")), sort_keys=True)
    env = _cached_env(env_id, kwargs_json)
    score, gold = judge_as_graded_role(env, int(info["seed"]), solution_str)
    if ground_truth not in (None, "") and str(ground_truth) != gold:
        raise ValueError(
            f"{env_id} seed {info['seed']} has the gold answer {gold!r} but the row says "
            f"{ground_truth!r}: the row was exported with other env arguments than "
            f"extra_info['env_kwargs']={kwargs_json}"
        )
    return score
