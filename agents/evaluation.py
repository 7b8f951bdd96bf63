"""Held-out evaluation of a team policy: success, format and correctness, per role and team.

:func:`evaluate_policy` plays held-out episodes (greedy, ``split="eval"``) with
:func:`~flexmg.agents.samples.collect_rollout` and reports
:func:`evaluation_record`: the summary of :mod:`flexmg.metrics` (success, format
and correctness told apart; the team's are the graded role's) with 95%
bootstrap intervals over distinct prompts, in the shape the run folder's
``metrics.jsonl``, ``summary.json`` and ``flexmg eval`` record.

Example:
    >>> m = [{"task_id": "t1", "success": True, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": True, "format_error": False}}},
    ...      {"task_id": "t2", "success": False, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": None, "format_error": False}}}]
    >>> out = evaluation_record(m)
    >>> out["prompts"], out["success_rate"], out["format_rate"], out["per_role"]["s"]["correct"]
    (2, 0.5, 0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flexmg.agents.samples import collect_rollout
from flexmg.metrics import prompt_intervals, summarize_episodes


def evaluation_record(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The evaluation's figures: :func:`flexmg.metrics.summarize_episodes` with intervals.

    Returns ``episodes``, ``prompts`` (distinct ``task_id``), ``team_reward`` (and
    its ``team_reward_ci``),
    ``rounds`` (= ``mean_rounds``: rounds played per episode), ``success_rate``, ``format_rate``, ``correct_rate`` (team =
    graded role) and their ``*_ci`` (:func:`flexmg.metrics.prompt_intervals`),
    ``per_role`` (``success``, ``format``, ``correct``, ``truncated``) and
    ``format_error_rate`` per role when the env reports it.
    """
    s = summarize_episodes(metrics)
    ci = prompt_intervals(metrics)
    out: dict[str, Any] = {
        "episodes": s["episodes"],
        "prompts": s["prompts"],
        "team_reward": s["team_reward"],
        "team_reward_ci": ci["team_reward"],
        "rounds": s["rounds"],
        "mean_rounds": s["mean_rounds"],
    }
    for name in ("success_rate", "format_rate", "correct_rate"):
        out[name] = s[name]
        out[f"{name}_ci"] = ci[name]
    out["per_role"] = {role: dict(rates) for role, rates in s["per_role"].items()}
    if s["format_error"]:
        out["format_error_rate"] = s["format_error"]
    return out


def evaluate_policy(
    policy: Any,
    env_id: str,
    episodes: int,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    split: str = "eval",
    batch_size: int = 64,
    greedy: bool = True,
    vectorization: str = "sync",
) -> dict[str, Any]:
    """Play ``episodes`` episodes of ``env_id`` (held-out split, greedy) and summarize them.

    Returns :func:`evaluation_record` of the episodes.
    """
    import flexmg

    kwargs = {**(env_kwargs or {}), "split": split}
    metrics: list[dict[str, Any]] = []
    done = 0
    vec = None
    try:
        while done < episodes:
            n = min(batch_size, episodes - done)
            if vec is None or vec.num_envs != n:
                if vec is not None:
                    vec.close()
                vec = flexmg.make_vec(env_id, num_envs=n, vectorization=vectorization, **kwargs)
            batch = collect_rollout(policy, vec, seed=seed + done, greedy=greedy)
            metrics.extend(batch.metrics)
            done += n
    finally:
        if vec is not None:
            vec.close()
    return evaluation_record(metrics)
