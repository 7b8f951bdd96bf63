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

Example:
    >>> [list(w) for w in math_mixture().workflows][2]
    ['planner', 'solver', 'verifier']
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from flexmg.envs.families import family
from flexmg.envs.families.teachers import EnvTeacher, MathTeacher, Teacher
from flexmg.family import Family
from flexmg.models.tiny.historic import historic_env
from flexmg.models.tiny.model import TINY_ASSET_DIR, build_tiny_model, count_parameters, tiny_config
from flexmg.models.tiny.tokenizer import build_char_tokenizer
from flexmg.models.tiny.transcripts import env_episode, teacher_episode
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


# ----------------------------------------------------------------------- data
# The warm start predates the test split: its training tasks are everything outside eval,
# the test part included (test_fraction 0, so the shipped weights stay reproducible). The
# tiny model has therefore seen test prompts: report tiny-model figures on eval only.
WARMSTART_TEST_FRACTION = 0.0
# What each family provides (its tasks, envs and noisy teacher) is its warm-start
# declaration (``Family.warm_start``, e.g. ``flexmg.envs.families.math.FAMILY``); the shares
# of the families are ``DEFAULTS`` above.
# The weights after this many steps are hashed into ``warmstart.json`` (``prefix_sha256``;
# their batches: ``prefix_data_sha256``), so a test can check the first steps of a rebuild
# without paying for all of them.
PREFIX_STEPS = 200
# Warmup steps of stage 2's learning-rate cycle.
SHARPEN_WARMUP = 50


# Horizon of the multi-round math episodes (DEFAULTS["multi_round_weight"]).
MULTI_ROUND_HORIZON = 2
# The warm start's episodes on the real envs are judged as the math envs v1 judged them,
# when the shipped weights were built (math v2 credits unboxed values, which changes the
# multi-round transcripts): see flexmg.models.tiny.historic. Recorded in warmstart.json.
HISTORIC_JUDGEMENT = "math v1: solved only by one right boxed answer (models/tiny/historic.py)"


def _source_names(sources: Sequence[Any]) -> list[str]:
    """``name/difficulty`` of each task source (for ``warmstart.json``)."""
    return [
        getattr(s, "name", type(s).__name__) + f"/{getattr(s, 'difficulty', '')}" for s in sources
    ]


def _draw_task(sources: Sequence[Any], weights: Sequence[float], rng: random.Random) -> Any:
    """One training task: a weighted source, then a random item of it."""
    source = rng.choices(sources, weights)[0]
    return source.get(rng.randrange(1 << 30))


class _Mixture:
    """Draws (task, roles) from weighted task sources and weighted workflows."""

    def __init__(
        self,
        sources: Sequence[tuple[Any, float]],
        workflows: Sequence[tuple[tuple[str, ...], float]],
        teacher: Teacher,
    ) -> None:
        self.sources, self.source_weights = zip(*sources, strict=True)
        self.workflows, self.workflow_weights = zip(*workflows, strict=True)
        self.teacher = teacher

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description of the data (stored in ``warmstart.json``)."""
        describe = getattr(self.teacher, "describe", None)
        return {
            "sources": _source_names(self.sources),
            "source_weights": list(self.source_weights),
            "workflows": [list(w) for w in self.workflows],
            "workflow_weights": list(self.workflow_weights),
            "teacher": describe() if describe else repr(self.teacher),
        }  # fmt: skip

    def pairs(self, rng: random.Random) -> list[tuple[str, str]]:
        task = _draw_task(self.sources, self.source_weights, rng)
        roles = rng.choices(self.workflows, self.workflow_weights)[0]
        return teacher_episode(task, roles, self.teacher, rng)


class _EnvMixture:
    """Draws (task, env) from weighted task sources and weighted envs; plays the real env.

    Each episode is :func:`~flexmg.models.tiny.transcripts.env_episode`: the teacher acts
    on the env's own observations (``horizon`` rounds at most). ``historic``: the envs
    judge as the shipped warm start's did (:func:`~flexmg.models.tiny.historic.historic_env`).
    """

    def __init__(
        self,
        sources: Sequence[tuple[Any, float]],
        env_ids: Sequence[tuple[str, float]],
        teacher: EnvTeacher,
        horizon: int = 1,
        historic: bool = False,
    ) -> None:
        import flexmg

        self.sources, self.source_weights = zip(*sources, strict=True)
        self.env_ids, self.env_weights = zip(*env_ids, strict=True)
        self.teacher = teacher
        self.horizon = horizon
        self.historic = historic
        make = historic_env if historic else flexmg.make
        self.envs = {env_id: make(env_id, horizon=horizon) for env_id in self.env_ids}

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description of the data (stored in ``warmstart.json``)."""
        describe = getattr(self.teacher, "describe", None)
        return {
            "sources": _source_names(self.sources),
            "source_weights": list(self.source_weights),
            "envs": list(self.env_ids),
            "env_weights": list(self.env_weights),
            "horizon": self.horizon,
            "played_on": "the real env (prompts are its observations)",
            **({"judged": HISTORIC_JUDGEMENT} if self.historic else {}),
            "teacher": describe() if describe else repr(self.teacher),
        }  # fmt: skip

    def pairs(self, rng: random.Random) -> list[tuple[str, str]]:
        task = _draw_task(self.sources, self.source_weights, rng)
        env_id = rng.choices(self.env_ids, self.env_weights)[0]
        return env_episode(self.envs[env_id], task, self.teacher, rng)


