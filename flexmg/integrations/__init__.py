"""flexmg inside other training frameworks: the seat driver, dataset export and adapters.

This package imports nothing heavy. The core modules need no extra:

* :mod:`flexmg.integrations.seats`: play an episode with one callable per role.
* :mod:`flexmg.integrations.export`: one dataset row per episode seed (jsonl/parquet).

The adapters need their framework (``pip install 'flexmg[openenv]'``, ``[trl]``, ...):
:mod:`flexmg.integrations.openenv` (``flexmg serve``) and :mod:`flexmg.integrations.trl`.
See ``docs/integrations.md``.

Example:
    >>> from flexmg.integrations import play_episode
    >>> play_episode("echo", {"a": lambda m: "hi", "b": lambda m: "hi"}, seed=0).env_id
    'echo'
"""

from __future__ import annotations

from flexmg.integrations.seats import (
    BatchRoleFn,
    EpisodeResult,
    RoleFn,
    Segment,
    observation_to_messages,
    play_batch,
    play_episode,
)

__all__ = [
    "BatchRoleFn",
    "EpisodeResult",
    "RoleFn",
    "Segment",
    "observation_to_messages",
    "play_batch",
    "play_episode",
]
