"""Held-out evaluation of a team policy: success, format and correctness, per role and team.

What is learned is told apart: *success* (the env's team success), *format*
(a well-formed answer: the env's ``format_ok``, else an answer that was graded
without a format error) and *correctness* (the answer's value is right however
it is written: the env's ``answer_correct``, else ``own_correct``). The team's
format and correctness are those of the graded role. Greedy outcomes are fixed
per prompt, so uncertainty is a 95% bootstrap interval over *distinct prompts*
(:func:`prompt_key`: the env's ``prompt_id``, a hash of the prompt text, else
``task_id``), and the number of distinct prompts is reported.

Example:
    >>> m = [{"task_id": "t1", "success": True, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": True, "format_error": False}}},
    ...      {"task_id": "t2", "success": False, "graded_role": "s",
    ...       "per_role": {"s": {"own_correct": None, "format_error": False}}}]
    >>> out = summarize_metrics(m)
    >>> out["prompts"], out["success_rate"], out["format_rate"], out["per_role"]["s"]["correct"]
    (2, 0.5, 0.5, 0.5)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from flexmg.agents.buffer import collect_rollout

BOOTSTRAP_RESAMPLES = 2000


def role_format_ok(role_metrics: Mapping[str, Any]) -> bool:
    """A well-formed answer: ``format_ok`` when the env reports it, else graded without error."""
    if "format_ok" in role_metrics:
        return bool(role_metrics["format_ok"])
    return role_metrics.get("own_correct") is not None and not role_metrics.get("format_error")


def role_correct(role_metrics: Mapping[str, Any]) -> bool:
    """The answer's value is right: ``answer_correct`` when reported, else ``own_correct``."""
    value = role_metrics.get("answer_correct", role_metrics.get("own_correct"))
    return bool(value)