def _sources(fam: Family) -> list[tuple[Any, float]]:
    """The family's warm-start task sources (train split), with their weights."""
    return [(fam.task_source(_historic(spec), "train"), w) for spec, w in _declared(fam).tasks]


def _historic(spec: Any) -> dict[str, Any]:
    """A ``tasks=`` spec with the test part kept in train (see WARMSTART_TEST_FRACTION).

    >>> _historic("procedural")
    {'name': 'procedural', 'test_fraction': 0.0}
    """
    fields = {"name": spec} if isinstance(spec, str) else dict(spec)
    return {**fields, "test_fraction": WARMSTART_TEST_FRACTION}


def _declared(fam: Family) -> Any:
    if fam.warm_start is None:
        raise ValueError(f"family {fam.name!r} provides no warm-start data (Family.warm_start)")
    return fam.warm_start


def family_mixture(
    name: str, teacher: Any = None, horizon: int | None = None, historic: bool = False
) -> _Mixture | _EnvMixture:
    """The warm-start data of family ``name`` (train split), as it declares them.

    Its tasks on its envs, played by its teacher (or ``teacher``): written for round
    0, or played on the real env when the family says so or ``horizon`` is given
    (``historic``: envs that judge as the shipped warm start's did, see
    :mod:`flexmg.models.tiny.historic`).
    """
    fam = family(name)
    data = _declared(fam)
    player = teacher if teacher is not None else data.teacher()
    if data.on_env or horizon is not None:
        return _EnvMixture(_sources(fam), data.envs, player, horizon or 1, historic)
    workflows = [(tuple(fam.teams[env]), w) for env, w in data.envs]
    return _Mixture(_sources(fam), workflows, player)


def relay_mixture(teacher: EnvTeacher | None = None, historic: bool = False) -> _EnvMixture:
    """The relay part of the warm-start data: relay episodes on the real relay envs."""
    mixture = family_mixture("relay", teacher, historic=historic)
    assert isinstance(mixture, _EnvMixture)  # the relay family plays on the env
    return mixture


def multi_round_mixture(
    teacher: MathTeacher | None = None, horizon: int = MULTI_ROUND_HORIZON, historic: bool = False
) -> _EnvMixture:
    """Math episodes with ``horizon`` rounds on the real math envs (retry after feedback)."""
    if horizon < 2:
        raise ValueError(f"a multi-round mixture needs horizon >= 2, got {horizon}")
    mixture = family_mixture("math", teacher, horizon, historic)
    assert isinstance(mixture, _EnvMixture)
    return mixture


def math_mixture(teacher: Teacher | None = None) -> _Mixture:
    """The math part of the warm-start data (train split only)."""
    mixture = family_mixture("math", teacher)
    assert isinstance(mixture, _Mixture)
    return mixture


def code_mixture(teacher: Teacher | None = None) -> _Mixture:
    """The code part of the warm-start data: procedural tasks, train split only."""
    mixture = family_mixture("code", teacher)
    assert isinstance(mixture, _Mixture)
    return mixture


