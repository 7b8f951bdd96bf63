"""Atomic, verified training checkpoints with exact RNG restore.

A checkpoint is one file ``<run>/checkpoints/step_<update>.ckpt``::

    b"FLEXMG-CKPT-1\\n" + sha256(payload) hex + b"\\n" + payload (torch.save bytes)

It is written to a temp file in the same folder and moved into place with
``os.replace`` (never half-written). Loading checks the header and the digest
first, so a truncated or corrupted file raises :class:`CheckpointError` with
the path and what to do, instead of a cryptic unpickling error or a silent
restart. Payloads hold only tensors and plain Python values and are read with
``torch.load(weights_only=True)``.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> p = save_checkpoint(d, 3, {"update": 3})
    >>> load_checkpoint(p)["update"], latest_checkpoint(d) == p
    (3, True)
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from flexmg.io import atomic_write_bytes

MAGIC = b"FLEXMG-CKPT-1\n"
_NAME = re.compile(r"^step_(\d+)\.ckpt$")


class CheckpointError(RuntimeError):
    """A checkpoint is missing, truncated, corrupted or incompatible."""


def checkpoint_path(folder: str | os.PathLike[str], update: int) -> Path:
    """Path of the checkpoint for ``update`` inside ``folder``."""
    return Path(folder) / f"step_{update:07d}.ckpt"


def list_checkpoints(folder: str | os.PathLike[str]) -> list[Path]:
    """Checkpoints in ``folder`` sorted by update (oldest first); [] if none."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in folder.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(folder: str | os.PathLike[str]) -> Path | None:
    """The newest checkpoint in ``folder``, or None."""
    found = list_checkpoints(folder)
    return found[-1] if found else None


def save_checkpoint(
    folder: str | os.PathLike[str], update: int, state: dict[str, Any], keep: int = 0
) -> Path:
    """Write ``state`` as the checkpoint of ``update``; keep only the newest ``keep`` (0 = all).

    Returns the checkpoint's path.
    """
    buf = io.BytesIO()
    torch.save(state, buf)
    payload = buf.getvalue()
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    path = checkpoint_path(folder, update)
    atomic_write_bytes(path, MAGIC + digest + b"\n" + payload)
    if keep > 0:
        for old in list_checkpoints(folder)[:-keep]:
            old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and verify a checkpoint written by :func:`save_checkpoint`.

    Raises:
        CheckpointError: missing file, bad header, digest mismatch (truncated or
            corrupted), or an unreadable payload.
    """
    path = Path(path)
    hint = (
        "delete it to resume from the previous checkpoint in that folder, "
        "or start a new run without --resume"
    )
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {exc}") from exc
    header_len = len(MAGIC) + 65
    if (
        len(raw) < header_len
        or not raw.startswith(MAGIC)
        or raw[header_len - 1 : header_len] != b"\n"
    ):
        raise CheckpointError(
            f"{path} is not a flexmg checkpoint or its header is truncated "
            f"({len(raw)} bytes); {hint}"
        )
    digest = raw[len(MAGIC) : header_len - 1].decode("ascii", "replace")
    payload = raw[header_len:]
    actual = hashlib.sha256(payload).hexdigest()
    if actual != digest:
        raise CheckpointError(
            f"checkpoint {path} is truncated or corrupted (sha256 {actual[:12]}... does not "
            f"match the recorded {digest[:12]}..., payload {len(payload)} bytes); {hint}"
        )
    try:
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - reported with context
        raise CheckpointError(f"checkpoint {path} could not be unpickled: {exc}; {hint}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint {path} holds {type(state).__name__}, expected a dict")
    return state


# ----------------------------------------------------------------------------- a run's policy


@dataclass
class RestoredPolicy:
    """A run folder's team policy with the adapters and value heads of one checkpoint.

    Attributes:
        policy: the :class:`~flexmg.agents.policy.TeamPolicy` (in eval mode).
        config: the run's :class:`~flexmg.agents.config.RunConfig`.
        checkpoint: the checkpoint file it was restored from.
        updates: the updates that checkpoint had done.
    """

    policy: Any
    config: Any
    checkpoint: Path
    updates: int


def restore_policy(
    run_dir: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> RestoredPolicy:
    """The policy of a run folder (``flexmg train``) at its newest checkpoint (or ``checkpoint``).

    ``device`` overrides the run's. The one way a run is loaded: ``flexmg eval``,
    leaderboard ``run:`` entries and the benchmarks go through it.

    Raises:
        RunConfigError: ``config.json`` is missing or is not a training run's.
        CheckpointError: no checkpoint, an unreadable one, or one that does not fit the
            run's policy.
    """
    from flexmg.agents.config import RunConfig
    from flexmg.agents.policy import TeamPolicy

    run = Path(run_dir)
    config = RunConfig.read(run)
    path = Path(checkpoint) if checkpoint else latest_checkpoint(run / "checkpoints")
    if path is None:
        raise CheckpointError(
            f"no checkpoint in {run / 'checkpoints'}: the run has not saved one yet "
            "(train it further, or pass a checkpoint file)"
        )
    state = load_checkpoint(path)
    settings = config.policy_config if not device else replace(config.policy_config, device=device)
    policy = TeamPolicy(list(config.roles), settings)
    try:
        policy.load_trainable_state(state["policy"])
    except (KeyError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path} does not fit the run's policy: {exc}") from exc
    policy.eval()
    updates = int(state.get("counters", {}).get("updates_done", 0))
    return RestoredPolicy(policy, config, path, updates)


# ----------------------------------------------------------------------------- RNG states


def capture_rng_state(generators: dict[str, torch.Generator] | None = None) -> dict[str, Any]:
    """Python, NumPy, torch (CPU and CUDA) RNG states, plus named torch generators.

    Everything is a tensor or plain Python value, so it loads with ``weights_only``.
    """
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "generators": {k: g.get_state() for k, g in (generators or {}).items()},
    }
    return state


def restore_rng_state(
    state: dict[str, Any], generators: dict[str, torch.Generator] | None = None
) -> None:
    """Inverse of :func:`capture_rng_state`."""
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    n = state["numpy"]
    np.random.set_state(
        (
            n["kind"],
            n["keys"].numpy().astype(np.uint32),
            n["pos"],
            n["has_gauss"],
            n["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for k, g in (generators or {}).items():
        if k in state.get("generators", {}):
            g.set_state(state["generators"][k])
