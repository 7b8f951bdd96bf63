"""Checkpoint files: atomic write, verification, keep-last-K, RNG round trip."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from flexmg.agents.checkpoint import (
    CheckpointError,
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    restore_rng_state,
    save_checkpoint,
)


def _state():
    return {
        "update": 7,
        "weights": {"w": torch.arange(6.0).reshape(2, 3)},
        "config": {"lr": 1e-3, "name": "x", "list": [1, 2]},
        "rng": capture_rng_state({"g": torch.Generator().manual_seed(3)}),
    }


def test_roundtrip_and_latest(tmp_path):
    p = save_checkpoint(tmp_path, 7, _state())
    got = load_checkpoint(p)
    assert got["update"] == 7
    assert torch.equal(got["weights"]["w"], torch.arange(6.0).reshape(2, 3))
    assert got["config"] == {"lr": 1e-3, "name": "x", "list": [1, 2]}
    assert latest_checkpoint(tmp_path) == p
    assert not [q for q in tmp_path.iterdir() if q.name.endswith(".tmp")]


def test_keep_last_k(tmp_path):
    for u in range(5):
        save_checkpoint(tmp_path, u, {"update": u}, keep=2)
    assert [load_checkpoint(p)["update"] for p in list_checkpoints(tmp_path)] == [3, 4]
    assert list_checkpoints(tmp_path / "missing") == []


@pytest.mark.parametrize("cut", [5, 40, -10])
def test_truncated_checkpoint_is_a_clear_error(tmp_path, cut):
    p = save_checkpoint(tmp_path, 1, _state())
    data = p.read_bytes()
    p.write_bytes(data[:cut])
    with pytest.raises(CheckpointError, match="truncated|not a flexmg checkpoint"):
        load_checkpoint(p)


def test_corrupted_byte_is_detected(tmp_path):
    p = save_checkpoint(tmp_path, 1, _state())
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted"):
        load_checkpoint(p)
    with pytest.raises(CheckpointError, match="cannot read"):
        load_checkpoint(tmp_path / "nope.ckpt")


def test_rng_state_roundtrip(tmp_path):
    gen = torch.Generator().manual_seed(11)
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    gen.manual_seed(4)
    save_checkpoint(tmp_path, 0, {"rng": capture_rng_state({"g": gen})})
    expected = (
        random.random(),
        np.random.rand(),
        torch.rand(1).item(),
        torch.rand(1, generator=gen),
    )
    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)
    gen.manual_seed(99)
    restore_rng_state(load_checkpoint(latest_checkpoint(tmp_path))["rng"], {"g": gen})
    got = (random.random(), np.random.rand(), torch.rand(1).item(), torch.rand(1, generator=gen))
    assert got[:3] == expected[:3]
    assert torch.equal(got[3], expected[3])
