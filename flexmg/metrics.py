"""One summary of a batch of episodes' metrics (the numbers every report shows).

Episodes report metrics as dicts (``flexmg.vector.EpisodeResult.metrics``):
``success``, ``score``, ``team_reward``, ``rounds``, ``graded_role`` and
``per_role`` (``{role: {"format_error": bool, ...}}``). The leaderboard's cells,
the trainer's evaluations and ``rollout(...).summary()`` all need the same
means; :func:`summarize_episodes` computes them once.

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

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

__all__ = ["EpisodeSummary", "summarize_episodes"]


class EpisodeSummary(TypedDict):
    """Means over a batch of episodes (0.0 for an empty batch)."""

    episodes: int
    success_rate: float
    score: float
    team_reward: float
    rounds: float
    mean_rounds: float  # the same: rounds actually played per episode (the name reports use)
    format_error: dict[str, float]
    graded_role: str | None


def _number(value: Any) -> float:
    """``value`` as a float; missing, None and non-numbers count as 0."""
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def summarize_episodes(metrics: Iterable[Mapping[str, Any]]) -> EpisodeSummary:
    """Success rate, mean score, team reward and rounds, and per-role format-error rates.

    Args:
        metrics: one metrics dict per episode (missing keys count as 0 / False).

    Returns:
        An :class:`EpisodeSummary`; ``format_error`` has a rate for every role
        that reported ``format_error`` in some episode (over those episodes),
        ``graded_role`` is the first one an episode named.
    """
    rows = list(metrics)
    for i, m in enumerate(rows):
        if not isinstance(m, Mapping):
            raise TypeError(
                f"summarize_episodes expects one metrics dict per episode; item {i} is "
                f"{type(m).__name__} (pass [ep.metrics for ep in episodes])"
            )
    n = max(1, len(rows))
    fmt: dict[str, list[float]] = {}
    for m in rows:
        per_role = m.get("per_role") or {}
        for role, rm in per_role.items() if isinstance(per_role, Mapping) else ():
            if isinstance(rm, Mapping) and "format_error" in rm:
                fmt.setdefault(role, []).append(float(bool(rm["format_error"])))
    return {
        "episodes": len(rows),
        "success_rate": sum(bool(m.get("success", False)) for m in rows) / n,
        "score": sum(_number(m.get("score")) for m in rows) / n,
        "team_reward": sum(_number(m.get("team_reward")) for m in rows) / n,
        "rounds": sum(_number(m.get("rounds")) for m in rows) / n,
        "mean_rounds": sum(_number(m.get("rounds")) for m in rows) / n,
        "format_error": {r: sum(v) / len(v) for r, v in fmt.items()},
        "graded_role": next((m["graded_role"] for m in rows if m.get("graded_role")), None),
    }
