"""The zygote's watch over one run: its deadline, output cap and pipes, to its reply.

:class:`RunWatch` is one run as the zygote follows it; :class:`RunWatcher` is the
part of :class:`.zygote.Zygote` that polls the run's pipes, the wake-up pipe and
the fork server's socket until the program exits or the verdict is in (or the
deadline passes, or a cap is hit), and builds the reply.
"""

from __future__ import annotations

import os
import select
import socket
import time

from .frames import MAX_DEPTH, MAX_FRAME, _frame_complete, _too_deep, parse_frame_body
from .procs import _status_exit_code
from .spares import Spare

# typing is never imported in the sandbox (start-up time): mypy reads this name as True
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .forkserver import ForkServerLink


class RunWatch:
    """One run as the zygote follows it: its processes, pipes, output and deadline."""

    def __init__(
        self,
        mode: str,
        t0: float,
        deadline: float,
        cap: int,
        runner: int | None,
        judge: int | None,
        verdict_r: int | None,
        si_w: int | None,
        stdin: memoryview,
        fs_fd: int,
        readers: dict[int, bytearray],
        out: bytearray,
        err: bytearray,
        verdict: bytearray,
        notes: bytearray,
    ) -> None:
        self.mode = mode  # "exec" or "tests"
        self.t0, self.deadline = t0, deadline
        self.cap = cap  # bytes of stdout + stderr
        self.runner, self.judge = runner, judge
        self.verdict_r, self.si_w, self.stdin = verdict_r, si_w, stdin
        self.fs_fd = fs_fd  # the fork server's socket (-1: none)
        self.readers, self.open_readers = readers, set(readers)
        self.out, self.err, self.verdict, self.notes = out, err, verdict, notes
        self.status: str | None = None
        self.end: float | None = None

    @classmethod
    def start(
        cls,
        job: dict,
        mode: str,
        t0: float,
        runner: int | None,
        judge: int | None,
        sp: Spare,
        verdict_r: int | None,
        si_w: int | None,
        stdin_data: bytes,
        fs_sock: socket.socket | None,
    ) -> RunWatch:
        grace = float(job.get("grace", 1.0)) if mode == "tests" else 0.0
        out, err, verdict, notes = bytearray(), bytearray(), bytearray(), bytearray()
        readers = {sp.out_r: out, sp.err_r: err}
        if mode == "exec":
            readers[sp.co_r] = notes
        else:
            assert verdict_r is not None  # sp.jo_r in tests mode
            readers[verdict_r] = verdict
        return cls(
            mode=mode,
            t0=t0,
            deadline=t0 + float(job["timeout"]) + grace,
            cap=int(job["max_output_bytes"]),
            runner=runner,
            judge=judge,
            verdict_r=verdict_r,
            si_w=si_w,
            stdin=memoryview(stdin_data),
            fs_fd=fs_sock.fileno() if fs_sock is not None else -1,
            readers=readers,
            out=out,
            err=err,
            verdict=verdict,
            notes=notes,
        )

    def output_size(self) -> int:
        return len(self.out) + len(self.err)