def _batch(
    pairs: Sequence[tuple[str, str]], tokenizer: Any
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask and loss mask (1 on action tokens and EOS)."""
    seqs, masks = [], []
    for prompt, action in pairs:
        p = [tokenizer.bos_token_id, *tokenizer(prompt, add_special_tokens=False)["input_ids"]]
        a = [*tokenizer(action, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
        seqs.append(p + a)
        masks.append([0] * len(p) + [1] * len(a))
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    loss_mask = torch.zeros((len(seqs), width), dtype=torch.float32)
    for i, (s, m) in enumerate(zip(seqs, masks, strict=True)):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
        loss_mask[i, : len(s)] = torch.tensor(m, dtype=torch.float32)
    return ids, attn, loss_mask


# ------------------------------------------------------------------ training
BUCKETS = 8  # batches drawn at once and grouped by length (less padding, same data)


def _length_buckets(
    parts: Sequence[Any], weights: Sequence[float], batch_size: int, rng: random.Random
) -> list[list[tuple[str, str]]]:
    """``BUCKETS`` batches of teacher pairs, each of similar lengths, in random order."""
    pool: list[tuple[str, str]] = []
    while len(pool) < batch_size * BUCKETS:
        pool += rng.choices(parts, weights)[0].pairs(rng)
    pool = sorted(pool[: batch_size * BUCKETS], key=lambda pair: len(pair[0]) + len(pair[1]))
    batches = [pool[i : i + batch_size] for i in range(0, len(pool), batch_size)]
    rng.shuffle(batches)
    return batches


def _training_batches(
    parts: Sequence[Any], weights: Sequence[float], batch_size: int, rng: random.Random
) -> Iterator[list[tuple[str, str]]]:
    """The batches of a stage in training order (endless): ``BUCKETS`` drawn at a time."""
    while True:
        batches = _length_buckets(parts, weights, batch_size, rng)
        while batches:
            yield batches.pop()


def _hash_batch(digest: Any, tensors: Sequence[torch.Tensor]) -> None:
    """Add one batch (ids, attention mask, loss mask) to ``digest``."""
    for tensor in tensors:
        digest.update(f"{tuple(tensor.shape)};".encode())
        digest.update(tensor.contiguous().numpy().tobytes())


def prefix_data_sha256(
    seed: int = 0,
    batch_size: int = 64,
    code_weight: float = 0.0,
    relay_weight: float = 0.0,
    multi_round_weight: float = 0.0,
    steps: int = PREFIX_STEPS,
) -> str:
    """SHA-256 of the token ids and masks of stage 1's first ``steps`` batches (no training).

    The same digest as :func:`train`'s ``info["prefix_data_sha256"]``: it tells a
    change of the warm start's data (teacher, tasks, envs, tokenizer) apart from
    floats that differ between CPUs, in seconds.

    >>> prefix_data_sha256(batch_size=2, steps=1) == prefix_data_sha256(batch_size=2, steps=1)
    True
    """
    data = default_mixtures(code_weight, relay_weight, multi_round_weight)
    parts, weights = zip(*data, strict=True)
    stream = _training_batches(parts, weights, batch_size, random.Random(seed))
    tokenizer, digest = build_char_tokenizer(), hashlib.sha256()
    for _ in range(steps):
        _hash_batch(digest, _batch(next(stream), tokenizer))
    return digest.hexdigest()


def default_mixtures(
    code_weight: float = 0.0, relay_weight: float = 0.0, multi_round_weight: float = 0.0
) -> list[tuple[Any, float]]:
    """The warm-start data: (mixture, weight) pairs of math, procedural code and relay.

    ``code_weight`` and ``relay_weight`` are shares of all episodes; the rest
    is math, of which ``multi_round_weight`` is played with horizon 2. A part
    of weight 0 is left out (so the data of the other parts is unchanged). The
    parts played on the real envs are judged as when the shipped weights were
    built (:data:`HISTORIC_JUDGEMENT`, :mod:`flexmg.models.tiny.historic`).

    >>> default_mixtures(code_weight=0.6, relay_weight=0.5)
    Traceback (most recent call last):
    ...
    ValueError: code_weight + relay_weight must be < 1 (the rest is math), got 0.6 + 0.5
    """
    for name, value in (("code_weight", code_weight), ("relay_weight", relay_weight),
                        ("multi_round_weight", multi_round_weight)):  # fmt: skip
        if not 0.0 <= value < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    if code_weight + relay_weight >= 1.0:
        raise ValueError(
            "code_weight + relay_weight must be < 1 (the rest is math), "
            f"got {code_weight} + {relay_weight}"
        )
    math_share = 1.0 - code_weight - relay_weight
    parts: list[tuple[Any, float]] = [(math_mixture(), math_share * (1.0 - multi_round_weight))]
    if multi_round_weight > 0:
        parts.append((multi_round_mixture(historic=True), math_share * multi_round_weight))
    if code_weight > 0:
        parts.append((code_mixture(), code_weight))
    if relay_weight > 0:
        parts.append((relay_mixture(historic=True), relay_weight))
    return parts


def _cosine(warmup: int, steps: int) -> Any:
    """Linear warmup over ``warmup`` steps, then cosine decay to 0 at ``steps``."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup)))

    return factor


def _fit(
    model: Any,
    data: Sequence[tuple[Any, float]],
    steps: int,
    batch_size: int,
    lr: float,
    rng: random.Random,
    torch_seed: int,
    schedule: Any = None,
    end: int | None = None,
    log_every: int = 0,
    progress: bool = False,
    desc: str = "warm start",
    after_step: Any = None,
    data_digest: Any = None,
) -> list[float]:
    """The supervised loop of every warm-start stage; the per-step losses.

    Loss on action tokens and EOS; AdamW; gradient-norm clip 1; ``schedule``
    maps a step to an lr factor (None: constant). One intra-op thread and a
    forked torch RNG seeded with ``torch_seed``: bit-for-bit reproducible.
    ``end`` stops early on the same schedule; ``after_step(step, model)`` is
    called after each optimizer step; ``data_digest`` (a hashlib object) is fed
    each batch (see :func:`prefix_data_sha256`).
    """
    tokenizer = build_char_tokenizer()
    parts, weights = zip(*data, strict=True)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule or (lambda step: 1.0))
    end = steps if end is None else min(steps, end)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start, losses = time.time(), []
    stream = _training_batches(parts, weights, batch_size, rng)
    bar = tqdm(total=end, desc=desc, disable=not progress, file=sys.stderr)
    model.train()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(torch_seed)
            for step in range(end):
                ids, attn, loss_mask = _batch(next(stream), tokenizer)
                if data_digest is not None:
                    _hash_batch(data_digest, (ids, attn, loss_mask))
                logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
                logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
                nll = -logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
                mask = loss_mask[:, 1:]
                loss = (nll * mask).sum() / mask.sum()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                bar.update(1)
                if after_step is not None:
                    after_step(step, model)
                if log_every and (step + 1) % log_every == 0:
                    recent = sum(losses[-log_every:]) / log_every
                    bar.set_postfix(loss=f"{recent:.4f}")
                    if not progress:
                        print(f"{desc} step {step + 1}/{steps} loss {recent:.4f} "
                              f"({time.time() - start:.0f}s)", file=sys.stderr)  # fmt: skip
    finally:
        bar.close()
        torch.set_num_threads(threads)
        model.eval()
    return losses


