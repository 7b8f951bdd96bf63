"""A small pool of grading worker processes with hard per-call deadlines.

Design: one *zygote* process (``python -c`` with only sympy and math-verify
imported, never flexmg or the caller's ``__main__``) forks workers on request.
Each call takes an idle worker and sends it ``(request_id, content, gold,
cpu_budget, options)``; a reply that does not carry that id (stale or
cross-wired) is an error and the worker is replaced, so a verdict always
belongs to the answer it grades. A worker whose comparison raised anything
answers and exits (library state may be half-updated), and a fresh one
takes its place.

Deadlines count the worker's **CPU time**, so a machine busy with other work
slows a comparison down without failing it:

* the worker's own ``ITIMER_PROF`` stops a comparison that used its CPU
  budget (clean, most cases);
* the pool watches the worker's CPU time (``/proc/<pid>/stat``) and SIGKILLs
  a worker stuck in C code (a huge integer power) once it is past the budget;
* a wall-clock bound of :data:`WALL_FACTOR` times the budget ends any call
  however starved the worker is (and is the only bound where ``/proc`` is
  missing).

A killed worker is replaced in milliseconds. Safe to call from any thread; a
forked copy of the caller starts its own pool. Closed at exit.

Example:
    >>> pool = GraderPool(workers=1)
    >>> pool.grade("\\\\frac{1}{2}", "0.5", timeout=5.0)[:2]
    (1.0, 'correct')
    >>> pool.close()
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from .settings import DEFAULT as DEFAULT_SETTINGS
from .settings import SettingsKey

Verdict = tuple[float, str, str]

WORKER_FILE = Path(__file__).with_name("_worker.py")  # loaded by path: no flexmg import
# The zygote runs: python -c BOOT /path/to/_worker.py CTRL_FD
BOOT = (
    "import sys\n"
    "if sys.path and sys.path[0] == '':\n"
    "    del sys.path[0]  # never import from the caller's working directory\n"
    "import importlib.util\n"
    "spec = importlib.util.spec_from_file_location('_flexmg_math_worker', sys.argv[1])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(mod)\n"
    "mod.zygote_main(int(sys.argv[2]))\n"
)

STARTUP_TIMEOUT_S = 120.0  # first start imports sympy; slow, shared CI machines
WALL_FACTOR = 4.0  # wall-clock bound of a call, in multiples of its CPU budget
_SOFT_FRACTION = 1.0  # the worker's own CPU timer fires at this share of the budget
_CPU_GRACE_S = 0.1  # CPU time past the budget before the pool kills a stuck worker
_POLL_S = 0.02  # how often the pool looks at a busy worker's CPU time
_MARGIN_S = 0.005  # time kept for killing and answering after the hard deadline
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
DEFAULT_OPTIONS = DEFAULT_SETTINGS.key()


@dataclass
class _Worker:
    pid: int
    conn: Connection
    pidfd: int | None = None  # kill through a pidfd where available: immune to pid reuse


class GraderPool:
    """Processes that grade under a deadline. See the module docstring.

    Args:
        workers: number of worker processes (concurrent grading calls).
    """

    def __init__(self, workers: int = 1) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        self.workers = workers
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()  # guards the zygote and the start/close state
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._ctrl: socket.socket | None = None
        self._started = False
        self._closed = False
        self.restarts = 0  # workers replaced after a timeout or crash (for tests/metrics)
        self.calls = 0  # grading requests sent to workers (approximate under threads)
        self._request_ids = itertools.count(1)  # each reply must carry its request's id
        _LIVE_POOLS.add(self)

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the zygote and the workers (done lazily by :meth:`grade`)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this GraderPool was closed; create a new one")
            if self._started:
                return
            self._start_zygote()
            for _ in range(self.workers):
                self._idle.put(self._fork_worker())
            self._started = True

    def _start_zygote(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._zygote = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    BOOT,
                    str(WORKER_FILE),
                    str(child.fileno()),
                ],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,  # a Ctrl-C in the terminal goes to the caller only
            )
        finally:
            child.close()
        ready, _, _ = select.select([parent], [], [], STARTUP_TIMEOUT_S)
        if not ready or parent.recv(1) != b"R":
            parent.close()
            self._zygote.kill()
            self._zygote.wait()
            raise RuntimeError(
                "the math grader's worker process did not start; check that sympy and "
                "math-verify import in this Python (`python -c 'import math_verify'`)"
            )
        self._ctrl = parent

    def _fork_worker(self) -> _Worker:
        """Ask the zygote for a new worker (caller holds ``self._lock``)."""
        for attempt in range(2):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                assert self._ctrl is not None
                socket.send_fds(self._ctrl, [b"F"], [theirs.fileno()])
                data = b""
                while len(data) < 4:
                    chunk = self._ctrl.recv(4 - len(data))
                    if not chunk:
                        raise ConnectionError("zygote closed")
                    data += chunk
                theirs.close()
                (pid,) = struct.unpack("!i", data)
                try:  # the worker is blocked on its socket, so it is alive here
                    pidfd: int | None = os.pidfd_open(pid)
                except (AttributeError, OSError):
                    pidfd = None
                return _Worker(pid=pid, conn=Connection(mine.detach()), pidfd=pidfd)
            except (OSError, ConnectionError, AssertionError):
                theirs.close()
                mine.close()
                if attempt:
                    raise RuntimeError("the math grader's zygote process died twice") from None
                self._stop_zygote()
                self._start_zygote()  # the zygote died: start a fresh one and retry
        raise AssertionError("unreachable")

    def _replace(self, worker: _Worker, kill: bool = True) -> None:
        """Kill ``worker`` (or let it go, if it exits by itself) and add a fresh one."""
        _kill(worker, signal.SIGKILL if kill else None)
        self.restarts += 1
        with self._lock:
            if self._closed:
                return
            self._idle.put(self._fork_worker())

    def _stop_zygote(self) -> None:
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._zygote is not None:
            # The zygote leads its own process group, which holds every worker: one
            # killpg ends them all. It is not yet reaped, so its pgid cannot be reused.
            try:
                os.killpg(self._zygote.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self._zygote.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._zygote = None

    def close(self) -> None:
        """Stop every process of the pool. Idempotent; also runs at exit."""
        if os.getpid() != self._owner_pid:
            return  # a forked copy: the processes belong to the parent
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while True:
                try:
                    _kill(self._idle.get_nowait())
                except queue.Empty:
                    break
            self._stop_zygote()

    # ------------------------------------------------------------------ grading
    def grade(
        self,
        content: str,
        gold: str,
        timeout: float,
        options: SettingsKey = DEFAULT_OPTIONS,
        wall_deadline: float | None = None,
    ) -> Verdict:
        """Grade one boxed answer with ``timeout`` seconds of worker CPU time.

        Returns within ``WALL_FACTOR * timeout`` seconds of wall-clock time (or
        by ``wall_deadline``, a ``time.monotonic()`` instant, if earlier),
        however busy the machine is. Waiting for a free worker (when more
        threads call than there are workers) does not count; grading does.
        ``options`` is :meth:`GradingSettings.key`.
        """
        if os.getpid() != self._owner_pid:
            raise RuntimeError("GraderPool used from a forked child; create a new pool there")
        if not self._started:
            self.start()
        worker = self._idle.get()
        self.calls += 1
        start = time.monotonic()
        deadline = start + timeout * WALL_FACTOR
        if wall_deadline is not None:
            deadline = min(deadline, wall_deadline)
        request = next(self._request_ids)
        try:
            cpu_start = _cpu_seconds(worker.pid)
            worker.conn.send((request, content, gold, timeout * _SOFT_FRACTION, options))
            overrun = self._wait(worker, timeout, deadline, cpu_start)
            if overrun is None:
                answered, score, reason, detail, alive = worker.conn.recv()
            else:
                self._replace(worker)
                return 0.0, "timeout", overrun
        except (EOFError, OSError) as exc:
            self._replace(worker)
            return 0.0, "error", f"grading worker died ({type(exc).__name__})"
        except (ValueError, TypeError):  # a reply of the wrong shape: never trust that worker
            self._replace(worker)
            return 0.0, "error", "grading worker sent a malformed reply; worker replaced"
        if answered != request:  # a stale or cross-wired reply must never grade this answer
            self._replace(worker)
            why = f"grading worker answered request {answered!r}, not {request}; worker replaced"
            return 0.0, "error", why
        if alive:
            self._idle.put(worker)
        else:  # the worker exits by itself after an interrupted computation
            self._replace(worker, kill=False)
        return float(score), str(reason), str(detail)

    def _wait(
        self, worker: _Worker, budget: float, deadline: float, cpu_start: float | None
    ) -> str | None:
        """Wait for the worker's reply: None when it came, else why the worker must die."""
        while True:
            left = deadline - time.monotonic() - _MARGIN_S
            if worker.conn.poll(max(0.0, min(left, _POLL_S))):
                return None
            now = _cpu_seconds(worker.pid)
            used = None if now is None or cpu_start is None else now - cpu_start
            if used is not None and used > budget + _CPU_GRACE_S:
                return f"grading used over {budget:.3f}s of CPU time; worker killed"
            if left <= 0:
                spent = "unknown" if used is None else f"{used:.2f}s"
                return (
                    f"no verdict by the wall-clock bound (CPU time used: {spent} of "
                    f"{budget:.3f}s; the machine is overloaded); worker killed"
                )


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process, from ``/proc`` (None where unavailable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S
    except (OSError, IndexError, ValueError):
        return None


def _kill(worker: _Worker, sig: int | None = signal.SIGKILL) -> None:
    """Send ``sig`` to the worker (None: just let go) and release its handles."""
    try:
        if sig is not None and worker.pidfd is not None:
            signal.pidfd_send_signal(worker.pidfd, sig)
        elif sig is not None:
            os.kill(worker.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    if worker.pidfd is not None:
        os.close(worker.pidfd)
        worker.pidfd = None
    worker.conn.close()


_LIVE_POOLS: weakref.WeakSet[GraderPool] = weakref.WeakSet()


def _forget_inherited_pools() -> None:
    """In a forked child: drop the parent's sockets (so the parent's zygote still
    sees EOF when the parent dies) without touching the parent's processes."""
    for pool in list(_LIVE_POOLS):
        if pool._ctrl is not None:
            pool._ctrl.close()
            pool._ctrl = None
        idle = list(pool._idle.queue)  # no locking: the child has a single thread
        pool._idle.queue.clear()
        for worker in idle:
            if worker.pidfd is not None:
                os.close(worker.pidfd)
            worker.conn.close()
        pool._zygote = None
        pool._closed = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_pools)


@atexit.register
def _close_all() -> None:
    for pool in list(_LIVE_POOLS):
        pool.close()
