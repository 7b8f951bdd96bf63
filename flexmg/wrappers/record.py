"""Record finished episodes as JSON lines, safely shared by many processes.

Each line is a transcript record (:mod:`flexmg.transcripts`: the one format of
episodes that training, evaluations, leaderboards and ``flexmg view`` share).

Example:
    >>> import flexmg, tempfile, os
    >>> from flexmg.wrappers import RecordTranscripts, read_transcripts
    >>> path = os.path.join(tempfile.mkdtemp(), "episodes.jsonl")
    >>> env = RecordTranscripts(flexmg.make("echo"), path)
    >>> env.reset(seed=0)
    >>> for role in env.agent_iter():
    ...     obs, _, term, trunc, _ = env.last()
    ...     env.step(None if term or trunc else "word")
    >>> [ep["metrics"]["rounds"] for ep in read_transcripts(path)]
    [1]
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from pettingzoo.utils.wrappers import BaseWrapper

from flexmg.env import FlexMGEnv
from flexmg.io import json_default
from flexmg.transcripts import read_transcripts, record_from_turns

__all__ = ["RecordTranscripts", "append_jsonl", "read_transcripts"]


def append_jsonl(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one JSON line atomically: one ``write`` under an exclusive lock, then fsync.

    Readers never see a half-written line from a live writer, and concurrent
    writers (several processes) never interleave.
    """
    line = (json.dumps(record, ensure_ascii=False, default=json_default) + "\n").encode(
        "utf-8", "replace"
    )
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class RecordTranscripts(BaseWrapper):
    """Append every finished episode of the wrapped env to ``path`` as one JSON line.

    Each line is a :mod:`flexmg.transcripts` record: ``env``, ``seed``, ``task``
    (id, prompt, gold answer), ``team``, ``metrics`` and ``transcript`` (one dict
    per turn); read them with :func:`read_transcripts`, view them with ``flexmg view``.
    """

    def __init__(self, env: FlexMGEnv, path: str | os.PathLike) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._seed: int | None = None
        self._written = True

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self._seed = seed
        self._written = False
        super().reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        super().step(action)
        base = self.unwrapped
        if not self._written and base.episode_metrics:
            self._written = True
            record = record_from_turns(
                str(base), self._seed, base.task, base.transcript, base.episode_metrics
            )
            append_jsonl(self.path, record)
