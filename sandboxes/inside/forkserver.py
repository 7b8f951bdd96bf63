"""The fork server: a pristine interpreter that forks fresh runners and judges on request."""

from __future__ import annotations

import os
import select
import signal
import socket
import struct

from .judge import judge_main, judge_server_main
from .procs import (
    _CATCHABLE,
    PR_SET_DUMPABLE,
    WARM_MODULES,
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
