"""One summary of a batch of episodes' metrics (the numbers every report shows).

Episodes report metrics as dicts (``flexmg.vector.EpisodeResult.metrics``):
``success``, ``score``, ``team_reward``, ``rounds``, ``task_id``,
``graded_role`` and ``per_role`` (``{role: {"format_error": bool, ...}}``).
The leaderboard's cells, the trainer's rollouts and held-out evaluations and
``rollout(...).summary()`` all need the same means; :func:`summarize_episodes`
computes them once, and :func:`prompt_intervals` adds bootstrap intervals over
distinct prompts. Over seeds (one value per training or leaderboard seed),
:func:`mean_ci` gives a Student's t interval. Every interval flexmg reports
comes from this module.

What is learned is told apart: *success* (the env's team success), *format*
(a well-formed answer: the env's ``format_ok``, else an answer graded without
a format error, :func:`role_format_ok`) and *correctness* (the answer's value
is right however it is written: the env's ``answer_correct``, else
``own_correct``, :func:`role_correct`). The team's format and correctness are
those of the graded role.

Example:
    >>> from flexmg.metrics import summarize_episodes
    >>> s = summarize_episodes([
    ...     {"success": True, "score": 1.0, "rounds": 1,
    ...      "per_role": {"solver": {"format_error": False}}},
    ...     {"success": False, "score": 0.5, "rounds": 2,
    ...      "per_role": {"solver": {"format_error": True}}},
    ... ])
    >>> s["episodes"], s["success_rate"], s["score"], s["mean_rounds"], s["format_error"]
    (2, 0.5, 0.75, 1.5, {'solver': 0.5})
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "EpisodeSummary",
    "MeanCI",
    "RoleRates",
    "bootstrap_ci",
    "bootstrap_ci_over_seeds",
    "episode_mean",
    "format_mean_ci",
    "mean_ci",
    "pass_at_k",
    "per_prompt_ci",
    "prompt_intervals",
    "prompt_key",
    "prompt_values",
    "role_correct",
    "role_format_ok",
    "summarize_episodes",
    "t_quantile_975",
    "team_outcome",
]

BOOTSTRAP_RESAMPLES = 2000
_TEAM_KEYS = ("success", "format", "correct")


class RoleRates(TypedDict):
    """One role's rates over the episodes it played (``success`` is the team's)."""

    success: float
    format: float
    correct: float
    truncated: float


class EpisodeSummary(TypedDict):
    """Means over a batch of episodes (0.0 for an empty batch).

    ``format_rate``/``correct_rate`` are the graded role's; ``per_role`` has
    :class:`RoleRates` per role; ``format_error`` a rate for every role that
    reported ``format_error`` (over those episodes); ``role_means`` the mean of
    every numeric per-role metric over all episodes (missing counts as 0);
    ``prompts`` counts distinct prompts (:func:`prompt_key`).
    """

    episodes: int
    prompts: int
    success_rate: float
    score: float
    team_reward: float
    rounds: float
    format_rate: float
    correct_rate: float
    mean_rounds: float  # the same: rounds actually played per episode (the name reports use)
    format_error: dict[str, float]
    per_role: dict[str, RoleRates]
    role_means: dict[str, dict[str, float]]
    graded_role: str | None


def role_format_ok(role_metrics: Mapping[str, Any]) -> bool:
    """A well-formed answer: ``format_ok`` when the env reports it, else graded without error.

    >>> role_format_ok({"format_ok": True}), role_format_ok({"own_correct": None})
    (True, False)
    """
    if "format_ok" in role_metrics:
        return bool(role_metrics["format_ok"])
    return role_metrics.get("own_correct") is not None and not role_metrics.get("format_error")


def role_correct(role_metrics: Mapping[str, Any]) -> bool:
    """The answer's value is right: ``answer_correct`` when reported, else ``own_correct``.

    >>> role_correct({"answer_correct": False, "own_correct": True})
    False
    """
    value = role_metrics.get("answer_correct", role_metrics.get("own_correct"))
    return bool(value)


def episode_mean(values_by_prompt: Mapping[str, Sequence[float]]) -> float | None:
    """The mean over every episode, however the episodes fall into prompts.

    It is the point estimate that :func:`bootstrap_ci` brackets.

    >>> episode_mean({"a": [1.0, 1.0, 1.0], "b": [0.0]})
    0.75
    """
    count = sum(len(v) for v in values_by_prompt.values())
    return sum(sum(v) for v in values_by_prompt.values()) / count if count else None


def bootstrap_ci(
    values_by_prompt: Mapping[str, Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:  # fmt: skip
    """95% bootstrap interval of the episode mean, prompts resampled (a cluster bootstrap).

    Each resample draws the prompts with replacement, each with all its episodes,
    and takes the mean over the drawn episodes: the interval brackets
    :func:`episode_mean`, and many episodes of one fixed (greedy) outcome count as
    one draw's worth of evidence, not many. ``None`` with fewer than two prompts.
    One seed of :func:`bootstrap_ci_over_seeds`.

    >>> bootstrap_ci({"a": [1.0], "b": [0.0], "c": [1.0, 0.0]}) is not None
    True
    """
    return bootstrap_ci_over_seeds([values_by_prompt], resamples, seed)


def per_prompt_ci(values: Sequence[float], digits: int = 4) -> list[float] | None:
    """:func:`bootstrap_ci` of one value per prompt, rounded (reports' ``[low, high]``).

    >>> per_prompt_ci([1.0, 0.0, 1.0, 1.0]) is not None, per_prompt_ci([1.0])
    (True, None)
    """
    ci = bootstrap_ci({str(i): [float(v)] for i, v in enumerate(values)})
    return [round(x, digits) for x in ci] if ci else None


def bootstrap_ci_over_seeds(
    values_by_seed: Sequence[Mapping[str, Sequence[float]]], resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0, shared_prompts: bool = False,
) -> tuple[float, float] | None:  # fmt: skip
    """95% two-level bootstrap interval of the mean over seeds of each seed's episode mean.

    ``values_by_seed[s]`` maps each prompt of seed ``s`` (e.g. a training seed's
    evaluation) to its episodes' values. Each resample draws the seeds with
    replacement, then within every drawn seed its prompts with replacement, each
    prompt with all its episodes; the statistic is the mean over the drawn seeds of
    the mean over each one's drawn episodes. So the interval brackets the mean of
    the seeds' :func:`episode_mean` and widens when seeds disagree. With one seed
    only prompts are resampled; ``None`` when there is nothing to resample (no
    prompts, or one seed with one prompt).

    ``shared_prompts``: every seed was evaluated on the same prompts (e.g. the
    training seeds of one job, each evaluated on the job's held-out set). Then each
    resample draws one set of prompts for all the drawn seeds, so the prompts'
    difficulty counts once, not once per seed, and identical seeds give the
    one-seed interval.

    >>> agree = [{"a": [1.0], "b": [0.0]}, {"c": [1.0], "d": [0.0]}]
    >>> disagree = [{"a": [1.0], "b": [1.0]}, {"c": [0.0], "d": [0.0]}]
    >>> width = lambda ci: ci[1] - ci[0]
    >>> width(bootstrap_ci_over_seeds(disagree)) >= width(bootstrap_ci_over_seeds(agree))
    True
    """
    if shared_prompts:
        return _bootstrap_shared_prompts(values_by_seed, resamples, seed)
    groups = [[(float(sum(v)), len(v)) for v in g.values() if len(v)] for g in values_by_seed]
    groups = [g for g in groups if g]
    if not groups or (len(groups) == 1 and len(groups[0]) < 2):
        return None
    rng = random.Random(seed)

    def resampled_mean(clusters: list[tuple[float, int]]) -> float:
        total, count = 0.0, 0
        for _ in range(len(clusters)):
            value, n = rng.choice(clusters)
            total += value
            count += n
        return total / count

    if len(groups) == 1:
        stats = [resampled_mean(groups[0]) for _ in range(resamples)]
    else:
        k = len(groups)
        stats = [
            sum(resampled_mean(rng.choice(groups)) for _ in range(k)) / k for _ in range(resamples)
        ]
    stats.sort()
    return stats[int(0.025 * resamples)], stats[min(resamples - 1, int(0.975 * resamples))]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``c`` successes in ``n`` samples (Chen et al., 2021).

    >>> pass_at_k(n=8, c=2, k=1), pass_at_k(n=8, c=0, k=8), pass_at_k(n=8, c=1, k=8)
    (0.25, 0.0, 1.0)
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def prompt_key(metrics: Mapping[str, Any], index: int = 0) -> str:
    """What identifies an episode's prompt: ``prompt_id``, else ``task_id``, else its index.

    Generated tasks can repeat a prompt under another ``task_id``; ``prompt_id``
    (the env's hash of the prompt text) counts them once.

    >>> prompt_key({"task_id": "gen/7", "prompt_id": "ab12"}), prompt_key({}, 3)
    ('ab12', 'episode-3')
    """
    return str(metrics.get("prompt_id") or metrics.get("task_id") or f"episode-{index}")


def _number(value: Any) -> float:
    """``value`` as a float; missing, None and non-numbers count as 0."""
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _episodes(metrics: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    rows = list(metrics)
    for i, m in enumerate(rows):
        if not isinstance(m, Mapping):
            raise TypeError(
                f"summarize_episodes expects one metrics dict per episode; item {i} is "
                f"{type(m).__name__} (pass [ep.metrics for ep in episodes])"
            )
    return rows


def _roles(m: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The episode's per-role metrics (anything that is not a mapping is left out)."""
    per_role = m.get("per_role") or {}
    if not isinstance(per_role, Mapping):
        return {}
    return {r: rm for r, rm in per_role.items() if isinstance(rm, Mapping)}


def _bootstrap_shared_prompts(
    values_by_seed: Sequence[Mapping[str, Sequence[float]]], resamples: int, seed: int
) -> tuple[float, float] | None:
    """:func:`bootstrap_ci_over_seeds` when every seed saw the same prompts."""
    tables = [{p: (float(sum(v)), len(v)) for p, v in g.items() if len(v)} for g in values_by_seed]
    tables = [t for t in tables if t]
    prompts = sorted({p for t in tables for p in t})
    if len(prompts) < 2:
        return None
    rng = random.Random(seed)
    stats = []
    for _ in range(resamples):
        drawn = [rng.choice(prompts) for _ in prompts]
        means = []
        for table in (rng.choice(tables) for _ in tables):
            cells = [table[p] for p in drawn if p in table]
            count = sum(n for _, n in cells)
            if count:
                means.append(sum(v for v, _ in cells) / count)
        if means:
            stats.append(sum(means) / len(means))
    if not stats:
        return None
    stats.sort()
    return stats[int(0.025 * len(stats))], stats[min(len(stats) - 1, int(0.975 * len(stats)))]


def prompt_values(metrics: Iterable[Mapping[str, Any]], key: str) -> dict[str, list[float]]:
    """Each prompt's (:func:`prompt_key`) episode values of ``key``.

    ``key`` is ``success``, ``format`` or ``correct`` (the team's,
    :func:`team_outcome`) or ``team_reward``: what :func:`bootstrap_ci` and
    :func:`bootstrap_ci_over_seeds` resample.

    >>> prompt_values([{"task_id": "a", "success": True}, {"task_id": "a"}], "success")
    {'a': [1.0, 0.0]}
    """
    if key not in (*_TEAM_KEYS, "team_reward"):
        raise ValueError(f"key must be one of {[*_TEAM_KEYS, 'team_reward']}, got {key!r}")
    out: dict[str, list[float]] = {}
    for k, m in enumerate(_episodes(metrics)):
        value = _number(m.get(key)) if key == "team_reward" else team_outcome(m)[key]
        out.setdefault(prompt_key(m, k), []).append(value)
    return out


def team_outcome(m: Mapping[str, Any]) -> dict[str, float]:
    """An episode's team ``success``, ``format`` and ``correct`` (1.0/0.0; the graded role's).

    >>> team_outcome({"success": True, "graded_role": "s",
    ...               "per_role": {"s": {"format_ok": False, "answer_correct": True}}})
    {'success': 1.0, 'format': 0.0, 'correct': 1.0}
    """
    per_role = m.get("per_role") or {}
    graded = per_role.get(m.get("graded_role"), {}) if isinstance(per_role, Mapping) else {}
    graded = graded if isinstance(graded, Mapping) else {}
    return {
        "success": float(bool(m.get("success", False))),
        "format": float(role_format_ok(graded)),
        "correct": float(role_correct(graded)),
    }


def summarize_episodes(metrics: Iterable[Mapping[str, Any]]) -> EpisodeSummary:
    """Team rates and means, and per-role rates, over one metrics dict per episode.

    Args:
        metrics: one metrics dict per episode (missing keys count as 0 / False).

    Returns:
        An :class:`EpisodeSummary`.

    >>> s = summarize_episodes([
    ...     {"task_id": "t1", "success": True, "graded_role": "s",
    ...      "per_role": {"s": {"own_correct": True, "format_error": False}}},
    ...     {"task_id": "t2", "success": False, "graded_role": "s",
    ...      "per_role": {"s": {"own_correct": None, "format_error": False}}}])
    >>> s["prompts"], s["format_rate"], s["per_role"]["s"]["correct"], s["role_means"]["s"]
    (2, 0.5, 0.5, {'own_correct': 0.5, 'format_error': 0.0})
    """
    rows = _episodes(metrics)
    n = max(1, len(rows))
    team = [team_outcome(m) for m in rows]
    fmt: dict[str, list[float]] = {}
    rates: dict[str, dict[str, list[float]]] = {}
    sums: dict[str, dict[str, float]] = {}
    for m, row in zip(rows, team):
        for role, rm in _roles(m).items():
            acc = rates.setdefault(
                role, {"success": [], "format": [], "correct": [], "truncated": []}
            )
            acc["success"].append(row["success"])
            acc["format"].append(float(role_format_ok(rm)))
            acc["correct"].append(float(role_correct(rm)))
            acc["truncated"].append(float(bool(rm.get("truncated", False))))
            if "format_error" in rm:
                fmt.setdefault(role, []).append(float(bool(rm["format_error"])))
            total = sums.setdefault(role, {})
            for key, value in rm.items():
                if isinstance(value, (bool, int, float)):
                    total[key] = total.get(key, 0.0) + float(value)
    return {
        "episodes": len(rows),
        "prompts": len({prompt_key(m, k) for k, m in enumerate(rows)}),
        "success_rate": sum(bool(m.get("success", False)) for m in rows) / n,
        "score": sum(_number(m.get("score")) for m in rows) / n,
        "team_reward": sum(_number(m.get("team_reward")) for m in rows) / n,
        "rounds": sum(_number(m.get("rounds")) for m in rows) / n,
        "mean_rounds": sum(_number(m.get("rounds")) for m in rows) / n,
        "format_rate": sum(r["format"] for r in team) / n,
        "correct_rate": sum(r["correct"] for r in team) / n,
        "format_error": {r: _mean(v) for r, v in fmt.items()},
        "per_role": {
            role: RoleRates(
                success=_mean(acc["success"]),
                format=_mean(acc["format"]),
                correct=_mean(acc["correct"]),
                truncated=_mean(acc["truncated"]),
            )
            for role, acc in rates.items()
        },
        "role_means": {r: {k: v / n for k, v in t.items()} for r, t in sums.items()},
        "graded_role": next((m["graded_role"] for m in rows if m.get("graded_role")), None),
    }


def prompt_intervals(metrics: Iterable[Mapping[str, Any]]) -> dict[str, list[float] | None]:
    """95% bootstrap intervals of the team's rates and mean reward over prompts.

    Greedy outcomes are fixed per prompt, so the prompts (:func:`prompt_key`), not the
    episodes, are resampled, each with all its episodes (:func:`bootstrap_ci`): the
    intervals bracket the episode means that :func:`summarize_episodes` reports. Keys ``success_rate``, ``format_rate``,
    ``correct_rate`` and ``team_reward`` (e.g. a code team's hidden-test score);
    ``None`` with fewer than two prompts.

    >>> prompt_intervals([{"task_id": "t", "success": True}])["success_rate"] is None
    True
    """
    rows = _episodes(metrics)
    out: dict[str, list[float] | None] = {}
    for key in (*_TEAM_KEYS, "team_reward"):
        ci = bootstrap_ci(prompt_values(rows, key))
        out[key if key == "team_reward" else f"{key}_rate"] = list(ci) if ci else None
    return out


# ----------------------------------------------------------------------------- over seeds
# Two-sided 95% quantiles t_{0.975, df} for df = 1..30 (standard tables).
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom.

    Exact table values for ``df <= 30``, the Cornish-Fisher expansion (error
    below 1e-4) above.

    >>> t_quantile_975(2), round(t_quantile_975(60), 3)
    (4.3027, 2.0)
    """
    if not isinstance(df, int) or df < 1:
        raise ValueError(f"degrees of freedom must be an int >= 1, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class MeanCI:
    """A mean with its 95% confidence interval (``low``/``high`` are None for n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int
    std: float

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None when it is undefined)."""
        return None if self.high is None else self.high - self.mean

    def to_dict(self) -> dict[str, Any]:
        """``{"mean", "ci95": [low, high], "n", "std"}`` (the form results files hold)."""
        return {"mean": self.mean, "ci95": [self.low, self.high], "n": self.n, "std": self.std}

    def format(self, digits: int = 3) -> str:
        """``"0.600 ± 0.248"`` (or ``"0.600 (n=1)"`` when there is no interval).

        >>> mean_ci([1.0, 0.0]).format(2)
        '0.50 ± 6.35'
        """
        return format_mean_ci(self.mean, self.half_width, self.n, digits)


def format_mean_ci(mean: float, half_width: float | None, n: int, digits: int = 3) -> str:
    """``"0.600 ± 0.248"``, or ``"0.600 (n=1)"`` when there is no interval (``half_width`` None).

    >>> format_mean_ci(0.5, None, 1), format_mean_ci(0.5, 0.25, 3, digits=2)
    ('0.500 (n=1)', '0.50 ± 0.25')
    """
    if half_width is None:
        return f"{mean:.{digits}f} (n={n})"
    return f"{mean:.{digits}f} ± {half_width:.{digits}f}"


def mean_ci(values: Sequence[float]) -> MeanCI:
    """Mean and two-sided 95% t-interval of ``values`` (e.g. one value per seed).

    NaN values are an error (they would silently poison the mean); an empty
    sequence is an error too.

    >>> mean_ci([2.0]).low is None
    True
    """
    xs = [float(v) for v in values]
    if not xs:
        raise ValueError("mean_ci needs at least one value (got an empty sequence)")
    if any(math.isnan(x) for x in xs):
        raise ValueError(f"mean_ci got NaN among {xs}; drop or fix those values first")
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return MeanCI(mean=mean, low=None, high=None, n=n, std=0.0)
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    std = math.sqrt(var)
    half = t_quantile_975(n - 1) * std / math.sqrt(n)
    return MeanCI(mean=mean, low=mean - half, high=mean + half, n=n, std=std)
