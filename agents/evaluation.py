"""A training run's held-out evaluations: the policy played greedily, its episodes kept.

:func:`evaluate_policy` plays held-out episodes (greedy, ``split="eval"``) of a
team policy through the one evaluation path (:func:`flexmg.evaluation.evaluate`,
each role acting with its own parameters) and reports
:func:`flexmg.evaluation.evaluation_record`, in the shape the run folder's
``metrics.jsonl``, ``summary.json`` and ``flexmg eval`` record. The trainer also
saves each evaluation's episode metrics in the run folder
(``evals/update_NNNNNNN.jsonl``, :func:`write_eval_episodes`), so intervals over
several runs (seeds and prompts) can be computed afterwards.

Example:
    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> _ = write_eval_episodes(run, 3, [{"task_id": "a", "success": True}])
    >>> read_eval_episodes(run, 3), saved_eval_updates(run)
    ([{'task_id': 'a', 'success': True}], [3])
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flexmg.agents.samples import RolloutBatch, collect_rollout
from flexmg.evaluation import evaluate_batches, evaluation_record
from flexmg.io import atomic_write_text, json_default
from flexmg.protocols import VectorEnv

__all__ = [
    "EVALS_DIR",
    "eval_episodes_path",
    "evaluate_episodes",
    "evaluate_policy",
    "read_eval_episodes",
    "saved_eval_updates",
    "write_eval_episodes",
]

EVALS_DIR = "evals"
"""A run folder's held-out episodes, one file per evaluation."""


def eval_episodes_path(run_dir: str | os.PathLike[str], update: int) -> Path:
    """Where a run keeps the episodes of its evaluation after ``update`` updates."""
    return Path(run_dir) / EVALS_DIR / f"update_{update:07d}.jsonl"


def write_eval_episodes(
    run_dir: str | os.PathLike[str], update: int, episodes: Sequence[Mapping[str, Any]]
) -> Path:
    """Save an evaluation's episode metrics (one JSON object per line, atomically)."""
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


def evaluate_policy(policy: Any, env_id: str, episodes: int, **options: Any) -> dict[str, Any]:
    """Play ``episodes`` episodes of ``env_id`` (held-out split, greedy) and summarize them.

    ``options`` are those of :func:`evaluate_episodes` (``seed``, ``env_kwargs``,
    ``split``, ``batch_size``, ``greedy``, ``vectorization``, ``replay_repeats``).
    Returns :func:`flexmg.evaluation.evaluation_record` of the episodes.
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
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> list[dict[str, Any]]:
    """The metrics of each held-out episode (greedy by default), in seed order.

    Episode ``k`` is seeded ``seed + k``; each batch is the learner's own rollout
    (:func:`flexmg.agents.samples.collect_rollout`: each role acts with its own
    parameters, and actions cut at the token limit are flagged per role). Under
    greedy decoding an episode is fixed by its task, so with ``replay_repeats`` (the
    default) a task drawn by several seeds is played once and counted once per seed
    (:func:`flexmg.evaluation.evaluate_batches`). Pass ``replay_repeats=False`` for an
    env whose episodes draw randomness after ``reset`` (a flexmg env draws only its task).
    ``on_batch`` sees each batch played (its episodes' transcripts in ``results``), e.g.
    to keep a sample of them (:mod:`flexmg.agents.run_transcripts`).
    """

    def play(vec: VectorEnv, seeds: list[int]) -> list[dict[str, Any]]:
        batch = collect_rollout(policy, vec, seed=seeds, greedy=greedy)
        if on_batch is not None:
            on_batch(batch)
        return batch.metrics

    return evaluate_batches(
        play,
        env_id,
        range(seed, seed + episodes),
        env_kwargs=env_kwargs,
        split=split,
        batch_size=batch_size,
        vectorization=vectorization,
        replay_repeats=greedy and replay_repeats,
    )
