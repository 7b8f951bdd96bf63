"""The warm start's supervised loop, and a short fine-tune of a checkpoint with it.

:func:`_fit` trains on teacher transcripts (loss on action tokens and EOS,
AdamW, one intra-op thread, a forked torch RNG): every stage of
:func:`flexmg.models.tiny.warmstart.train` and :func:`fine_tune` run it, so each
is bit-for-bit reproducible for a given seed.

Example:
    >>> from flexmg.models.tiny.mixtures import math_mixture
    >>> from flexmg.models.tiny.model import build_tiny_model
    >>> info = fine_tune(build_tiny_model(), [(math_mixture(), 1.0)], steps=1, batch_size=2)
    >>> info["steps"], info["final_loss"] > 0
    (1, True)
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch
from tqdm import tqdm

from flexmg.models.tiny.batches import _batch, _hash_batch, _training_batches
from flexmg.models.tiny.tokenizer import build_char_tokenizer


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
    each batch (see :func:`~flexmg.models.tiny.batches.prefix_data_sha256`).
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
