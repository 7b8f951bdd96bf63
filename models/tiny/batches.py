"""The warm start's training batches: token ids and masks, grouped by length, and their hash.

A stage draws :data:`BUCKETS` batches of teacher pairs at a time from its
mixtures (:mod:`flexmg.models.tiny.mixtures`), sorted by length so that little
padding is computed, and tokenizes each into right-padded ids, attention mask
and loss mask. :func:`prefix_data_sha256` hashes the first batches of stage 1
without training: a change of the data shows apart from CPU float differences.

Example:
    >>> len(prefix_data_sha256(batch_size=2, steps=1))
    64
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from flexmg.models.tiny.mixtures import default_mixtures
from flexmg.models.tiny.tokenizer import build_char_tokenizer

# The weights after this many steps are hashed into ``warmstart.json`` (``prefix_sha256``;
# their batches: ``prefix_data_sha256``), so a test can check the first steps of a rebuild
# without paying for all of them.
PREFIX_STEPS = 200


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
