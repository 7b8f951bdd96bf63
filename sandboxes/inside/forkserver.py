"""The fork server, both ends: the pristine interpreter that forks fresh runners and judges
on request (:func:`forkserver_main`), and the zygote's link to it (:class:`ForkServerLink`):
starting it, sending requests, reading its records, and the pidfds that prove a kept child
is the process the fork server forked, not one that reused its pid.

The wire format, on a unix socket: a request is ``"role:nfds,role:nfds"`` with the
descriptors attached; each record back is ``struct ">cii"`` (kind, pid, status): ``S``
spawned (status 1: its pidfd is attached), ``T`` made itself traced (killed), ``X`` exited.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct

from .cleanup import _pidfd
from .judge import judge_main, judge_server_main
from .procs import (
    _CATCHABLE,
    PR_SET_DUMPABLE,
    WARM_MODULES,
    _exec_python,
    _new_group,
    _place_fds,
    _prctl,
    _rebind_stdio,
    _reset_signals,
    _set_name,
    _wait_kind,
    record_base_limits,
)
from .runner import runner_main


def forkserver_main(config: dict) -> None:
    """fd 3: a unix socket from the zygote; each message (role, fds) -> one fresh child.

    The fork server blocks every catchable signal but SIGCHLD (a run can send it
    any); each child unblocks them, with the default dispositions. A run can still SIGKILL or SIGSTOP it: the
    zygote resumes a stopped fork server and replaces a dead one between runs.
    """
    _prctl(PR_SET_DUMPABLE, 0)
    _set_name("forkserver")
    # A run can send the fork server any signal (same uid): they are all blocked but
    # SIGCHLD (blocked, not ignored: a child then needs one call to undo it, not one
    # per signal, and its pending set starts empty).
    _reset_signals()
    signal.pthread_sigmask(signal.SIG_BLOCK, set(_CATCHABLE) - {signal.SIGCHLD})
    record_base_limits()
    sock = socket.socket(fileno=3)
    os.chdir("/")
    import fcntl  # noqa: F401 - imported once here, so children start faster
    import gc
    import resource  # noqa: F401

    # Set up once what every child needs: they inherit it through fork. The
    # text streams wrap fds 0-2 (a child's own pipes once it has placed them);
    # the fork server never writes to them, so their buffers stay empty.
    _rebind_stdio()
    os.environ.clear()
    os.environ.update(config.get("env") or {})
    for name in WARM_MODULES:
        try:
            __import__(name)
        except ImportError:
            pass

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    gc.collect()
    gc.freeze()
    while True:
        for fd, _ in poller.poll():
            if fd == wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            else:
                _forkserver_spawn(sock, config)
        records = []
        while True:  # report every exit, so the zygote learns statuses of our children
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            kind = _wait_kind(pid, status)
            if kind is not None:
                records.append(struct.pack(">cii", kind, pid, status))
        if records:
            try:
                sock.sendall(b"".join(records))
            except OSError:
                os._exit(0)


def _forkserver_spawn(sock: socket.socket, config: dict) -> None:
    """One request "role:nfds,role:nfds" with fds: fork one child per role."""
    try:
        msg, fds, _, _ = socket.recv_fds(sock, 256, 64)
    except OSError:
        os._exit(0)
    if not msg:
        os._exit(0)
    records, at = [], 0
    pidfds: list[int] = []
    for item in msg.decode().split(","):
        role, n = item.split(":")
        mine = fds[at : at + int(n)]
        at += int(n)
        child = os.fork()
        if child == 0:
            try:
                signal.set_wakeup_fd(-1)
                for fd in pidfds:  # its elder siblings'
                    os.close(fd)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                _set_name(role)
                sock.close()
                _new_group(role, config)
                _place_fds(mine)
                {"runner": runner_main, "judge-server": judge_server_main}.get(role, judge_main)(
                    config
                )
            finally:
                os._exit(127)
        try:  # taken before any run can reach the child: the zygote's proof of identity
            pidfds.append(os.pidfd_open(child))
            records.append(struct.pack(">cii", b"S", child, 1))
        except (AttributeError, OSError):
            records.append(struct.pack(">cii", b"S", child, 0))
    for fd in fds:
        os.close(fd)
    try:
        if pidfds:
            socket.send_fds(sock, [b"".join(records)], pidfds)
        else:
            sock.sendall(b"".join(records))
    except OSError:
        os._exit(0)
    finally:
        for fd in pidfds:
            os.close(fd)


class ForkServerLink:
    """The zygote's end of the fork server (one per zygote; replaced processes, same link).

    ``exited`` and ``traced`` are the zygote's own records (it reaps its own
    children into them too); :meth:`pump` adds what the fork server reports of
    its children. ``pidfds`` maps each child that may be kept between runs (the
    idle runner and judge, the judge server) to the pidfd the fork server took
    before any run could reach it (:meth:`owns`).
    """

    def __init__(self, config: dict, exited: dict[int, int], traced: set[int]) -> None:
        self.config = config
        self.exited, self.traced = exited, traced
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.fds: list[int] = []  # pidfds received, not yet matched with their records
        self.pidfds: dict[int, int] = {}
        self.starts = 0
        self.spawned: list[int] = []
        probe = _pidfd(os.getpid())
        self.pidfd_support = probe is not None
        _close(probe)

    def start(self) -> None:
        """Start a fork server (a fresh interpreter), dropping the link to the old one."""
        if self.sock is not None:
            self.sock.close()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                _exec_python(
                    "forkserver",
                    self.config,
                    [os.open(os.devnull, os.O_RDWR), 1, 2, child.fileno()],
                )
            finally:
                os._exit(127)
        child.close()
        self.starts += 1
        parent.settimeout(10.0)
        self.pid, self.sock = pid, parent
        self.buf = bytearray()

    def kill(self) -> None:
        """SIGKILL the fork server (its exit is reaped by the zygote)."""
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def request(self, plan: list[tuple[str, list[int]]], restart: bool = True) -> None:
        """Ask the fork server for fresh children, one per (role, fds).

        Their pids arrive later (:meth:`spawned_pids`), so the zygote goes on
        while the fork server forks. ``restart``: replace a broken fork server
        and retry once (never while untrusted code runs: a freshly exec-ed
        interpreter is dumpable until it makes itself not).
        """
        msg = ",".join(f"{role}:{len(fds)}" for role, fds in plan).encode()
        all_fds = [fd for _, fds in plan for fd in fds]
        for attempt in range(2):
            try:
                self.sock.settimeout(10.0)  # type: ignore[union-attr]  # None: caller's error
                socket.send_fds(self.sock, [msg], all_fds)  # type: ignore[arg-type]
                self.spawned = []
                return
            except OSError:
                if attempt or not restart:
                    raise
                self.kill()
                self.start()

    def spawned_pids(self, n: int) -> list[int]:
        """Block until the fork server has reported the ``n`` children of the request."""
        while len(self.spawned) < n:
            self.pump(block=True)
        return list(self.spawned[:n])

    def pump(self, block: bool = False) -> None:
        """Read the fork server's records: spawned pids and exit statuses."""
        if self.sock is None:
            return
        try:
            if not block and not select.select([self.sock], [], [], 0)[0]:
                return
            chunk, fds, _, _ = socket.recv_fds(self.sock, 4096, 16)
            for fd in fds:  # never into a process the zygote starts
                os.set_inheritable(fd, False)
            self.fds.extend(fds)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            if block:
                raise OSError("the fork server closed its socket")
            return
        self.buf.extend(chunk)
        while len(self.buf) >= 9:
            kind, pid, status = struct.unpack(">cii", bytes(self.buf[:9]))
            del self.buf[:9]
            if kind == b"S":
                self.exited.pop(pid, None)  # an earlier exit record was for an older process
                self.traced.discard(pid)
                self.spawned.append(pid)
                _close(self.pidfds.pop(pid, None))
                if status == 1 and self.fds:  # the fork server sent its pidfd along
                    self.pidfds[pid] = self.fds.pop(0)
            elif kind == b"T":
                self.traced.add(pid)
            else:
                self.exited[pid] = status

    def owns(self, pid: int) -> bool:
        """``pid`` is still the fork server's child the zygote was told about (its pidfd is
        not readable): a process that took over the pid of a dead one is not.

        Without pidfds (kernels before 5.3) the other checks stand alone.
        """
        fd = self.pidfds.get(pid)
        if fd is None:
            return not self.pidfd_support
        try:
            return not select.select([fd], [], [], 0)[0]
        except (OSError, ValueError):
            return False

    def prune(self, keep: set[int]) -> None:
        """Close the pidfds of processes not in ``keep`` (no longer kept between runs)."""
        for pid in [p for p in self.pidfds if p not in keep]:
            _close(self.pidfds.pop(pid))


def _close(fd: int | None) -> None:
    if fd is None:
        return
    try:
        os.close(fd)
    except OSError:
        pass
