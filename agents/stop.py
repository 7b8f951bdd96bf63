"""Ctrl-C during training: the first one asks the run to stop cleanly, the second aborts.

:class:`StopOnInterrupt` is a context manager around a training loop. Inside it,
the first SIGINT (Ctrl-C) only sets :attr:`StopOnInterrupt.requested`: the loop
finishes the update it is in, saves a checkpoint and raises
:class:`TrainingInterrupted`. A region marked :meth:`StopOnInterrupt.interruptible`
(an evaluation, which changes nothing a checkpoint holds) is left at once with
:class:`StopRequested` instead. The second SIGINT raises ``KeyboardInterrupt``
wherever the loop is: checkpoints are written atomically, so the last complete
one stays intact. Outside the main thread, or when someone else already handles
SIGINT, nothing is installed and Ctrl-C behaves as usual. Worker processes forked
meanwhile (``--vectorization async``) inherit the handler and ignore Ctrl-C (a
terminal sends it to them too): the training process stops them on its way out.

Example (``request()`` is what the first Ctrl-C does)::

    >>> with StopOnInterrupt() as stop:
    ...     stop.request()
    ...     try:
    ...         with stop.interruptible():
    ...             print("evaluating")
    ...     except StopRequested:
    ...         print("left the evaluation")
    left the evaluation
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

__all__ = ["StopOnInterrupt", "StopRequested", "TrainingInterrupted"]


class StopRequested(BaseException):
    """Raised inside an :meth:`StopOnInterrupt.interruptible` region by the first Ctrl-C.

    Like ``KeyboardInterrupt`` it is no ``Exception``: code that catches every error
    (a grader scoring a crash as a failure) does not swallow it.
    """


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C after saving a checkpoint it resumes from exactly.

    Attributes:
        run_dir: the run folder (``flexmg train --resume RUN_DIR`` continues it).
        update: the updates done, all saved in ``checkpoint``.
        checkpoint: the checkpoint file written on the way out.
    """

    def __init__(self, run_dir: Path, update: int, checkpoint: Path) -> None:
        self.run_dir, self.update, self.checkpoint = run_dir, update, checkpoint
        super().__init__(
            f"stopped after update {update}: saved {checkpoint}; continue with "
            f"`flexmg train --resume {run_dir}` (or Trainer.resume({str(run_dir)!r}).run())"
        )


class StopOnInterrupt:
    """Turn the first SIGINT into a stop request, the second into ``KeyboardInterrupt``.

    Args:
        notify: called with one line when the first Ctrl-C arrives (e.g. to print
            it above a progress bar); None prints nothing.
    """

    def __init__(self, notify: Callable[[str], None] | None = None) -> None:
        self.notify = notify
        self.requested = False
        self._interruptible = False
        self._previous: Any = None
        self._installed = False
        self._pid = os.getpid()

    def __enter__(self) -> StopOnInterrupt:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A region the first Ctrl-C leaves at once (raising :class:`StopRequested`)."""
        if self.requested:
            raise StopRequested
        self._interruptible = True
        try:
            yield
        finally:
            self._interruptible = False

    def request(self) -> None:
        """Ask the loop to stop (what the first Ctrl-C does)."""
        self.requested = True
        if self._interruptible:
            self._interruptible = False
            raise StopRequested

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if os.getpid() != self._pid:
            return  # a forked worker (an env process): the training process decides
        if self.requested:
            raise KeyboardInterrupt
        if self.notify is not None:
            doing = "leaving the evaluation" if self._interruptible else "finishing this update"
            try:
                self.notify(
                    f"Ctrl-C: {doing}, then saving a checkpoint (Ctrl-C again to abort at once)"
                )
            except (RuntimeError, OSError):  # the signal came in the middle of a write to the
                pass  # same stream ("reentrant call"): the stop matters, not the notice
        self.request()
