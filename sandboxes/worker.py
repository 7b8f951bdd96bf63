"""Host side of one warm sandbox worker: a zygote process reached over a byte stream.

The zygote (see :mod:`flexmg.sandboxes.inside`) answers one length-prefixed JSON frame per job.
:class:`PipeWorker` talks to a local subprocess (``bwrap`` or plain Python);
the Docker backend subclasses :class:`Worker` with an attach socket.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from . import inside
from .inside import frames

INSIDE_SOURCE = inside.sources()
BOOT = inside.BOOT
START_TIMEOUT = 60.0
T = TypeVar("T")


_spawner: tuple[int, ThreadPoolExecutor] | None = None
_spawner_lock = threading.Lock()


def spawn(fn: Callable[[], T]) -> T:
    """Run ``fn`` (which starts a process) on one long-lived thread of this process.

    ``bwrap --die-with-parent`` uses PR_SET_PDEATHSIG, which fires when the
    *thread* that forked the child exits; pool threads come and go, so every
    sandbox process is started from this thread, which lives as long as the process.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner[0] != os.getpid():
            _spawner = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="flexmg-spawner"))
        pool = _spawner[1]
    return pool.submit(fn).result()


class WorkerError(RuntimeError):
    """The worker died, broke the protocol or did not answer in time."""


def zygote_argv(python: str, config: dict[str, Any]) -> list[str]:
    """The command line that starts a zygote with ``config``."""
    return [python, "-I", "-S", "-c", BOOT, INSIDE_SOURCE, "zygote", json.dumps(config)]


class Worker(ABC):
    """One warm zygote. Not thread-safe: the pool hands it to one thread at a time."""

    def __init__(self) -> None:
        self.alive = False
        self.info: dict[str, Any] = {}
        self._next_id = 0
        self.cpu: int | None = None  # the CPU its processes are pinned to, if any

    @abstractmethod
    def _send(self, data: bytes) -> None: ...

    @abstractmethod
    def _recv_exact(self, n: int, deadline: float) -> bytes: ...

    @abstractmethod
    def _describe_death(self) -> str:
        """Why the worker is gone (exit code, stderr tail), for error messages."""

    @abstractmethod
    def close(self) -> None: ...

    def _read_frame(self, deadline: float) -> dict[str, Any]:
        (size,) = struct.unpack(">I", self._recv_exact(4, deadline))
        if size > frames.MAX_FRAME:
            raise WorkerError(f"the zygote sent a {size}-byte frame (protocol error)")
        obj = frames.parse_frame_body(self._recv_exact(size, deadline))
        if not isinstance(obj, dict):
            raise WorkerError("the zygote sent a malformed frame")
        return obj

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait for the zygote's hello frame."""
        try:
            hello = self._read_frame(time.monotonic() + timeout)
        except (WorkerError, ValueError, OSError) as e:
            self.alive = False
            raise WorkerError(f"the sandbox did not start: {e}; {self._describe_death()}") from None
        if not hello.get("ready"):
            raise WorkerError(f"the sandbox sent an unexpected hello: {hello!r}")
        self.info = hello
        self.alive = True

    def request(self, job: dict[str, Any], wait: float) -> dict[str, Any]:
        """Send ``job``; return the zygote's reply within ``wait`` seconds."""
        if not self.alive:
            raise WorkerError("the sandbox worker is not running")
        self._next_id += 1
        job = {**job, "id": self._next_id}
        try:
            self._send(frames.dump_frame(job))
            reply = self._read_frame(time.monotonic() + wait)
        except (WorkerError, OSError, ValueError) as e:
            self.alive = False
            raise WorkerError(f"{e}; {self._describe_death()}") from None
        if reply.get("id") != self._next_id:
            self.alive = False
            raise WorkerError("the sandbox answered out of order (protocol error)")
        if reply.get("retire"):  # it did not run the job and has exited: start a fresh one
            self.alive = False
        return reply


class PipeWorker(Worker):
    """A zygote started as a local subprocess (through bwrap or directly)."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> None:
        super().__init__()
        self.argv = argv
        self.proc = spawn(
            lambda: subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,
                close_fds=True,
                pass_fds=pass_fds,
            )
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    def _send(self, data: bytes) -> None:
        frames.write_all(self._in, data)

    def _recv_exact(self, n: int, deadline: float) -> bytes:
        chunks: list[bytes] = []
        while n > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerError("the sandbox did not answer in time")
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out, min(n, 1 << 20))
            if not chunk:
                raise WorkerError("the sandbox process exited")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _describe_death(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "the sandbox process is still running"
        err = b""
        if self.proc.stderr is not None:
            try:
                os.set_blocking(self.proc.stderr.fileno(), False)
                err = self.proc.stderr.read(4096) or b""
            except (OSError, ValueError):
                pass
        tail = err.decode("utf-8", "replace").strip()[-800:]
        return f"sandbox process exit code {code}" + (f", stderr: {tail}" if tail else "")

    def pid(self) -> int:
        return self.proc.pid

    def close(self) -> None:
        self.alive = False
        proc = self.proc
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                pass
