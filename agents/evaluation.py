"""Held-out evaluation of a team policy: success, format and correctness, per role and team.

:func:`evaluate_policy` plays held-out episodes (greedy, ``split="eval"``) with
:func:`~flexmg.agents.samples.collect_rollout` and reports
:func:`evaluation_record`: the summary of :mod:`flexmg.metrics` (success, format
and correctness told apart; the team's are the graded role's) with 95%
bootstrap intervals over distinct prompts, in the shape the run folder's
``metrics.jsonl``, ``summary.json`` and ``flexmg eval`` record. The trainer
also saves each evaluation's episode metrics in the run folder
(``evals/update_NNNNNNN.jsonl``, :func:`write_eval_episodes`), so intervals over
several runs (seeds and prompts) can be computed afterwards.

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

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flexmg.agents.samples import collect_rollout
from flexmg.io import atomic_write_text, json_default
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


EVALS_DIR = "evals"  # a run folder's held-out episodes, one file per evaluation


def eval_episodes_path(run_dir: str | os.PathLike[str], update: int) -> Path:
    """Where a run keeps the episodes of its evaluation after ``update`` updates."""
    return Path(run_dir) / EVALS_DIR / f"update_{update:07d}.jsonl"


def write_eval_episodes(
    run_dir: str | os.PathLike[str], update: int, episodes: Sequence[Mapping[str, Any]]
) -> Path:
    """Save an evaluation's episode metrics (one JSON object per line, atomically).

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> _ = write_eval_episodes(run, 3, [{"task_id": "a", "success": True}])
    >>> read_eval_episodes(run, 3), saved_eval_updates(run)
    ([{'task_id': 'a', 'success': True}], [3])
    """
    path = eval_episodes_path(run_dir, update)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(dict(m), default=json_default) + "\n" for m in episodes]
    atomic_write_text(path, "".join(lines))
    return path


def read_eval_episodes(run_dir: str | os.PathLike[str], update: int) -> list[dict[str, Any]]:
    """The episode metrics :func:`write_eval_episodes` saved for ``update``."""
    path = eval_episodes_path(run_dir, update)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(
            f"{path}: no saved held-out episodes for update {update} ({exc.strerror}); runs "
            "trained before evaluations were saved per episode have none"
        ) from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def saved_eval_updates(run_dir: str | os.PathLike[str]) -> list[int]:
    """The updates after which a run saved its held-out episodes, in order."""
    folder = Path(run_dir) / EVALS_DIR
    found = []
    for path in folder.glob("update_*.jsonl") if folder.is_dir() else []:
        digits = path.stem.removeprefix("update_")
        if digits.isdigit():
            found.append(int(digits))
    return sorted(found)


# Task fields that name a task without changing its episode.
IDENTITY_META = frozenset({"index"})


def task_key(task: Any) -> str:
    """What makes two drawn tasks the same episode under greedy decoding.

    Prompt, answer and ``meta`` (hidden tests, difficulty, ...) count; the task's
    name does not (``id``, ``meta["index"]``): generated families draw one problem
    under many names.

    >>> from flexmg.tasks import Task
    >>> a = Task("gen/1", "What is 2 + 3?", "5", {"index": 1, "difficulty": 1})
    >>> b = Task("gen/9", "What is 2 + 3?", "5", {"index": 9, "difficulty": 1})
    >>> task_key(a) == task_key(b), task_key(a) == task_key(Task("gen/1", "What is 2 + 3?", "6"))
    (True, False)
    """
    meta = {k: v for k, v in task.meta.items() if k not in IDENTITY_META}
    return json.dumps([task.prompt, task.answer, meta], sort_keys=True, default=repr)


def distinct_seed_plan(
    env_id: str, seeds: Sequence[int], env_kwargs: dict[str, Any] | None = None
) -> tuple[list[int], list[int]]:
    """Which seeds draw a task not drawn before, and which of those each seed repeats.

    Resets one env of ``env_id`` with every seed (no action is taken) and returns
    ``(played, copy_of)``: ``played`` are the seeds whose task is new, in order, and
    ``copy_of[i]`` is the index in ``played`` of the seed that drew ``seeds[i]``'s task.

    >>> played, copy_of = distinct_seed_plan("echo", [0, 1, 2])
    >>> len(copy_of), all(played[j] <= s for j, s in zip(copy_of, [0, 1, 2]))
    (3, True)
    """
    import flexmg

    env = flexmg.make(env_id, **(env_kwargs or {}))
    played: list[int] = []
    first: dict[str, int] = {}
    copy_of: list[int] = []
    try:
        for s in seeds:
            env.reset(seed=int(s))
            key = task_key(env.task)
            if key not in first:
                first[key] = len(played)
                played.append(int(s))
            copy_of.append(first[key])
    finally:
        env.close()
    return played, copy_of


def evaluate_policy(policy: Any, env_id: str, episodes: int, **options: Any) -> dict[str, Any]:
    """Play ``episodes`` episodes of ``env_id`` (held-out split, greedy) and summarize them.

    ``options`` are those of :func:`evaluate_episodes` (``seed``, ``env_kwargs``,
    ``split``, ``batch_size``, ``greedy``, ``vectorization``, ``replay_repeats``).
    Returns :func:`evaluation_record` of the episodes.
    """
    return evaluation_record(evaluate_episodes(policy, env_id, episodes, **options))


def evaluate_episodes(
    policy: Any,
    env_id: str,
    episodes: int,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    split: str = "eval",
    batch_size: int = 64,
    greedy: bool = True,
    vectorization: str = "sync",
    replay_repeats: bool = True,
) -> list[dict[str, Any]]:
    """The metrics of each held-out episode (greedy by default), in seed order.

    Episode ``k`` is seeded ``seed + k``. Under greedy decoding an episode is fixed by
    its task, so with ``replay_repeats`` (the default) a task drawn by several seeds
    is played once and its episode (the same dict) counted once per seed: the same
    figures as playing them all, in less time. Pass ``replay_repeats=False`` for an
    env whose episodes draw randomness after ``reset`` (a flexmg env draws only its
    task).
    """
    kwargs = {**(env_kwargs or {}), "split": split}
    seeds = list(range(seed, seed + episodes))
    if greedy and replay_repeats and episodes > 0:
        played, copy_of = distinct_seed_plan(env_id, seeds, kwargs)
    else:
        played, copy_of = seeds, list(range(len(seeds)))
    unique = _play_seeds(policy, env_id, played, kwargs, batch_size, greedy, vectorization)
    return [unique[j] for j in copy_of]


def _play_seeds(
    policy: Any,
    env_id: str,
    seeds: Sequence[int],
    env_kwargs: dict[str, Any],
    batch_size: int,
    greedy: bool,
    vectorization: str,
) -> list[dict[str, Any]]:
    """The episode metrics of one episode per seed, played ``batch_size`` at a time."""
    import flexmg

    metrics: list[dict[str, Any]] = []
    vec = None
    try:
        for start in range(0, len(seeds), batch_size):
            chunk = list(seeds[start : start + batch_size])
            if vec is None or vec.num_envs != len(chunk):
                if vec is not None:
                    vec.close()
                vec = flexmg.make_vec(
                    env_id, num_envs=len(chunk), vectorization=vectorization, **env_kwargs
                )
            batch = collect_rollout(policy, vec, seed=chunk, greedy=greedy)
            metrics.extend(batch.metrics)
    finally:
        if vec is not None:
            vec.close()
    return metrics
