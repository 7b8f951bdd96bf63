"""What a training run writes as it goes: ``metrics.jsonl`` (+ TensorBoard) and ``train.log``.

* :class:`MetricsLogger`: one JSON record per update and per evaluation; on
  resume it drops the records after the checkpoint, so the file matches an
  uninterrupted run's.
* :class:`RunLog`: ``train.log``, one timestamped line per event a person should
  read (a warning, a stop, a resume), also shown on stderr above the progress bar.
* :class:`FlatRewardWatch`: warns once when a rollout's rewards are all equal
  (nothing to learn), again only after they have varied in between.

Example:
    >>> watch = FlatRewardWatch()
    >>> [watch.observe(u, flat, [{"team_reward": 0.0}]) is not None
    ...  for u, flat in [(1, True), (2, True), (3, False), (4, True)]]
    [True, False, False, True]
    >>> FlatRewardWatch().observe(7, True, [{"team_reward": 1.0}] * 4).split(";")[0]
    'flat rewards at update 7: all episodes scored 1'
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flexmg.io import atomic_write_text, json_default

__all__ = ["FlatRewardWatch", "MetricsLogger", "RunLog"]


class MetricsLogger:
    """``metrics.jsonl`` + TensorBoard; on resume, drops records after the checkpoint.

    Attributes:
        last_train: the newest ``"train"`` record kept (None for a new run).
    """

    def __init__(self, run_dir: Path, updates_done: int) -> None:
        self.path = run_dir / "metrics.jsonl"
        kept: list[str] = []
        self.last_train: dict[str, Any] | None = None
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash
                if int(rec.get("update", 0)) <= updates_done:
                    kept.append(line)
                    if rec.get("kind") == "train":
                        self.last_train = rec
        atomic_write_text(self.path, "".join(k + "\n" for k in kept))
        self.file = self.path.open("a", encoding="utf-8")
        self.tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(run_dir / "tb"), purge_step=updates_done + 1)
        except ImportError:  # tensorboard is optional: metrics.jsonl has everything
            self.tb = None

    def log(self, record: dict[str, Any]) -> None:
        """Append ``record`` (flushed at once) and its numbers to TensorBoard."""
        self.file.write(json.dumps(record, default=json_default) + "\n")
        self.file.flush()
        if self.tb is not None:
            kind, step = record.get("kind", "train"), int(record.get("update", 0))
            for k, v in record.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "update":
                    if math.isfinite(float(v)):
                        self.tb.add_scalar(f"{kind}/{k}", float(v), step)
            self.tb.flush()

    def close(self) -> None:
        """Close the file and the TensorBoard writer."""
        self.file.close()
        if self.tb is not None:
            self.tb.close()


class RunLog:
    """``train.log``: appended lines ``<UTC time> <message>``, each also shown on stderr.

    Args:
        path: the log file (created on the first line).
        show: prints a line for a person (e.g. ``tqdm.write`` above a progress bar);
            default: stderr.
    """

    def __init__(self, path: Path, show: Any = None) -> None:
        self.path = path
        self.show = show or (lambda line: print(line, file=sys.stderr, flush=True))

    def __call__(self, message: str, show: bool = True) -> None:
        """Write ``message`` (one line) to the log; ``show``: also show it."""
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {message}\n")
        if show:
            self.show(message)


class FlatRewardWatch:
    """Warn when every reward of a rollout is the same: once per stretch of such updates.

    Args:
        previous_flat: whether the update before the first observed one was flat
            (a resumed run: no second warning for the same stretch).
    """

    def __init__(self, previous_flat: bool = False) -> None:
        self.previous_flat = previous_flat

    def observe(
        self,
        update: int,
        flat: bool,
        metrics: Sequence[Mapping[str, Any]],
        truncated_frac: float = 0.0,
    ) -> str | None:
        """The warning for ``update`` (1-based) when a flat stretch starts there, else None."""
        before, self.previous_flat = self.previous_flat, flat
        if not flat or before:
            return None
        scores = sorted({float(m.get("team_reward", 0.0) or 0.0) for m in metrics})
        scored = (
            f"all episodes scored {scores[0]:g}"
            if len(scores) == 1
            else "every turn got the same reward"
        )
        causes = []
        if truncated_frac > 0:
            causes.append(
                f"{truncated_frac:.0%} of the actions were cut at --max-new-tokens (raise it)"
            )
        causes += [
            "the model cannot do the task yet (an easier env or a stronger model)",
            "a reward that never varies (check the judge)",
        ]
        return (
            f"flat rewards at update {update}: {scored}; nothing to learn, the actors do not "
            f"step until the rewards vary (likely causes: {'; '.join(causes)})"
        )
