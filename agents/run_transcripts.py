"""What a training run and ``flexmg eval`` save for ``flexmg view``: samples of their episodes.

A training run keeps, next to each held-out evaluation's metrics, a seeded
sample of its episodes' transcripts (``evals/update_N.transcripts.jsonl``: the
same prompts at every evaluation, so the first and the last pair up), and at
the same updates a sample of the training rollout with the value, advantage and
return of each action (``rollouts/update_N.transcripts.jsonl``).
``TrainConfig.transcripts`` (``flexmg train --transcripts N``) bounds both; 0
saves none. The trainer calls :func:`evaluate_saving_transcripts` and
:func:`save_rollout_transcripts`; ``flexmg eval`` uses :func:`keep_batches`.

Example (``batch``: a :class:`~flexmg.agents.samples.RolloutBatch` after a PPO update)::

    sample = TranscriptSample(limit=8, keep="first")
    keep_batches(sample, "math-2agent", {"kind": "train", "update": 3}, annotate=True)(batch)
    save_sample(run_transcripts_path(run_dir, 3, "train"), sample)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from flexmg.agents.samples import RolloutBatch, Sample
from flexmg.transcripts import TranscriptSample, run_transcripts_path, save_sample

__all__ = [
    "action_annotations",
    "evaluate_saving_transcripts",
    "keep_batches",
    "save_rollout_transcripts",
]


class _TrainerLike(Protocol):
    """What the helpers read of a :class:`~flexmg.agents.trainer.Trainer`."""

    config: Any  # TrainConfig: env, eval_seed, eval_every, updates, transcripts
    policy_config: Any  # PolicyConfig: critic
    run_dir: Path

    def evaluate_episodes(
        self, on_batch: Callable[[RolloutBatch], None] | None = None
    ) -> list[dict[str, Any]]: ...


def action_annotations(sample: Sample, with_value: bool = True) -> dict[str, float]:
    """The numbers PPO used for one action: ``value`` (old), ``advantage`` and ``return``.

    At the token level (TPPO) ``advantage`` and ``return`` are the means over the
    action's tokens. ``with_value=False`` (a critic-free learner) leaves out the value.

    >>> s = Sample(0, 0, "a", 0, [1], [2, 3], False, 1.0, 1.0, True, old_value=0.5,
    ...            advantage=0.2, ret=1.0)
    >>> action_annotations(s), action_annotations(s, with_value=False)
    ({'value': 0.5, 'advantage': 0.2, 'return': 1.0}, {'advantage': 0.2, 'return': 1.0})
    """
    n = max(1, len(sample.action_ids))
    tokens_adv, tokens_ret = sample.token_advantages[:n], sample.token_returns[:n]
    advantage = sum(tokens_adv) / len(tokens_adv) if tokens_adv else sample.advantage
    ret = sum(tokens_ret) / len(tokens_ret) if tokens_ret else sample.ret
    out = {"value": float(sample.old_value)} if with_value else {}
    return {**out, "advantage": float(advantage), "return": float(ret)}


def keep_batches(
    sample: TranscriptSample,
    env: str,
    source: Mapping[str, Any],
    annotate: bool = False,
    with_value: bool = True,
) -> Callable[[RolloutBatch], None]:
    """A callback that offers every episode of a played batch to ``sample``.

    ``annotate`` adds each action's :func:`action_annotations` (a training rollout
    after its update; a greedy evaluation has no values to show).
    """

    def keep(batch: RolloutBatch) -> None:
        for i, result in enumerate(batch.results):
            notes = None
            if annotate:
                notes = [action_annotations(s, with_value) for s in batch.episodes[i]]
            sample.add_episode(result, env, annotations=notes, source=source)

    return keep


def evaluate_saving_transcripts(trainer: _TrainerLike, update: int) -> list[dict[str, Any]]:
    """The metrics of the trainer's held-out episodes; a sample of their transcripts is saved.

    The sample (``config.transcripts`` episodes, seeded by ``config.eval_seed``) goes
    to :func:`~flexmg.transcripts.run_transcripts_path` ``(run_dir, update)``.
    """
    cfg = trainer.config
    sample = TranscriptSample(limit=cfg.transcripts, keep="sample", seed=cfg.eval_seed)
    source = {"kind": "eval", "update": int(update)}
    episodes = trainer.evaluate_episodes(on_batch=keep_batches(sample, cfg.env, source))
    save_sample(run_transcripts_path(trainer.run_dir, update), sample)
    return episodes


def save_rollout_transcripts(
    trainer: _TrainerLike, update: int, batch: RolloutBatch
) -> Path | None:
    """At an evaluation's update, save the first ``config.transcripts`` episodes of ``batch``.

    ``update`` counts the updates done (the rollout of the first update is 1), as in
    ``metrics.jsonl``; each action carries :func:`action_annotations` (no value without a
    critic). Returns the
    file written (None between evaluations or with ``transcripts=0``).
    """
    cfg = trainer.config
    if cfg.transcripts == 0 or (update % cfg.eval_every and update != cfg.updates):
        return None
    sample = TranscriptSample(limit=cfg.transcripts, keep="first")
    source = {"kind": "train", "update": int(update)}
    with_value = trainer.policy_config.critic != "none"
    keep_batches(sample, cfg.env, source, annotate=True, with_value=with_value)(batch)
    return save_sample(run_transcripts_path(trainer.run_dir, update, "train"), sample)