class RunWatcher:
    """The zygote's watch loop (mixed into :class:`.zygote.Zygote`)."""

    if TYPE_CHECKING:  # the zygote's state and helpers this part uses
        exited: dict[int, int]
        traced: set[int]
        wake_r: int
        fs: ForkServerLink

        @staticmethod
        def _close(fd: int | None) -> None: ...
        def _reap(self) -> None: ...

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _watch(self, w: RunWatch) -> dict:
        """Follow one run until it ends, its deadline passes or a cap is hit; its reply."""
        poller = self._poller(w)
        while not self._run_over(w):
            left = w.deadline - time.monotonic()
            if left <= 0:
                w.status = "timeout"
                break
            for fd, ev in poller.poll(min(left, 1.0) * 1000):
                self._on_event(w, poller, fd, ev)
            if w.status:
                break
        duration = (w.end or time.monotonic()) - w.t0
        self._close(w.si_w)
        w.si_w = None
        if w.status is None:
            self._drain_output(w)
        return self._run_reply(w, duration)

    def _poller(self, w: RunWatch) -> select.poll:
        """A poller on the run's pipes, the wake-up pipe and the fork server's socket."""
        poller = select.poll()
        for fd in w.open_readers:
            poller.register(fd, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        if w.fs_fd >= 0:
            poller.register(w.fs_fd, select.POLLIN)
        if w.si_w is not None:
            os.set_blocking(w.si_w, False)
            if w.stdin:
                poller.register(w.si_w, select.POLLOUT)
            else:
                self._close(w.si_w)
                w.si_w = None
        return poller

    def _run_over(self, w: RunWatch) -> bool:
        """Whether the run has ended: the program exited, or the verdict is in (or lost)."""
        self._reap()
        if w.mode == "exec":
            over = w.runner in self.exited
        else:
            over = _frame_complete(w.verdict) or (
                w.verdict_r not in w.open_readers and w.judge in self.exited
            )
        if over:
            w.end = time.monotonic()
        return over

    def _on_event(self, w: RunWatch, poller: select.poll, fd: int, ev: int) -> None:
        """Handle one poll event: a wake-up, the fork server, stdin room, or output."""
        if fd == self.wake_r:
            self._drain_wake()
        elif fd == w.fs_fd:
            self.fs.pump()
            if ev & (select.POLLHUP | select.POLLERR):
                poller.unregister(w.fs_fd)
        elif fd == w.si_w:
            self._feed_stdin(w, poller)
        else:
            self._read_output(w, poller, fd)

    def _feed_stdin(self, w: RunWatch, poller: select.poll) -> None:
        assert w.si_w is not None  # it polled
        try:
            n = os.write(w.si_w, w.stdin[: 1 << 16])
            w.stdin = w.stdin[n:]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            w.stdin = w.stdin[:0]
        if not w.stdin:
            poller.unregister(w.si_w)
            self._close(w.si_w)
            w.si_w = None

    def _read_output(self, w: RunWatch, poller: select.poll, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            poller.unregister(fd)
            w.open_readers.discard(fd)
            return
        w.readers[fd].extend(chunk)
        if w.output_size() > w.cap:
            w.status = "output_limit"
        if len(w.verdict) > MAX_FRAME + 4:  # the solution's doing: a failed run
            w.status = "verdict_too_large"

    def _drain_output(self, w: RunWatch) -> None:
        """Read what the run's output pipes already hold, without waiting."""
        for fd in list(w.open_readers):
            if fd == w.verdict_r:
                continue
            os.set_blocking(fd, False)
            try:
                while w.output_size() <= w.cap:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    w.readers[fd].extend(chunk)
            except OSError:
                pass
        if w.output_size() > w.cap:
            w.status = "output_limit"

    def _run_reply(self, w: RunWatch, duration: float) -> dict:
        out, err, cap = w.out, w.err, w.cap
        res: dict = {
            "duration": duration,
            "stdout": bytes(out[:cap]).decode("utf-8", "replace"),
            "stderr": bytes(err[: max(0, cap - len(out))]).decode("utf-8", "replace"),
            "truncated": w.output_size() > cap,
            "status": w.status,
            "traced": w.runner in self.traced,
        }
        if w.mode == "exec":
            st = self.exited.get(w.runner)  # type: ignore[arg-type]  # None: no entry
            if st is not None:
                res["exit_code"] = _status_exit_code(st)
            res["oom"] = b"M" in w.notes
        else:
            if _frame_complete(w.verdict):
                try:  # the tests' to forge when an agent wrote them: checked like any frame
                    verdict = parse_frame_body(bytes(w.verdict[4:]))
                    if not isinstance(verdict, dict) or _too_deep(verdict, MAX_DEPTH - 8):
                        raise ValueError("malformed verdict")
                    res["verdict"] = verdict
                except ValueError:
                    res["verdict"] = None
                    res["verdict_malformed"] = True
            st = self.exited.get(w.judge)  # type: ignore[arg-type]  # None: no entry
            if st is not None:
                res["judge_exit"] = _status_exit_code(st)
        return res