def _mean_tail(losses: Sequence[float], n: int = 50) -> float:
    tail = losses[-n:]
    return sum(tail) / max(1, len(tail))


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


def fine_tune(
    model: Any,
    mixtures: Sequence[tuple[Any, float]],
    steps: int,
    batch_size: int = 32,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Continue training ``model`` (e.g. the shipped checkpoint) on teacher transcripts.

    A short supervised pass with the warm start's loss (action tokens and EOS),
    a constant learning rate and one thread; deterministic for a given seed.
    Returns ``{"steps", "batch_size", "lr", "seed", "final_loss", "train_seconds",
    "data"}``; the model is left in eval mode.
    """
    if steps < 0 or batch_size < 1 or lr <= 0:
        raise ValueError(
            f"fine_tune needs steps >= 0, batch_size >= 1 and lr > 0, got {steps}, "
            f"{batch_size}, {lr}"
        )
    start = time.time()
    losses = _fit(
        model, mixtures, steps, batch_size, lr, random.Random(seed), seed,
        progress=progress, desc="fine-tune",
    )  # fmt: skip
    return {
        "steps": steps,
        "batch_size": batch_size,
        "lr": lr,
        "seed": seed,
        "final_loss": _mean_tail(losses, 20),
        "train_seconds": round(time.time() - start, 1),
        "data": [{**part.describe(), "weight": w} for part, w in mixtures],
    }


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


def weights_sha256(model: Any) -> str:
    """SHA-256 of a model's parameters (names, shapes and float32 bytes, in name order)."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.detach().to(torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save(model: Any, info: dict[str, Any], folder: Path) -> None:
    """Write model + tokenizer + ``warmstart.json`` into ``folder``, replacing it atomically."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
    try:
        model.save_pretrained(tmp)
        build_char_tokenizer().save_pretrained(tmp)
        info = {**info, "weights_sha256": _sha256(tmp / "model.safetensors")}
        (tmp / "warmstart.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; the asset folder is ordinary repo content
        for path in tmp.iterdir():
            os.chmod(path, 0o644)
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
            os.replace(folder, old)
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def same_weights(a: Any, b: Any) -> bool:
    """True when two models have bit-identical parameters."""
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


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
