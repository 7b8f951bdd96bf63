"""Record finished episodes as JSON lines, safely shared by many processes.

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
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pettingzoo.utils.wrappers import BaseWrapper

from flexmg.env import FlexMGEnv
from flexmg.io import json_default


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


def read_transcripts(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield the recorded episodes; a torn last line (a crash mid-write) is skipped with a warning."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                warnings.warn(f"{path}:{lineno}: skipping a damaged line", stacklevel=2)


class RecordTranscripts(BaseWrapper):
    """Append every finished episode of the wrapped env to ``path`` as one JSON line.

    Each line holds ``env``, ``seed``, ``task`` (id and prompt), ``metrics`` and
    ``transcript`` (one dict per turn).
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
            append_jsonl(
                self.path,
                {
                    "env": str(base),
                    "seed": self._seed,
                    "task": {"id": base.task.id, "prompt": base.task.prompt},
                    "metrics": base.episode_metrics,
                    "transcript": [r.to_dict() for r in base.transcript],
                },
            )
