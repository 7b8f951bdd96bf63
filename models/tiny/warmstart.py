"""Warm-start the tiny model: a short supervised pass on noisy-teacher transcripts.

The tiny model starts from random weights, so RL alone would never find a
``\\boxed{...}`` answer. This script trains it (all weights, seeded, one CPU
thread so the result is bit-for-bit reproducible) on role-formatted transcripts
of the math workflows (``math-1agent`` .. ``math-4agent``) on train-split
arithmetic (the math envs' default task, operands up to 40, plus some up to 99),
each family's warm-start data as it declares them (``Family.warm_start``),
written by the noisy teacher of
:mod:`flexmg.envs.families.teachers`: right 40% of the time, its one systematic slip
(``gold + 1``) 50%, noise otherwise, answers boxed 95% of the time, the work
shown first (``03+09=13 \\boxed{13}``: operands restated with two digits each).

Training has two stages. Stage 1 (``steps``) starts from random weights;
stage 2 ("sharpen", ``sharpen_steps``) trains more on the same data with a
second learning-rate cycle. After stage 1 the model formats almost every
answer, but its arithmetic is imprecise: a third of its held-out greedy
answers are neither right nor the slip. After stage 2 most greedy answers are
the right value or the slip, so greedy decoding often follows the slip while
sampling finds the right value: greedy correctness sits far below pass@8 (the
figures are in the checkpoint's ``warmstart.json``, ``eval``), and RL has a
signal (avoid the slip) that carries over to unseen problems.

``--code-weight W`` mixes the procedural code family (train split,
``code-1agent`` .. ``code-3agent``, written by the code teacher) into stage 1,
``--sharpen-code-weight W`` into stage 2; the shipped checkpoint has code in
stage 2 only (0 and 0.35, see ``DEFAULTS``).

``--relay-weight W`` makes a share ``W`` of the episodes relay episodes
(``relay-2agent``, ``relay-3agent``, played on the real env by the relay
teacher: the reader passes the problem on only 30% of the time), and
``--multi-round-weight M`` plays a share ``M`` of the math episodes with
horizon 2 on the real env (a wrong first round is followed by a retry round
that sees the env's feedback). The shipped checkpoint uses 0.1 and 0.15 (see
``DEFAULTS``). These episodes are judged as the math envs v1 judged them when
the shipped weights were built (only one right boxed answer solves the task;
:mod:`flexmg.models.tiny.historic`): today's v2 reward would change the retry
rounds, and with them every later draw of the data.

Run ``python -m flexmg.models.tiny.warmstart`` to rebuild ``models/tiny/assets/``
(``--check`` rebuilds in memory and compares with the shipped weights; both
stages take about an hour on one core). ``--from-stage1 FOLDER`` runs stage 2
only, from a checkpoint built with ``--sharpen-steps 0``: the result is the
same model, bit for bit.

This module is the stage plan (:func:`train`) and its command line; the parts
are modules of their own, and their public names can be imported from here:
the data (:mod:`~flexmg.models.tiny.mixtures`), the tokenized batches and their
hash (:mod:`~flexmg.models.tiny.batches`), the supervised loop and
:func:`fine_tune` (:mod:`~flexmg.models.tiny.fit`), and hashing, comparing and
saving checkpoints (:mod:`~flexmg.models.tiny.checkpoint`).

Example:
    >>> [list(w) for w in math_mixture().workflows][2]
    ['planner', 'solver', 'verifier']
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flexmg.models.tiny.batches import BUCKETS, PREFIX_STEPS, prefix_data_sha256
from flexmg.models.tiny.batches import _length_buckets as _length_buckets
from flexmg.models.tiny.checkpoint import same_weights, save, weights_sha256
from flexmg.models.tiny.fit import _cosine, _fit, _mean_tail, fine_tune
from flexmg.models.tiny.mixtures import (
    HISTORIC_JUDGEMENT,
    MULTI_ROUND_HORIZON,
    WARMSTART_TEST_FRACTION,
    code_mixture,
    default_mixtures,
    family_mixture,
    math_mixture,
    multi_round_mixture,
    relay_mixture,
)
from flexmg.models.tiny.model import TINY_ASSET_DIR, build_tiny_model, count_parameters, tiny_config
from flexmg.models.tiny.tokenizer import build_char_tokenizer
from flexmg.settings import Settings, add_flags, documented, from_flags, setting


def _share(v: Any) -> bool:
    return 0.0 <= v < 1.0


@documented
@dataclass(frozen=True)
class WarmStartConfig(Settings):
    """The settings of the shipped warm start (``python -m flexmg.models.tiny.warmstart``).

    Stage 1 leaves the arithmetic imprecise (a third of held-out greedy answers are
    neither right nor the slip); stage 2 ("sharpen": more steps on the same data from
    stage 1's weights, with a second warmup + cosine cycle) makes the answers mostly
    right-or-slip, so the slip is what RL has to unlearn.
    """

    seed: int = setting(0, "data and initialization seed", flag="--seed")
    steps: int = setting(4000, "stage 1 steps", flag="--steps")
    batch_size: int = setting(64, "transcripts per step", flag="--batch-size")
    lr: float = setting(3e-3, "stage 1 peak learning rate", flag="--lr")
    warmup: int = setting(100, "stage 1 warmup steps", flag="--warmup")
    code_weight: float = setting(
        0.0,
        "share of procedural code episodes in stage 1 (the shipped code comes in stage 2)",
        flag="--code-weight",
        check=(_share, "in [0, 1)"),
    )
    relay_weight: float = setting(
        0.1, "share of relay episodes (on the real relay envs)", flag="--relay-weight",
        check=(_share, "in [0, 1)"),
    )  # fmt: skip
    multi_round_weight: float = setting(
        0.15,
        "share of the math episodes played with horizon 2 (retry rounds after feedback)",
        flag="--multi-round-weight",
        check=(_share, "in [0, 1)"),
    )
    sharpen_steps: int = setting(3000, "stage 2 steps (0: none)", flag="--sharpen-steps")
    sharpen_lr: float = setting(1e-3, "stage 2 peak learning rate", flag="--sharpen-lr")
    sharpen_code_weight: float = setting(
        0.35, "share of procedural code episodes in stage 2", flag="--sharpen-code-weight",
        check=(_share, "in [0, 1)"),
    )  # fmt: skip


DEFAULTS: dict[str, Any] = WarmStartConfig().to_dict()
"""The shipped warm start's settings as keywords of :func:`train`."""


# Warmup steps of stage 2's learning-rate cycle.
SHARPEN_WARMUP = 50


def train(
    seed: int = 0,
    steps: int = 4000,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 100,
    code_weight: float = 0.0,
    relay_weight: float = 0.0,
    multi_round_weight: float = 0.0,
    sharpen_steps: int = 0,
    sharpen_lr: float = 1e-3,
    sharpen_code_weight: float | None = None,
    log_every: int = 100,
    config_overrides: dict[str, Any] | None = None,
    mixtures: Sequence[tuple[Any, float]] | None = None,
    progress: bool = False,
    stop_after: int | None = None,
    stage1: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Train a fresh tiny model on noisy-teacher transcripts; returns (model, info).

    Stage 1 trains ``steps`` steps from random weights (warmup, then cosine
    decay). Stage 2 ("sharpen") trains ``sharpen_steps`` more with a second
    cycle (``sharpen_lr``, warmup ``SHARPEN_WARMUP``) on the same data, except
    that ``sharpen_code_weight`` (None: ``code_weight``) is its share of code
    episodes; its data come from ``random.Random(seed + 1)``. Passing ``stage1`` (a model holding
    stage 1's weights, e.g. a checkpoint built without stage 2) skips stage 1.

    Deterministic for a given seed: data from ``random.Random(seed)``, torch
    seeded in a forked RNG, and one intra-op thread during training.
    ``stop_after`` ends the run after that many of stage 1's ``steps`` (same
    schedule): the model is then the prefix of the full run, and stage 2 is
    skipped. ``info["prefix_sha256"]`` hashes the weights after
    :data:`PREFIX_STEPS` (``info["prefix_data_sha256"]`` the batches of those steps,
    see :func:`prefix_data_sha256`); ``info["stage1_sha256"]`` the weights after stage 1.
    """
    data = (
        list(mixtures)
        if mixtures is not None
        else default_mixtures(code_weight, relay_weight, multi_round_weight)
    )
    if sharpen_code_weight is None or mixtures is not None:
        sharpen_data = data
    else:
        sharpen_data = default_mixtures(sharpen_code_weight, relay_weight, multi_round_weight)
    start = time.time()
    info: dict[str, Any] = {
        "seed": seed,
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "warmup": warmup,
        "code_weight": code_weight,
        "relay_weight": relay_weight,
        "multi_round_weight": multi_round_weight,
        "sharpen_steps": sharpen_steps,
        "sharpen_lr": sharpen_lr,
        "sharpen_warmup": SHARPEN_WARMUP,
        "sharpen_code_weight": sharpen_code_weight,
        "data": [{**part.describe(), "weight": w} for part, w in data],
        "sharpen_data": [{**part.describe(), "weight": w} for part, w in sharpen_data],
        "prefix_steps": PREFIX_STEPS,
        "config_overrides": dict(config_overrides or {}),
    }
    if stage1 is None:
        model = build_tiny_model(seed=seed, config=tiny_config(**(config_overrides or {})))
        prefix: dict[str, str] = {}
        data_digest = hashlib.sha256()

        def hash_prefix(step: int, trained: Any) -> None:
            if step + 1 == PREFIX_STEPS:
                prefix["sha256"] = weights_sha256(trained)
                prefix["data_sha256"] = data_digest.copy().hexdigest()

        losses = _fit(
            model, data, steps, batch_size, lr, random.Random(seed), seed,
            schedule=_cosine(warmup, steps), end=stop_after, log_every=log_every,
            progress=progress, desc="warm start", after_step=hash_prefix, data_digest=data_digest,
        )  # fmt: skip
        info["prefix_sha256"] = prefix.get("sha256")
        info["prefix_data_sha256"] = prefix.get("data_sha256")
        info["stage1_final_loss"] = _mean_tail(losses)
        if stop_after is not None and stop_after < steps:
            sharpen_steps = 0
    else:
        model = stage1
        info["stage1_from"] = "a given stage-1 model"
    info["stage1_sha256"] = weights_sha256(model)
    info["final_loss"] = info.get("stage1_final_loss")
    if sharpen_steps > 0:
        losses = _fit(
            model, sharpen_data, sharpen_steps, batch_size, sharpen_lr, random.Random(seed + 1),
            seed + 1, schedule=_cosine(SHARPEN_WARMUP, sharpen_steps), log_every=log_every,
            progress=progress, desc="sharpen",
        )  # fmt: skip
        info["final_loss"] = _mean_tail(losses)
    info["train_seconds"] = round(time.time() - start, 1)
    info["parameters"] = count_parameters(model)
    return model, info


def measure(
    model: Any, env_id: str = "math-2agent", prompts: int = 200, k: int = 8, seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Step-0 held-out figures of ``model`` on ``env_id``: greedy rates and pass@k (95% CIs).

    The one evaluation path (:func:`flexmg.evaluation.measure_pass_at_k`) with the
    learner's own decoder (:class:`~flexmg.models.actor.ModelActor`): compact prompts,
    temperature-1 sampling, the env family's token budget for the tiny model.
    """
    from flexmg.evaluation import measure_pass_at_k
    from flexmg.family import family_of, token_budget
    from flexmg.models.actor import ModelActor

    budget = token_budget(family_of(env_id), "tiny")
    tokenizer = build_char_tokenizer()
    greedy = ModelActor(model, tokenizer, budget, greedy=True, prompt_style="compact")
    sampled = ModelActor(model, tokenizer, budget, prompt_style="compact", seed=seed)
    return measure_pass_at_k(greedy, sampled, env_id, prompts, k, seed, env_kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: rebuild the shipped warm-start checkpoint (or ``--check`` it)."""
    parser = argparse.ArgumentParser(
        prog="python -m flexmg.models.tiny.warmstart", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=TINY_ASSET_DIR, help="output folder")
    parser.add_argument("--check", action="store_true",
                        help="rebuild in memory and compare with the checkpoint in --out")  # fmt: skip
    parser.add_argument("--no-eval", action="store_true", help="skip the held-out measurement")
    parser.add_argument("--no-progress", action="store_true", help="log lines, no progress bar")
    parser.add_argument("--from-stage1", type=Path, default=None, metavar="FOLDER",
                        help="skip stage 1: start stage 2 from the weights in FOLDER (a "
                        "checkpoint of the same settings with --sharpen-steps 0)")  # fmt: skip
    add_flags(parser, WarmStartConfig, title="settings")
    args = parser.parse_args(argv)
    kwargs = from_flags(args, WarmStartConfig).to_dict()
    stage1 = None
    if args.from_stage1 is not None:
        from flexmg.models.tiny.model import load_tiny

        stage1, _ = load_tiny(args.from_stage1)
    model, info = train(**kwargs, progress=not args.no_progress, stage1=stage1)
    if stage1 is not None:
        info["stage1_from"] = str(args.from_stage1)
        manifest = args.from_stage1 / "warmstart.json"
        if manifest.exists():  # stage 1's own record: its prefix hash, loss and time
            earlier = json.loads(manifest.read_text())
            info["prefix_sha256"] = earlier.get("prefix_sha256")
            info["prefix_data_sha256"] = earlier.get("prefix_data_sha256")
            info["stage1_final_loss"] = earlier.get("final_loss")
            info["stage1_train_seconds"] = earlier.get("train_seconds")
    if args.check:
        from flexmg.models.tiny.model import load_tiny

        shipped, _ = load_tiny(args.out)
        ok = same_weights(model, shipped)
        print(f"reproduced {'exactly' if ok else 'WITH DIFFERENCES'}: {args.out}")
        return 0 if ok else 1
    if not args.no_eval:
        info["eval"] = measure(model, seed=args.seed)
        print(json.dumps(info["eval"], indent=1))
        if max(args.code_weight, args.sharpen_code_weight) > 0:
            info["eval_code"] = measure(model, "code-2agent", seed=args.seed)
            print(json.dumps(info["eval_code"], indent=1))
    save(model, info, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "BUCKETS",
    "DEFAULTS",
    "HISTORIC_JUDGEMENT",
    "MULTI_ROUND_HORIZON",
    "PREFIX_STEPS",
    "SHARPEN_WARMUP",
    "WARMSTART_TEST_FRACTION",
    "WarmStartConfig",
    "code_mixture",
    "default_mixtures",
    "family_mixture",
    "fine_tune",
    "main",
    "math_mixture",
    "measure",
    "multi_round_mixture",
    "prefix_data_sha256",
    "relay_mixture",
    "same_weights",
    "save",
    "train",
    "weights_sha256",
]