def bootstrap_ci(
    values_by_prompt: Mapping[str, Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:  # fmt: skip
    """95% bootstrap interval of the mean over prompts (prompts resampled, each its mean).

    ``None`` with fewer than two prompts. One seed of :func:`bootstrap_ci_over_seeds`.

    >>> bootstrap_ci({"a": [1.0], "b": [0.0], "c": [1.0, 0.0]}) is not None
    True
    """
    return bootstrap_ci_over_seeds([values_by_prompt], resamples, seed)


def bootstrap_ci_over_seeds(
    values_by_seed: Sequence[Mapping[str, Sequence[float]]], resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:  # fmt: skip
    """95% two-level bootstrap interval of the mean over seeds of the mean over prompts.

    ``values_by_seed[s]`` maps each prompt of seed ``s`` (e.g. a training seed's
    evaluation) to its values. Each resample draws the seeds with replacement,
    then within every drawn seed its prompts with replacement (each prompt its
    mean); the statistic is the mean of the per-seed means, so the interval widens
    when seeds disagree. With one seed only prompts are resampled; ``None`` when
    there is nothing to resample (no prompts, or one seed with one prompt).

    >>> agree = [{"a": [1.0], "b": [0.0]}, {"c": [1.0], "d": [0.0]}]
    >>> disagree = [{"a": [1.0], "b": [1.0]}, {"c": [0.0], "d": [0.0]}]
    >>> width = lambda ci: ci[1] - ci[0]
    >>> width(bootstrap_ci_over_seeds(disagree)) >= width(bootstrap_ci_over_seeds(agree))
    True
    """
    groups = [[sum(v) / len(v) for v in g.values() if len(v)] for g in values_by_seed]
    groups = [g for g in groups if g]
    if not groups or (len(groups) == 1 and len(groups[0]) < 2):
        return None
    rng = random.Random(seed)

    def resampled_mean(means: list[float]) -> float:
        return sum(rng.choice(means) for _ in range(len(means))) / len(means)

    if len(groups) == 1:
        stats = [resampled_mean(groups[0]) for _ in range(resamples)]
    else:
        k = len(groups)
        stats = [
            sum(resampled_mean(rng.choice(groups)) for _ in range(k)) / k for _ in range(resamples)
        ]
    stats.sort()
    return stats[int(0.025 * resamples)], stats[min(resamples - 1, int(0.975 * resamples))]


def prompt_key(metrics: Mapping[str, Any], index: int = 0) -> str:
    """What identifies an episode's prompt: ``prompt_id``, else ``task_id``, else its index.

    Generated tasks can repeat a prompt under another ``task_id``; ``prompt_id``
    (the env's hash of the prompt text) counts them once.

    >>> prompt_key({"task_id": "gen/7", "prompt_id": "ab12"}), prompt_key({}, 3)
    ('ab12', 'episode-3')
    """
    return str(metrics.get("prompt_id") or metrics.get("task_id") or f"episode-{index}")


def team_outcome(metrics: Mapping[str, Any]) -> dict[str, float]:
    """An episode's team ``success``, ``format`` and ``correct`` (1.0/0.0; the graded role's).

    >>> team_outcome({"success": True, "graded_role": "s",
    ...               "per_role": {"s": {"format_ok": False, "answer_correct": True}}})
    {'success': 1.0, 'format': 0.0, 'correct': 1.0}
    """
    roles = metrics.get("per_role") or {}
    graded = roles.get(metrics.get("graded_role"), {}) if isinstance(roles, Mapping) else {}
    graded = graded if isinstance(graded, Mapping) else {}
    return {
        "success": float(bool(metrics.get("success", False))),
        "format": float(role_format_ok(graded)),
        "correct": float(role_correct(graded)),
    }


def summarize_metrics(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate episode metrics: team and per-role success, format and correctness.

    Returns ``episodes``, ``prompts`` (distinct :func:`prompt_key`), ``success_rate``,
    ``format_rate``, ``correct_rate`` (team = graded role), their ``*_ci``
    (bootstrap over prompts), ``team_reward``, ``rounds``, ``per_role``
    (``success``, ``format``, ``correct``, ``truncated``) and
    ``format_error_rate`` per role when the env reports it.
    """
    n = max(1, len(metrics))
    team: dict[str, dict[str, list[float]]] = {"success": {}, "format": {}, "correct": {}}
    per_role: dict[str, dict[str, list[float]]] = {}
    format_errors: dict[str, list[float]] = {}
    for k, m in enumerate(metrics):
        prompt = prompt_key(m, k)
        roles = m.get("per_role") or {}
        row = team_outcome(m)
        for key, value in row.items():
            team[key].setdefault(prompt, []).append(value)
        for role, rm in roles.items() if isinstance(roles, Mapping) else ():
            if not isinstance(rm, Mapping):
                continue
            acc = per_role.setdefault(
                role, {"success": [], "format": [], "correct": [], "truncated": []}
            )
            acc["success"].append(row["success"])
            acc["format"].append(float(role_format_ok(rm)))
            acc["correct"].append(float(role_correct(rm)))
            acc["truncated"].append(float(bool(rm.get("truncated", False))))
            if "format_error" in rm:
                format_errors.setdefault(role, []).append(float(bool(rm["format_error"])))
    out: dict[str, Any] = {
        "episodes": len(metrics),
        "prompts": len(team["success"]),
        "team_reward": sum(float(m.get("team_reward", 0.0) or 0.0) for m in metrics) / n,
        "rounds": sum(float(m.get("rounds", 0) or 0) for m in metrics) / n,
    }
    for key, name in (("success", "success_rate"), ("format", "format_rate"),
                      ("correct", "correct_rate")):  # fmt: skip
        values = [v for vs in team[key].values() for v in vs]
        out[name] = sum(values) / len(values) if values else 0.0
        ci = bootstrap_ci(team[key])
        out[f"{name}_ci"] = list(ci) if ci else None
    out["per_role"] = {
        role: {key: sum(vals) / len(vals) for key, vals in acc.items()}
        for role, acc in per_role.items()
    }
    if format_errors:
        out["format_error_rate"] = {r: sum(v) / len(v) for r, v in format_errors.items()}
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

    Returns :func:`summarize_metrics` of the episodes.
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
    return summarize_metrics(metrics)
