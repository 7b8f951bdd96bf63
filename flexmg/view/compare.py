"""Side by side: the same prompts played by two groups (start vs end of training, two entries).

:func:`pair_by_prompt` pairs the episodes of two groups that played the same
prompt (the k-th episode of a prompt in one group with the k-th in the other);
:func:`default_comparisons` picks what a page compares: the first and the last
evaluation of a run, each leaderboard entry (or team: a record whose ``source`` names
an ``entry``) with the first one on the same env,
else the first group with each other.

Example:
    >>> a = [{"prompt_id": "p1"}, {"prompt_id": "p2"}, {"prompt_id": "p1"}]
    >>> b = [{"prompt_id": "p2"}, {"prompt_id": "p1"}, {"prompt_id": "p3"}]
    >>> pair_by_prompt(a, b)
    [(0, 1), (1, 0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flexmg.view.sources import EpisodeGroup

__all__ = ["Comparison", "default_comparisons", "pair_by_prompt"]

MAX_OTHERS = 8  # comparisons of one group with others, at most


@dataclass
class Comparison:
    """Groups ``a`` and ``b`` (indices into the page's groups) and their paired episodes.

    ``pairs`` holds ``(i, j)``: episode ``i`` of group ``a`` and episode ``j`` of
    group ``b`` played the same prompt.
    """

    label: str
    a: int
    b: int
    pairs: list[tuple[int, int]] = field(default_factory=list)


def pair_by_prompt(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of episodes with the same ``prompt_id``, in ``a``'s order.

    A prompt played ``n`` times in ``a`` and ``m`` times in ``b`` gives ``min(n, m)``
    pairs, matched in file order; prompts only one side played are left out.
    """
    waiting: dict[str, list[int]] = {}
    for j, record in enumerate(b):
        waiting.setdefault(str(record.get("prompt_id")), []).append(j)
    pairs = []
    for i, record in enumerate(a):
        queue = waiting.get(str(record.get("prompt_id")))
        if queue:
            pairs.append((i, queue.pop(0)))
    return pairs


def _compare(groups: Sequence[EpisodeGroup], a: int, b: int, label: str) -> Comparison | None:
    pairs = pair_by_prompt(groups[a].records, groups[b].records)
    return Comparison(label, a, b, pairs) if pairs else None


def default_comparisons(groups: Sequence[EpisodeGroup]) -> list[Comparison]:
    """What the page compares side by side (see the module docs); only pairs of shared prompts.

    >>> g = [EpisodeGroup("eval @ update 0", "eval", 0, records=[{"prompt_id": "p"}]),
    ...      EpisodeGroup("eval @ update 9", "eval", 9, records=[{"prompt_id": "p"}])]
    >>> [(c.label, c.pairs) for c in default_comparisons(g)]
    [('start (update 0) vs end (update 9)', [(0, 0)])]
    """
    out: list[Comparison | None] = []
    evals = sorted(
        (i for i, g in enumerate(groups) if g.kind == "eval"), key=lambda i: groups[i].update or 0
    )
    if len(evals) >= 2:
        first, last = evals[0], evals[-1]
        label = f"start (update {groups[first].update}) vs end (update {groups[last].update})"
        out.append(_compare(groups, first, last, label))
    by_env: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        if g.entry is not None:
            by_env.setdefault(str(g.env), []).append(i)
    for env, members in by_env.items():
        for other in members[1 : 1 + MAX_OTHERS]:
            label = f"{groups[members[0]].entry} vs {groups[other].entry} on {env}"
            out.append(_compare(groups, members[0], other, label))
    rest = [i for i, g in enumerate(groups) if g.kind in ("episodes", "flexmg eval")]
    if not any(out) and len(rest) >= 2:
        for other in rest[1 : 1 + MAX_OTHERS]:
            label = f"{groups[rest[0]].label} vs {groups[other].label}"
            out.append(_compare(groups, rest[0], other, label))
    return [c for c in out if c is not None]
